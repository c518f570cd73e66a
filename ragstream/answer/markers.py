"""Find bracketed citation markers in text that may arrive in pieces (a token stream).

A marker is ``[...]`` on one line, at most ``max_chars`` inside, holding a letter or digit,
outside fenced code blocks and inline code spans, and not the text of a Markdown link
``[text](url)``. Code-ish brackets are not markers either: a ``[`` directly after a letter
or digit unless it holds attachment numbers (``timeout[2]`` cites, ``x[0]`` and ``list[int]`` do not), a
``[`` after ``_``, or a bracket holding a slice (``[3:5]``, ``[1:2, 4:]``, ``hl[18:19,26:27]``).
Text that may still become a marker (an open ``[``, or a closed non-numeric one
whose next character decides whether it is a link) is held back until it is decided.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_FENCE = re.compile(r"^\s*(```|~~~)")
_HAS_WORD = re.compile(r"[^\W_]")
_NUMBER_PART = re.compile(r"\s*(?:(?:source|passage|chunk|context|doc|s)\s*#?\s*)?(\d+)\s*", re.IGNORECASE)
_PART_SEPARATOR = re.compile(r"[,;]")
_INDEX_PART = re.compile(r"\s*-?\d*\s*(?::\s*-?\d*\s*){0,2}")  # 3, 3:5, ::2, -1:
LINK_OPENER = "("


@dataclass(frozen=True)
class Piece:
    """Released text: plain ``text``, or a ``marker`` whose ``text`` is the whole ``[...]``."""

    kind: Literal["text", "marker"]
    text: str

    @property
    def content(self) -> str:
        """A marker's text without its brackets."""
        return self.text[1:-1]


def marker_numbers(content: str) -> list[int] | None:
    """``[1]``, ``[1, 3]``, ``[Source 2]`` -> the numbers; None when the marker is not numbered."""
    numbers = []
    for part in _PART_SEPARATOR.split(content):
        match = _NUMBER_PART.fullmatch(part)
        if match is None:
            return None
        numbers.append(int(match.group(1)))
    return numbers


def is_slice(content: str) -> bool:
    """``3:5``, ``18:19,26:27``, ``::2``: the inside of an index bracket, never a citation."""
    return ":" in content and all(_INDEX_PART.fullmatch(part) for part in content.split(","))


ANY_MARKER_CHARS = 1_000_000
"""A marker length no bracket reaches: with it a scanner reads every bracket that could be a marker."""


def split_markers(text: str, *, whole: bool = True) -> list[Piece]:
    """``text`` as text and marker pieces, markers of any length; ``whole=False`` keeps back a tail that
    may still become a marker (an open bracket), as while the text is still arriving."""
    scanner = MarkerScanner(ANY_MARKER_CHARS)
    return scanner.feed(text) + (scanner.finish() if whole else [])


class MarkerScanner:
    """Feed text deltas, get back released pieces in order; :meth:`finish` releases the rest."""

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._pending = ""
        self._line = ""
        self._in_fence = False
        self._in_inline = False

    def feed(self, delta: str) -> list[Piece]:
        """Pieces decided by ``delta``; undecided text stays pending."""
        return self._scan(self._pending + delta, final=False)

    def finish(self) -> list[Piece]:
        """Every pending piece (the stream ended: nothing more can complete a marker)."""
        return self._scan(self._pending, final=True)

    def _scan(self, buf: str, *, final: bool) -> list[Piece]:
        pieces: list[Piece] = []
        start = i = 0
        self._pending = ""
        while i < len(buf):
            char = buf[i]
            previous = self._line[-1:]
            if char == "[" and not (self._in_fence or self._in_inline or previous == "_"):
                end, hold = self._marker_end(buf, i, final, numbered_only=previous.isalnum())
                if hold:
                    self._pending = buf[i:]
                    break
                if end is not None:
                    _add(pieces, "text", buf[start:i])
                    pieces.append(Piece("marker", buf[i : end + 1]))
                    self._line += buf[i : end + 1]
                    start = i = end + 1
                    continue
            self._advance(char)
            i += 1
        _add(pieces, "text", buf[start : len(buf) - len(self._pending)])
        return pieces

    def _marker_end(self, buf: str, i: int, final: bool, *, numbered_only: bool = False) -> tuple[int | None, bool]:
        """(index of the closing bracket or None, whether to hold the text from ``i``). ``numbered_only``
        (a ``[`` right after a letter or digit): only attachment numbers (``word[2]``) make a marker."""
        limit = i + self._max_chars + 1
        for j in range(i + 1, min(len(buf), limit + 1)):
            if buf[j] in "\n[":
                return None, False
            if buf[j] == "]":
                content = buf[i + 1 : j]
                if not _HAS_WORD.search(content) or is_slice(content):
                    return None, False
                numbers = marker_numbers(content)
                if numbered_only:
                    return (j, False) if numbers and min(numbers) >= 1 else (None, False)
                if numbers is not None:
                    return j, False
                if j + 1 == len(buf):
                    return (j, False) if final else (None, True)
                return (None, False) if buf[j + 1] == LINK_OPENER else (j, False)
        undecided = len(buf) <= limit and not final
        return None, undecided

    def _advance(self, char: str) -> None:
        """Track fences (toggled by a ``` or ~~~ line) and inline code spans."""
        if char == "\n":
            if _FENCE.match(self._line):
                self._in_fence = not self._in_fence
            self._line = ""
            self._in_inline = False
            return
        self._line += char
        if char == "`" and not self._in_fence:
            self._in_inline = not self._in_inline


def _add(pieces: list[Piece], kind: Literal["text", "marker"], text: str) -> None:
    if text:
        pieces.append(Piece(kind, text))
