"""The work one document may cost a reader, counted as it reads: elements, nesting, characters and seconds.

Readers call :class:`ReadBounds` while they parse, so a file past a bound is refused at the first element, level or
character past it (:class:`~ragstream.errors.DocumentTooLargeError` naming the setting), never after the whole file
has been turned into a tree or a string.
"""

from __future__ import annotations

import time

from ragstream.config.limits import LimitsConfig
from ragstream.errors import DocumentTooLargeError


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

    def element(self, depth: int) -> None:
        """Count one element opened at ``depth`` (the root is 1); refuse the document past a bound or its time."""
        self.elements += 1
        if self.elements > self.max_elements:
            raise DocumentTooLargeError(f"{self.name}: more than {self.max_elements} XML elements or HTML tags "
                                        "(limits.max_xml_elements)")
        if depth > self.max_depth:
            raise DocumentTooLargeError(f"{self.name}: elements nested more than {self.max_depth} levels deep "
                                        "(limits.max_xml_depth)")
        if self._deadline is not None and not self.elements % 256 and time.monotonic() > self._deadline:
            self.out_of_time()

    def text(self, chars: int) -> None:
        """Count ``chars`` characters of extracted text; refuse the document past ``limits.max_document_chars``."""
        self.chars += chars
        if self.chars > self.max_chars:
            raise DocumentTooLargeError(f"{self.name}: more than {self.max_chars} characters of text "
                                        "(limits.max_document_chars)")

    def out_of_time(self) -> None:
        """Refuse the document: it took longer than its time bound (``limits.max_markup_seconds``)."""
        raise DocumentTooLargeError(f"{self.name}: turning the markup into text took more than {self._seconds:g} s "
                                    "(limits.max_markup_seconds)")
