"""Content detectors for chunk metadata: ``has_code`` and ``has_equations``, which search filters may name."""

from __future__ import annotations

import re

_FENCE_LINE = re.compile(r"^\s*(?:`{3,}|~{3,})", re.MULTILINE)
_PRE_TAG = re.compile(r"<pre[\s>]", re.IGNORECASE)
_INDENTED = re.compile(r"^(?: {4}|\t)\S")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")

_FENCED_BLOCK = re.compile(r"^\s*(`{3,}|~{3,}).*?^\s*\1", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_DISPLAY_MATH = (
    re.compile(r"\$\$.+?\$\$", re.DOTALL),
    re.compile(r"\\\[.+?\\\]", re.DOTALL),
    re.compile(r"\\begin\{(?:equation|align|gather|multline|eqnarray)\*?\}"),
)
_INLINE_MATH = re.compile(r"(?<![\\$\w])\$(?=\S)([^$\n]+?)(?<=\S)\$(?![\w$])")
_MATH_CONTENT = re.compile(r"\w\s*[=+\-*/^_<>]\s*[\w\\{(]|\\[A-Za-z]+")


def has_code(text: str) -> bool:
    """True when ``text`` holds a fenced code block, an indented code block or a ``<pre>``."""
    return bool(_FENCE_LINE.search(text) or _PRE_TAG.search(text) or _has_indented_block(text))


def has_equations(text: str) -> bool:
    """True for ``$$..$$``, ``\\[..\\]``, ``\\begin{equation}`` or inline ``$..$`` math with an operator.

    Code (fenced blocks and inline spans) is ignored, so shell ``$VARS`` do not count.
    """
    prose = _INLINE_CODE.sub(" ", _FENCED_BLOCK.sub(" ", text))
    if any(pattern.search(prose) for pattern in _DISPLAY_MATH):
        return True
    return any(_MATH_CONTENT.search(match.group(1)) for match in _INLINE_MATH.finditer(prose))


def _has_indented_block(text: str) -> bool:
    """An indented code block: an indented line after a blank line that follows neither a
    list item nor other indented text (those indents are continuations, not code)."""
    previous_content = ""
    after_blank = True
    for line in text.split("\n"):
        if not line.strip():
            after_blank = True
            continue
        if _INDENTED.match(line) and after_blank and not _is_continuation(previous_content):
            return True
        previous_content = line
        after_blank = False
    return False


def _is_continuation(previous: str) -> bool:
    return bool(_LIST_ITEM.match(previous) or previous.startswith((" ", "\t")))
