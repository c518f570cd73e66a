"""Follow-up questions made standalone before retrieval (docs/pipeline.md, A0_PreProcessing).

"and credentials?" after "How do I enable CORS?" searches for nothing useful on its own. A short
question that opens with a connective ("and", "what about", ...) or leans on a pronoun ("does it
...") is a follow-up; the deterministic rewrite prefixes it with the key terms of the conversation's
topic: the content words of the last user turn that was not itself a follow-up, and of the
follow-ups since ("CORS enable: credentials?"). With an LLM (``a0`` in ``pipeline.llm_stages``) the
model rewrites the question instead, and the deterministic rewrite is its fallback.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragstream.config import PipelineLimits
from ragstream.pipeline.super_prompt import ConversationPair
from ragstream.text_terms import STOPWORDS, words

OPENERS: tuple[tuple[str, ...], ...] = tuple(tuple(opener.split()) for opener in (
    "and what about", "and how about", "what about", "how about", "and", "or", "but", "also", "then", "so",
    "what if", "same for", "und", "oder", "und was ist mit", "was ist mit",
))
"""Word sequences that open a follow-up, longest first where one is a prefix of another."""

ANAPHORA = frozenset({"it", "its", "this", "that", "these", "those", "they", "them", "their", "there",
                      "same", "such", "he", "she", "his", "her", "es", "das", "dies", "diese", "dieser"})
"""Words that point back to an earlier turn."""


KEPT_PREFIX_CHARS = 5
"""A term of the question counts as kept in a rewrite when its first letters (this many) are there
("credentials" kept as "credential")."""

def opener_length(tokens: Sequence[str]) -> int:
    """How many leading words of ``tokens`` form a follow-up opener (0 when none)."""
    folded = [token.casefold() for token in tokens]
    for opener in sorted(OPENERS, key=len, reverse=True):
        if tuple(folded[: len(opener)]) == opener:
            return len(opener)
    return 0


def is_followup(text: str, max_words: int, fragment_words: int) -> bool:
    """True for a short question (at most ``max_words`` words) that opens with a connective or
    points back with a pronoun, and for a fragment of at most ``fragment_words`` words."""
    tokens = words(text)
    if not tokens or len(tokens) > max_words:
        return False
    return (len(tokens) <= fragment_words or opener_length(tokens) > 0
            or any(token.casefold() in ANAPHORA for token in tokens))


def key_terms(text: str) -> list[str]:
    """The content words of ``text`` in order, once each (case-insensitively), stopwords and
    follow-up openers left out."""
    tokens = words(text)
    tokens = tokens[opener_length(tokens):]
    seen: set[str] = set()
    terms: list[str] = []
    for token in tokens:
        folded = token.casefold()
        if folded in STOPWORDS or folded in ANAPHORA or folded in seen or (len(token) < 2 and not token.isdigit()):
            continue
        seen.add(folded)
        terms.append(token)
    return terms


def topic_terms(pairs: Sequence[ConversationPair], limits: PipelineLimits) -> list[str]:
    """The topic of the conversation so far: key terms of the last user turn that was not a
    follow-up and of the follow-ups after it, oldest first, at most ``followup_topic_terms``."""
    turns: list[str] = []
    for pair in reversed(pairs):
        turns.insert(0, pair.user)
        if not is_followup(pair.user, limits.followup_max_words, limits.followup_fragment_words):
            break
    seen: set[str] = set()
    terms: list[str] = []
    for turn in turns:
        for term in key_terms(turn):
            if term.casefold() not in seen:
                seen.add(term.casefold())
                terms.append(term)
    return terms[: limits.followup_topic_terms]


def deterministic_rewrite(question: str, pairs: Sequence[ConversationPair],
                          limits: PipelineLimits) -> tuple[str, list[str]] | None:
    """``(standalone question, carried terms)`` for a follow-up, ``None`` when ``question`` stands
    alone (no earlier turn, not a follow-up, or nothing to carry)."""
    if not pairs or not is_followup(question, limits.followup_max_words, limits.followup_fragment_words):
        return None
    own = {term.casefold() for term in key_terms(question)}
    carried = [term for term in topic_terms(pairs, limits) if term.casefold() not in own]
    if not carried:
        return None
    tokens = words(question)
    rest = question.strip()
    skip = opener_length(tokens)
    if skip:  # drop the opener ("and", "what about") from the question as written
        match = re.match(r"\W*" + r"\W+".join(re.escape(token) for token in tokens[:skip]) + r"\W*", rest)
        rest = rest[match.end():] if match else rest
    rest = rest.strip() or question.strip()
    return f"{' '.join(carried)}: {rest}", carried


def dropped_terms(question: str, rewrite: str) -> list[str]:
    """Key terms of ``question`` that ``rewrite`` lost (an LLM rewrite must keep what was asked)."""
    folded = rewrite.casefold()
    return [term for term in key_terms(question) if term.casefold()[:KEPT_PREFIX_CHARS] not in folded]
