"""Build the normalized query string and split it into at most N0 pieces (docs/pipeline.md)."""

from __future__ import annotations

import re

from ragstream.pipeline.super_prompt import SuperPrompt

QUERY_FIELDS = ("task", "context", "purpose")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def normalized_query(body: dict[str, str]) -> str:
    """task, context and purpose joined, whitespace collapsed."""
    return " ".join(" ".join(body.get(name, "") for name in QUERY_FIELDS).split())


def search_body(sp: SuperPrompt) -> dict[str, str]:
    """The body the search stages read: the task replaced by A0's standalone rewrite of a follow-up."""
    return {**sp.body, "task": sp.rewritten_query} if sp.rewritten_query else sp.body


def split_query(query: str, max_pieces: int, max_chars: int) -> list[str]:
    """Contiguous sentence groups of about equal word count, at most ``max_pieces``, each at most
    ``max_chars`` long (cut at a word boundary); duplicates removed, order kept."""
    sentences = [s for s in _SENTENCE_END.split(query) if s.strip()]
    if not sentences:
        return []
    groups: list[list[str]] = [[] for _ in range(min(max_pieces, len(sentences)))]
    total = sum(len(s.split()) for s in sentences)
    seen = 0
    for sentence in sentences:
        group = min(len(groups) - 1, seen * len(groups) // total) if total else 0
        groups[group].append(sentence)
        seen += len(sentence.split())
    pieces = [_cut(" ".join(group), max_chars) for group in groups if group]
    return list(dict.fromkeys(pieces))


def _cut(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    return cut.rsplit(" ", 1)[0] if " " in cut else cut


def query_pieces(query: str, max_pieces: int, max_chars: int, min_words: int) -> list[str]:
    """What Retrieval searches with: the whole query, plus (when it has at least ``min_words`` words,
    several sentences, and ``max_pieces`` allows) up to ``max_pieces - 1`` contiguous sentence groups.

    The whole query keeps the ranking of a plain search; the groups let one part of a long prompt
    find passages the rest of it would drown out.
    """
    whole = split_query(query, 1, max_chars)
    if max_pieces <= 1 or not whole or len(query.split()) < min_words:
        return whole
    groups = [piece for piece in split_query(query, max_pieces - 1, max_chars) if piece not in whole]
    return whole + groups if len(groups) > 1 else whole
