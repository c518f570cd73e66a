"""The prose of chunk text: fenced code set apart, heading lines dropped, sentences split."""

from __future__ import annotations

import re

CODE_BLOCK = re.compile(r"(```|~~~).*?(\1|$)", re.DOTALL)
"""A fenced code block (an unclosed fence runs to the end of the text)."""
_HEADING_LINE = re.compile(r"^\s*#.*$", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def prose_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (which holds no code blocks): heading lines removed, whitespace collapsed."""
    return _SENTENCE_END.split(" ".join(_HEADING_LINE.sub(" ", text).split()))
