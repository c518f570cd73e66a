"""Whether a candidate title names its document (PDF metadata, an office file's core properties, a first
heading): the test every reader applies before taking a title."""

from __future__ import annotations

import re

_GENERIC_HEADINGS = frozenset({"contents", "table of contents", "abstract", "index", "preface", "summary"})
_FILE_NAME_TITLE = re.compile(r"(?i)^(?:microsoft \w+ - )?.*\.(?:pdf|docx?|odt|rtf|tex|txt|pptx?|xlsx?)$|^untitled\b")


def is_document_title(title: str) -> bool:
    """A title names the document: not empty, not a file name, not a generic heading."""
    return bool(title) and title.casefold() not in _GENERIC_HEADINGS and not _FILE_NAME_TITLE.match(title)
