"""The answer without an LLM: the context sentences closest to the question, each cited ``[n]``.

Sentences are read as a person reads them (:func:`readable_sentences`): one per paragraph or list
item, link text kept without its URL, inline code kept, list markers and emphasis dropped; a
reference line for an included file is not quoted. The same sentence is never quoted twice
(overlapping chunks repeat text). A quoted sentence that introduces a code example (it ends with
``:`` right before a fenced block) keeps that example, quoted verbatim after it, so "how do I ..."
answers show the code.

Quotes are sentences (:mod:`ragstream.answer.prose_check`): with ``prose`` given, headings that slipped
through, navigation lists, link-only list items and table-of-contents fragments are not quoted; only
when no attachment holds a sentence that passes does the answer fall back to the unchecked ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ragstream.answer.markers import split_markers
from ragstream.answer.models import DocumentChunk
from ragstream.answer.prose_check import is_prose
from ragstream.config.prose import ProseConfig
from ragstream.documents.markdown_dialects import INCLUDE_LABEL
from ragstream.documents.prose import CODE_BLOCK, readable_units, sentence_key
from ragstream.providers.embedders.base import Embedder, scoring_vectors

_NOT_QUOTED = (INCLUDE_LABEL,)
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:!?])(?=\s|$)")


SentenceScore = Callable[[Sequence[tuple[int, "Quote"]]], np.ndarray]
"""Scores of the quotable sentences (each with its chunk's 1-based number), higher is better."""


@dataclass(frozen=True)
class Quote:
    """A sentence of a chunk, and the code example it introduces (if any)."""

    sentence: str
    example: str | None = None


def quotes(text: str, min_chars: int, max_example_chars: int, prose: ProseConfig | None = None) -> list[Quote]:
    """The chunk's prose sentences; one ending with ``:`` before a fenced block (at most
    ``max_example_chars`` long) keeps it as its example. With ``prose``, only the sentences that pass
    its prose check."""
    found: list[Quote] = []
    position = 0
    for block in [*CODE_BLOCK.finditer(text), None]:
        prose_end = block.start() if block else len(text)
        cleaned = [_without_markers(sentence) for unit in readable_units(text[position:prose_end], _NOT_QUOTED)
                   for sentence in unit.sentences if prose is None or is_prose(sentence, unit, prose)]
        kept = [Quote(s) for s in cleaned if len(s) >= min_chars]
        if block and kept and kept[-1].sentence.endswith(":") and _closed(block.group(0)) \
                and len(block.group(0)) <= max_example_chars:
            kept[-1] = Quote(kept[-1].sentence, block.group(0).strip())
        found.extend(kept)
        position = block.end() if block else len(text)
    return found


def extractive_answer(query_vectors: np.ndarray | None, chunks: Sequence[DocumentChunk], embedder: Embedder | None, *,
                      label: str, max_sentences: int, min_chars: int, max_example_chars: int,
                      prose: ProseConfig | None = None, score: SentenceScore | None = None) -> str:
    """``label`` then the ``max_sentences`` sentences closest to the question, best first.

    A sentence's score is ``score``'s (the learned sentence scorer, :mod:`ragstream.answer.sentence_scorer`),
    else its best cosine to the question's query vectors (one per query piece).
    Without vectors (the embedder is unavailable) the sentences keep the attachments' order, so the
    best-ranked attachment's leading sentences come first. Each sentence carries the marker of its
    chunk's place in ``chunks`` (1-based), followed by the code example it introduces. Brackets the
    citation scanner would read as markers are removed from quotes, so no quote can carry a marker
    that is not its own (link text, ``x[0]`` and code stay). A sentence found again in a later chunk
    keeps only its first (best-ranked) occurrence. With ``prose``, only sentences passing its check are
    quoted, unless no attachment holds one.
    """
    candidates = candidate_quotes(chunks, min_chars, max_example_chars, prose)
    if score is not None:
        scores = score(candidates)
    elif query_vectors is not None and embedder is not None:
        vectors = np.atleast_2d(query_vectors)
        scores = (scoring_vectors(embedder, [quote.sentence for _, quote in candidates]) @ vectors.T).max(axis=1)
    else:
        scores = -np.arange(len(candidates), dtype=np.float64)
    best = np.argsort(-scores, kind="stable")[:max_sentences]
    lines: list[str] = []
    for i in best:
        number, quote = candidates[i]
        lines.append(f"- {quote.sentence} [{number}]")
        if quote.example:
            lines.extend(["", quote.example])
    return "\n".join([label, "", *lines]).rstrip()


def candidate_quotes(chunks: Sequence[DocumentChunk], min_chars: int, max_example_chars: int,
                     prose: ProseConfig | None = None) -> list[tuple[int, Quote]]:
    """What an extractive answer may quote, each with its chunk's 1-based number: the sentences passing the
    prose check (all sentences when none does), else each chunk's whole text."""
    candidates = _candidates(chunks, min_chars, max_example_chars, prose)
    if not candidates and prose is not None:
        candidates = _candidates(chunks, min_chars, max_example_chars, None)
    if not candidates:
        candidates = [(number, Quote(_without_markers(chunk.text))) for number, chunk in enumerate(chunks, start=1)]
    return candidates


def _candidates(chunks: Sequence[DocumentChunk], min_chars: int, max_example_chars: int,
                prose: ProseConfig | None) -> list[tuple[int, Quote]]:
    """Every chunk's quotes with its 1-based number, each sentence once."""
    return _unique([(number, quote) for number, chunk in enumerate(chunks, start=1)
                    for quote in quotes(chunk.text, min_chars, max_example_chars, prose)])


def _without_markers(sentence: str) -> str:
    """``sentence`` without the brackets a citation scanner reads as markers, whitespace collapsed."""
    pieces = split_markers(sentence)
    text = " ".join("".join(piece.text for piece in pieces if piece.kind == "text").split())
    if any(piece.kind == "marker" for piece in pieces):
        text = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text)  # "guide [3]." -> "guide."
    return text


def _unique(candidates: list[tuple[int, Quote]]) -> list[tuple[int, Quote]]:
    """The first occurrence of every sentence (compared without case, spacing, end punctuation or a
    leading admonition label)."""
    seen: set[str] = set()
    kept: list[tuple[int, Quote]] = []
    for number, quote in candidates:
        key = sentence_key(quote.sentence)
        if key and key not in seen:
            seen.add(key)
            kept.append((number, quote))
    return kept


def _closed(block: str) -> bool:
    """True for a complete fenced block (a chunk may end inside one)."""
    fence = block[:3]
    return len(block) > 6 and block.rstrip().endswith(fence)
