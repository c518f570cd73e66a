"""Fence-aware reading of Markdown: headings, sections and blocks.

Only ATX headings (``#`` to ``######``) count. A fence opens with three or more backticks or
tildes (indentation allowed, so fences inside list items are seen) and closes with a line of
at least as many of the same character; ``#`` lines inside a fence are code, not headings.
An unclosed fence runs to the end of the text, as in CommonMark. A heading's title drops a
trailing attribute list (``## Request Files { #request-files }``, Python-Markdown ``attr_list``
and Pandoc style), so header paths and titles never carry anchors or classes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# One entry of an attribute list: #id, .class, key=value (quoted or bare), or Pandoc's "-".
_ATTRIBUTE = r"""(?:[#.][\w:-]+|[\w:-]+=(?:"[^"\n]*"|'[^'\n]*'|[^\s}"']+)|-)"""
ATTRIBUTE_LIST = re.compile(rf"\{{:?[ \t]*{_ATTRIBUTE}(?:[ \t]+{_ATTRIBUTE})*[ \t]*\}}")
"""A Python-Markdown / Pandoc attribute list: ``{ #id .class key=value }`` or ``{: #id }``."""
_TRAILING_ATTRIBUTE_LIST = re.compile(rf"[ \t]*{ATTRIBUTE_LIST.pattern}[ \t]*$")

HeadingStack = tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class Line:
    """One line of Markdown with what the scanner learned about it."""

    text: str
    heading_level: int | None = None
    heading_title: str = ""
    fence: str | None = None  # "open", "inside" or "close" for code-fence lines


@dataclass
class Section:
    """A heading (or the text before the first one) and the lines up to the next split."""

    heading: Line | None
    stack: HeadingStack
    body: list[Line] = field(default_factory=list)

    @property
    def header_path(self) -> tuple[str, ...]:
        """Heading titles from the top down to this section's own heading."""
        return tuple(title for _, title in self.stack)

    @property
    def text(self) -> str:
        """The heading line and body without surrounding blank lines."""
        return join_lines(([self.heading] if self.heading else []) + self.body)


def join_lines(lines: list[Line]) -> str:
    """Join lines, dropping leading and trailing blank lines and trailing whitespace."""
    texts = [line.text for line in lines]
    while texts and not texts[0].strip():
        texts.pop(0)
    return "\n".join(texts).rstrip()


def scan_lines(text: str) -> list[Line]:
    """Classify every line of ``text`` as heading, fence part or plain."""
    lines: list[Line] = []
    fence_marker: str | None = None
    for raw in text.split("\n"):
        if fence_marker is not None:
            stripped = raw.strip()
            if len(stripped) >= len(fence_marker) and set(stripped) == {fence_marker[0]}:
                lines.append(Line(raw, fence="close"))
                fence_marker = None
            else:
                lines.append(Line(raw, fence="inside"))
            continue
        opening = _FENCE.match(raw)
        if opening:
            fence_marker = opening.group(1)
            lines.append(Line(raw, fence="open"))
            continue
        heading = _HEADING.match(raw)
        if heading:
            title = plain_title(strip_attribute_list(heading.group(2) or ""))
            lines.append(Line(raw, heading_level=len(heading.group(1)), heading_title=title))
        else:
            lines.append(Line(raw))
    return lines


_IMAGE_OR_LINK = re.compile(r"!?\[([^\]\n]*)\](?:\([^)\n]*\)|\[[^\]\n]*\])")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])|(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])")


def plain_title(title: str) -> str:
    """A heading's title as a person reads it: ``Async Support > [Trio](https://…)`` keeps ``Trio``; images keep
    their alt text, autolinks their address, ``**strong**`` and ``*emphasis*`` their words (inline code stays)."""
    title = _IMAGE_OR_LINK.sub(lambda found: found.group(1), title)
    title = _AUTOLINK.sub(lambda found: found.group(1), title)
    title = _STRONG.sub(lambda found: found.group(2), title)
    title = _EMPHASIS.sub(lambda found: found.group(1) or found.group(2), title)
    return " ".join(title.split())


def strip_attribute_list(title: str) -> str:
    """``Request Files { #request-files }`` -> ``Request Files`` (the title, stripped)."""
    return _TRAILING_ATTRIBUTE_LIST.sub("", title).strip()


def split_sections(lines: list[Line], max_level: int, stack: HeadingStack = ()) -> list[Section]:
    """Cut ``lines`` at every heading of level ``max_level`` or higher (fewer ``#``).

    ``stack`` is the heading path already in force (for splitting inside a section).
    Deeper headings stay inside their section's body but still update the path.
    """
    sections = [Section(heading=None, stack=stack)]
    current_stack = stack
    for line in lines:
        if line.heading_level is not None:
            current_stack = stack_after([line], current_stack)
            if line.heading_level <= max_level:
                sections.append(Section(heading=line, stack=current_stack))
                continue
        sections[-1].body.append(line)
    return [section for section in sections if section.text]


def stack_after(lines: list[Line], stack: HeadingStack = ()) -> HeadingStack:
    """The heading path in force after ``lines``, starting from ``stack`` (a PDF's sections run on across pages)."""
    for line in lines:
        if line.heading_level is not None:
            stack = (*(entry for entry in stack if entry[0] < line.heading_level), (line.heading_level, line.heading_title))
    return stack


def split_blocks(lines: list[Line]) -> list[str]:
    """Group lines into blocks separated by blank lines; a fenced block is one block."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in lines:
        if line.fence == "open":
            if current:
                blocks.append(current)
            current = [line.text]
        elif line.fence == "inside":
            current.append(line.text)
        elif line.fence == "close":
            current.append(line.text)
            blocks.append(current)
            current = []
        elif not line.text.strip():
            if current:
                blocks.append(current)
            current = []
        else:
            current.append(line.text)
    if current:
        blocks.append(current)
    return ["\n".join(block).rstrip() for block in blocks]
