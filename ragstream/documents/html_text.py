"""HTML to Markdown-flavoured text: headings become ``#`` lines, ``<pre>`` becomes a fence.

The result keeps the page's structure for the markdown chunker; the document's MIME type
stays ``text/html``.

The page is converted as the standard library's HTML parser reads it, tag by tag, in one pass: no tree is built,
so the cost grows with the page's length and not with how deep its elements nest (40,000 nested ``<div>`` are as
cheap as 40,000 in a row). An end tag closes the most recent open element of its name and every element opened
inside it; an end tag with no open element of its name is ignored. Tags, characters of text and seconds are counted
in the document's :class:`~ragstream.documents.bounds.ReadBounds` as they are read.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser

from ragstream.documents.bounds import ReadBounds
from ragstream.documents.markdown_structure import scan_lines

_DROPPED_TAGS = frozenset({"script", "style", "nav", "noscript", "template", "head"})
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCK_TAGS = frozenset({
    "p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote",
    "ul", "ol", "dl", "dt", "dd", "table", "tr", "figure", "figcaption", "hr", "form",
})
# Elements that never have content (no end tag): they are closed as soon as they open.
_VOID_TAGS = frozenset({
    "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "menuitem", "meta", "param",
    "source", "track", "wbr", "basefont", "bgsound", "command", "frame", "image", "isindex", "nextid", "spacer",
})
_BLANK_RUN = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class HtmlText:
    """The page as Markdown-flavoured text and its title (``<title>`` or first ``<h1>``)."""

    text: str
    title: str | None


def html_to_text(html: str, bounds: ReadBounds) -> HtmlText:
    """Drop scripts, styles and navigation; keep headings, paragraphs, lists and code.

    Raises :class:`~ragstream.errors.DocumentTooLargeError` past a bound of ``bounds`` (tags, text, seconds).
    """
    converter = _Converter(bounds)
    converter.feed(html)
    converter.close()
    return HtmlText(text=_tidy(converter.text()), title=converter.title())


@dataclass(slots=True)
class _Open:
    """An open element: whether it captures its content (a heading, a ``<pre>``), drops it, or names the page."""

    tag: str
    captures: bool = False
    dropped: bool = False
    title_of: str | None = None  # "title" or "h1": the first such element, whose text is the page's title


@dataclass
class _State:
    stack: list[_Open] = field(default_factory=lambda: [])
    sinks: list[list[str]] = field(default_factory=lambda: [[]])  # the page's text, then each open capture's
    open_counts: Counter[str] = field(default_factory=Counter)
    dropped: int = 0  # open elements whose content is dropped (script, nav...)
    pre: int = 0  # open <pre> elements
    titles: dict[str, list[str]] = field(default_factory=dict)  # the text of the first <title> and the first <h1>
    naming: set[str] = field(default_factory=set)  # which of those is open


class _Converter(HTMLParser):
    def __init__(self, bounds: ReadBounds) -> None:
        super().__init__(convert_charrefs=True)
        self._bounds = bounds
        self._s = _State()

    # -- the parser's events --

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        s = self._s
        self._bounds.element(1)  # nesting costs nothing here: the stack is a list, never a recursion
        capturing = len(s.sinks) > 1
        if tag in _VOID_TAGS:
            if not s.dropped and not capturing:
                if tag == "br":
                    self._write("\n")
                elif tag in _BLOCK_TAGS:
                    self._write("\n\n\n\n")
            return
        element = _Open(tag=tag)
        if tag in _DROPPED_TAGS:
            element.dropped = True
            s.dropped += 1
        if tag in ("title", "h1") and tag not in s.titles:
            element.title_of = tag
            s.titles[tag] = []
            s.naming.add(tag)
        if not s.dropped:
            if (tag == "pre" and not s.pre) or (tag in _HEADING_TAGS and not capturing):
                element.captures = True
                s.sinks.append([])
            elif tag == "li" and not capturing:
                self._write("\n- ")
            elif tag in _BLOCK_TAGS and not capturing:
                self._write("\n\n")
        if tag == "pre":
            s.pre += 1
        s.stack.append(element)
        s.open_counts[tag] += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        s = self._s
        if not s.open_counts[tag]:
            return
        while s.stack:
            element = s.stack.pop()
            self._close(element)
            if element.tag == tag:
                return

    def handle_data(self, data: str) -> None:
        s = self._s
        for tag in s.naming:
            s.titles[tag].append(data)
        if not s.dropped:
            self._write(data)

    def close(self) -> None:
        super().close()
        while self._s.stack:
            self._close(self._s.stack.pop())

    # -- the result --

    def text(self) -> str:
        return "".join(self._s.sinks[0])

    def title(self) -> str | None:
        for tag in ("title", "h1"):
            text = _squash("".join(self._s.titles.get(tag, [])))
            if text:
                return text
        return None

    # -- helpers --

    def _close(self, element: _Open) -> None:
        s = self._s
        s.open_counts[element.tag] -= 1
        if element.tag == "pre":
            s.pre -= 1
        if element.title_of is not None:
            s.naming.discard(element.title_of)
        if element.dropped:
            s.dropped -= 1
            return
        if element.captures:
            captured = "".join(s.sinks.pop())
            if element.tag == "pre":
                self._write(f"\n\n```\n{captured.strip(chr(10))}\n```\n\n")
            else:
                self._write(f"\n\n{'#' * int(element.tag[1])} {_squash(captured)}\n\n")
            return
        if s.dropped or len(s.sinks) > 1:
            return
        if element.tag == "li":
            self._write("\n")
        elif element.tag in _BLOCK_TAGS:
            self._write("\n\n")

    def _write(self, text: str) -> None:
        """Append to the innermost open capture (a heading's or a <pre>'s text), else to the page's text."""
        sinks = self._s.sinks
        if len(sinks) == 1:
            self._bounds.text(len(text))
        sinks[-1].append(text)


def _tidy(text: str) -> str:
    """Squash spaces on every line outside code fences and collapse blank-line runs."""
    lines = [line.text if line.fence else _squash(line.text) for line in scan_lines(text)]
    return _BLANK_RUN.sub("\n\n", "\n".join(lines)).strip()


def _squash(text: str) -> str:
    return " ".join(text.split())
