"""Does an LLM answer only restate the question?

Small models often "answer" a statement by repeating it and citing ``[1]``: for the claim "The
HSV-2 infection is typically asymptomatic." the packaged Qwen wrote "The HSV-2 infection is
asymptomatic." (a third of its answers to SciFact claims 101-200 did so). Such an answer says
nothing the question did not, yet reads as if the source confirmed it. A sentence restates the
question when at least ``min_share`` of its content words (stopwords, citation markers and code
left out) are words of the question; an answer restates it when every sentence does. A question
word counts when the answer's word equals it or shares its first
:data:`~ragstream.pipeline.followup.KEPT_PREFIX_CHARS` letters ("infection"/"infections").
"""

from __future__ import annotations

from ragstream.answer.markers import split_markers
from ragstream.documents.prose import CODE_BLOCK, prose_sentences
from ragstream.pipeline.followup import KEPT_PREFIX_CHARS, key_terms


def _folded_terms(text: str) -> set[str]:
    return {term.casefold() for term in key_terms(text)}


def _from_question(term: str, question: set[str], prefixes: set[str]) -> bool:
    return term in question or (len(term) >= KEPT_PREFIX_CHARS and term[:KEPT_PREFIX_CHARS] in prefixes)


def _prose(text: str, *, whole: bool = True) -> str:
    """``text`` without code blocks and citation markers (``whole=False``: and without a bracket still open at
    its end, which may yet become a marker)."""
    return "".join(piece.text for piece in split_markers(CODE_BLOCK.sub(" ", text), whole=whole) if piece.kind == "text")


def restates_question(answer: str, question: str, min_share: float) -> bool:
    """True when every sentence of ``answer`` takes at least ``min_share`` of its content words from
    ``question`` (an answer with no content word restates nothing and returns False)."""
    return _restates(_prose(answer), question, min_share)


def _restates(prose: str, question: str, min_share: float) -> bool:
    asked = _folded_terms(question)
    prefixes = {term[:KEPT_PREFIX_CHARS] for term in asked if len(term) >= KEPT_PREFIX_CHARS}
    shares = []
    for sentence in prose_sentences(prose):
        terms = _folded_terms(sentence)
        if terms:
            shares.append(sum(_from_question(term, asked, prefixes) for term in terms) / len(terms))
    return bool(shares) and min(shares) >= min_share


def may_still_restate(partial: str, question: str, min_share: float) -> bool:
    """While an answer streams in: True as long as what has arrived, the unfinished sentence included,
    restates the question (so it cannot be shown yet); False as soon as it says something more."""
    prose = _prose(partial, whole=False)
    return _restates(prose, question, min_share) or not _folded_terms(prose)
