"""An answer's sentences: where each stands in the text, what it says, which markers it carries.

Read as :func:`~ragstream.documents.prose.readable_sentences` reads documents: fenced code, headings,
table rows, rules and source lists (a line that is only a short label like "Sources:", or opens with
a marker like "[1] guide.md") are not sentences; each paragraph and list item is read on its own (a list
marker is not part of its sentence), split at ``.``, ``!`` or ``?`` before a space (not after
"e.g.", "i.e.", "vs.", "cf."). A citation marker opening a sentence belongs to the one before it
(``... x. [2] Next``), as in :func:`~ragstream.answer.citations.uncited_sentences`. A short lead-in
ending in a colon ("For example:") and a fragment without a letter (``[1``) are no sentences. Offsets are
kept, so a sentence can be marked in the answer text as written.

While an answer streams in, a sentence is complete once the next one has begun with text (a marker
arriving after its full stop still belongs to it); the last sentence completes when the answer ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragstream.answer.markers import split_markers
from ragstream.answer.sentence_support.signals import content_words
from ragstream.documents.prose import CODE_BLOCK, READABLE_SENTENCE_END, readable_sentences

_SKIPPED_LINE = re.compile(r"^\s*(?:#|\||(?:[-*_]\s*){3,}$)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:!?])(?=\s|$)")
_LEADING_SPACE = re.compile(r"\s*")
_HAS_LETTER = re.compile(r"[^\W\d_]")
LEAD_IN_MAX_WORDS = 2
"""A sentence ending in a colon with at most this many content words ("For example:", "Here's how:") leads
in to what follows; it is no sentence."""
_LABEL_LINE = re.compile(r"(?:\*\*)?[\w ]{1,30}:(?:\*\*)?", re.UNICODE)
"""A line that is only a short label ending in a colon ("Sources:", "**Answer:**"): no sentence."""


@dataclass(frozen=True)
class AnswerSentence:
    """One sentence of an answer."""

    index: int
    start: int
    end: int
    raw: str
    """``text[start:end]`` as written, markers included."""
    text: str
    """As read: markers, emphasis and link targets removed, inline code kept."""
    markers: tuple[str, ...]
    """The contents of its citation markers, in order."""


def split_answer(text: str) -> list[AnswerSentence]:
    """The sentences of ``text`` in order (a sentence with nothing but markers is none)."""
    ranges: list[tuple[int, int]] = []
    for start, end in _units(text):
        ranges.extend(_split_unit(text, start, end))
    ranges = _markers_to_previous(text, ranges)
    sentences: list[AnswerSentence] = []
    for start, end in ranges:
        raw = text[start:end]
        pieces = split_markers(raw)
        markers = tuple(piece.content for piece in pieces if piece.kind == "marker")
        prose = " ".join("".join(piece.text for piece in pieces if piece.kind == "text").split())
        prose = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", prose)  # "guide [3]." -> "guide."
        readable = " ".join(readable_sentences(prose)) or prose
        if _HAS_LETTER.search(readable) and not _lead_in(readable.strip()):
            sentences.append(AnswerSentence(len(sentences), start, end, raw, readable.strip(), markers))
    return sentences


def complete_sentences(partial: str) -> list[AnswerSentence]:
    """The sentences of an answer still streaming in that nothing more can change: all but the last (and
    all but the last two when the last opens with a bracket, which may yet close as the previous one's marker)."""
    sentences = split_answer(partial)
    return sentences[:-2] if sentences and sentences[-1].raw.startswith("[") else sentences[:-1]


def _units(text: str) -> list[tuple[int, int]]:
    """(start, end) of each paragraph and list item outside fenced code; a list marker is left out."""
    code = [match.span() for match in CODE_BLOCK.finditer(text)]
    units: list[tuple[int, int]] = []
    current: list[int] | None = None  # [start, end] of the unit being read
    position = 0
    for line in text.split("\n"):
        line_start, line_end = position, position + len(line)
        position = line_end + 1
        in_code = any(start < line_end and line_start < end for start, end in code) or \
            any(start <= line_start < end for start, end in code)
        if in_code or not line.strip() or _SKIPPED_LINE.match(line):
            current = None
            continue
        item = _LIST_ITEM.match(line)
        begin = line_start + (item.end() if item else _LEADING_SPACE.match(line).end())  # type: ignore[union-attr]
        if _is_reference(text[begin:line_end]):
            current = None
            continue
        if item or current is None:
            current = [begin, line_end]
            units.append((begin, line_end))
        else:
            current[1] = line_end
            units[-1] = (current[0], line_end)
    return [(start, len(text[:end].rstrip())) for start, end in units if text[start:end].strip()]


def _lead_in(sentence: str) -> bool:
    return sentence.endswith(":") and len(content_words(sentence)) <= LEAD_IN_MAX_WORDS


def _is_reference(line: str) -> bool:
    """A line that only lists sources: a label ("Sources:", "References:") or one opening with a marker
    ("[1] guide.md > Timeouts")."""
    if _LABEL_LINE.fullmatch(line.strip()):
        return True
    pieces = split_markers(line)
    return bool(pieces) and pieces[0].kind == "marker"


def _split_unit(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of the sentences of one unit."""
    ranges: list[tuple[int, int]] = []
    begin = start
    for match in READABLE_SENTENCE_END.finditer(text, start, end):
        ranges.append((begin, match.start()))
        begin = match.end()
    if begin < end:
        ranges.append((begin, end))
    return [(a, b) for a, b in ranges if b > a]


def _markers_to_previous(text: str, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Move the markers opening a sentence to the end of the sentence before it (same unit or not)."""
    moved: list[tuple[int, int]] = []
    for start, end in ranges:
        lead = _leading_markers(text[start:end])
        if lead and moved:
            previous_start, _ = moved[-1]
            moved[-1] = (previous_start, start + lead)
            start += lead + len(_LEADING_SPACE.match(text, start + lead, end).group(0))  # type: ignore[union-attr]
        if start < end:
            moved.append((start, end))
    return moved


def _leading_markers(raw: str) -> int:
    """Characters of the markers (and the spaces between them) that open ``raw``; 0 when it opens with text."""
    length = 0
    for piece in split_markers(raw):
        if piece.kind == "marker":
            length += len(piece.text)
        elif not piece.text.strip():
            length += len(piece.text)
        else:
            stripped = len(piece.text) - len(piece.text.lstrip())
            if piece.text.lstrip()[:1] in ".,;:!?" and length:  # "[1]. Next": the stop is the previous sentence's
                return length + stripped + 1
            return length
    return length
