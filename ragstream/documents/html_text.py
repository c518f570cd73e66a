"""HTML to Markdown-flavoured text: headings become ``#`` lines, ``<pre>`` becomes a fence.

The result keeps the page's structure for the markdown chunker; the document's MIME type
stays ``text/html``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bs4 import BeautifulSoup, NavigableString, Tag

from ragstream.documents.markdown_structure import scan_lines

_DROPPED_TAGS = ("script", "style", "nav", "noscript", "template", "head")
_HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_BLOCK_TAGS = (
    "p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote",
    "ul", "ol", "dl", "dt", "dd", "table", "tr", "figure", "figcaption", "hr", "form",
)
_BLANK_RUN = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class HtmlText:
    """The page as Markdown-flavoured text and its title (``<title>`` or first ``<h1>``)."""

    text: str
    title: str | None


def html_to_text(html: str) -> HtmlText:
    """Drop scripts, styles and navigation; keep headings, paragraphs, lists and code."""
    soup = BeautifulSoup(html, "html.parser")
    title = _title(soup)
    for tag in soup.find_all(_DROPPED_TAGS):
        tag.decompose()
    for pre in soup.find_all("pre"):
        code = pre.get_text().strip("\n")
        pre.replace_with(NavigableString(f"\n\n```\n{code}\n```\n\n"))
    for heading in soup.find_all(_HEADING_TAGS):
        level = int(heading.name[1])
        heading.replace_with(NavigableString(f"\n\n{'#' * level} {_squash(heading.get_text())}\n\n"))
    for item in soup.find_all("li"):
        item.insert_before(NavigableString("\n- "))
        item.insert_after(NavigableString("\n"))
    for block in soup.find_all(_BLOCK_TAGS):
        block.insert_before(NavigableString("\n\n"))
        block.insert_after(NavigableString("\n\n"))
    for br in soup.find_all("br"):
        br.replace_with(NavigableString("\n"))
    return HtmlText(text=_tidy(soup.get_text()), title=title)


def _title(soup: BeautifulSoup) -> str | None:
    for candidate in (soup.title, soup.find("h1")):
        if isinstance(candidate, Tag) and (text := _squash(candidate.get_text())):
            return text
    return None


def _tidy(text: str) -> str:
    """Squash spaces on every line outside code fences and collapse blank-line runs."""
    lines = [line.text if line.fence else _squash(line.text) for line in scan_lines(text)]
    return _BLANK_RUN.sub("\n\n", "\n".join(lines)).strip()


def _squash(text: str) -> str:
    return " ".join(text.split())
