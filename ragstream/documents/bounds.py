"""The work one document may cost a reader, counted as it reads: elements, nesting, characters and seconds.

Readers call :class:`ReadBounds` while they parse, so a file past a bound is refused at the first element, level or
character past it (:class:`~ragstream.errors.DocumentTooLargeError` naming the setting), never after the whole file
has been turned into a tree or a string.
"""

from __future__ import annotations

import time

from ragstream.config.limits import LimitsConfig
from ragstream.errors import DocumentTooLargeError

_CLOCK_EVERY = 256  # steps of work between two looks at the clock


class ReadBounds:
    """One document's budget of XML elements or HTML tags, nesting depth, extracted characters and (optionally) time."""

    def __init__(self, name: str, limits: LimitsConfig, *, seconds: float | None = None) -> None:
        self.name = name
        self.max_depth = limits.max_xml_depth
        self.max_elements = limits.max_xml_elements
        self.max_chars = limits.max_document_chars
        self._seconds = seconds
        self._deadline = time.monotonic() + seconds if seconds is not None else None
        self.elements = 0
        self.chars = 0
        self._steps = 0

    def element(self, depth: int) -> None:
        """Count one element opened at ``depth`` (the root is 1); refuse the document past a bound or its time."""
        self.elements += 1
        if self.elements > self.max_elements:
            raise DocumentTooLargeError(f"{self.name}: more than {self.max_elements} XML elements or HTML tags "
                                        "(limits.max_xml_elements)")
        self.nesting(depth)
        self.tick()

    def nesting(self, depth: int) -> None:
        """Refuse the document when an element opens at ``depth`` past ``limits.max_xml_depth`` (elements not counted:
        for a reader that streams and lets go of what it has read)."""
        if depth > self.max_depth:
            raise DocumentTooLargeError(f"{self.name}: elements nested more than {self.max_depth} levels deep "
                                        "(limits.max_xml_depth)")

    def text(self, chars: int) -> None:
        """Count ``chars`` characters of extracted text; refuse the document past ``limits.max_document_chars``."""
        self.chars += chars
        if self.chars > self.max_chars:
            raise DocumentTooLargeError(f"{self.name}: more than {self.max_chars} characters of text "
                                        "(limits.max_document_chars)")

    def tick(self) -> None:
        """Count one step of work (an element, a shape); every ``_CLOCK_EVERY`` steps, refuse the document if its time
        bound (``limits.max_read_seconds``) has passed."""
        if self._deadline is None:
            return
        self._steps += 1
        if not self._steps % _CLOCK_EVERY and time.monotonic() > self._deadline:
            raise DocumentTooLargeError(f"{self.name}: turning the file into text took more than {self._seconds:g} s "
                                        "(limits.max_read_seconds)")
