"""Word (.docx, .docm, .dotx) with python-docx: headings, paragraphs, lists and tables in reading order.

A paragraph is a heading when its style (or the paragraph itself) has an outline level, or its style
is a built-in ``Heading N``; it becomes a ``#`` line, so the markdown chunker puts it in ``header_path``.
List paragraphs (numbering or a ``List ...`` style) become list items, tables Markdown tables whose first
row is the header. The title is the core properties' title, else the first ``Title`` paragraph, else the
first heading. Macro-enabled files are read like any other: only their XML parts are parsed, the VBA
project is never loaded, let alone run.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any

from docx.opc.constants import CONTENT_TYPE
from docx.opc.part import PartFactory
from docx.oxml.ns import qn
from docx.package import Package
from docx.parts.document import DocumentPart
from docx.table import Table
from docx.text.paragraph import Paragraph

from ragstream.documents.office import text as md
from ragstream.errors import CorruptDocumentError
from ragstream.models import Page

# Word's other main-part types hold the same WordprocessingML as a .docx: register python-docx's
# document part for them (python-docx's own registry), so templates and macro-enabled files open.
_WORD_MAIN_TYPES = (
    "application/vnd.ms-word.document.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml",
)
for _content_type in _WORD_MAIN_TYPES:
    PartFactory.part_type_for.setdefault(_content_type, DocumentPart)

_HEADING_STYLE = re.compile(r"(?i)^heading\s*([1-9])$")
_BODY_OUTLINE_LEVEL = 9  # w:outlineLvl 9 means body text
_TITLE_STYLES = frozenset({"title"})
_NUMBERED_STYLE = re.compile(r"(?i)number")
_LIST_STYLE = re.compile(r"(?i)^list")
_MAX_STYLE_DEPTH = 20  # a style's based-on chain is followed this far (a loop in a crafted file ends)


def read_docx(data: bytes, name: str) -> md.Extracted:
    """The Word document as one page of Markdown and its title; :class:`CorruptDocumentError` when unreadable."""
    try:
        part = Package.open(io.BytesIO(data)).main_document_part
        if part.content_type != CONTENT_TYPE.WML_DOCUMENT_MAIN and part.content_type not in _WORD_MAIN_TYPES:
            raise CorruptDocumentError(f"{name}: the package's main part is {part.content_type}, not a Word document")
        document = part.document
        styles = _Styles.of(document)
        blocks: list[str] = []
        titles: list[str] = []
        headings: list[str] = []
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                blocks.append(md.table(_table_rows(item)))
                continue
            block, kind = _paragraph(item, styles)
            if kind == "title":
                titles.append(item.text)
            elif kind == "heading":
                headings.append(item.text)
            blocks.append(block)
        core_title = document.core_properties.title
    except CorruptDocumentError:
        raise
    # python-docx and lxml raise many types (KeyError, ValueError, XMLSyntaxError...) on damaged parts.
    except Exception as exc:
        raise CorruptDocumentError(f"{name}: cannot read the Word document: {exc}") from exc
    text = _join(blocks)
    return md.Extracted(pages=(Page(number=None, text=text),),
                        title=md.pick_title(core_title, *titles[:1], *headings[:1]))


@dataclass(frozen=True)
class _Style:
    name: str
    based_on: str | None
    outline: str | None


@dataclass(frozen=True)
class _Styles:
    """The paragraph styles of a document by id, read once (python-docx's per-paragraph lookup scans them all)."""

    by_id: dict[str, _Style]
    default: str | None

    @classmethod
    def of(cls, document: Any) -> _Styles:
        by_id: dict[str, _Style] = {}
        default = None
        for element in document.styles.element.xpath("./w:style[@w:type='paragraph']"):
            style_id = element.get(qn("w:styleId")) or ""
            names = element.xpath("./w:name/@w:val")
            based = element.xpath("./w:basedOn/@w:val")
            outline = element.xpath("./w:pPr/w:outlineLvl/@w:val")
            by_id[style_id] = _Style(name=str(names[0]) if names else style_id, based_on=str(based[0]) if based else None,
                                     outline=str(outline[0]) if outline else None)
            if element.get(qn("w:default")) in ("1", "true", "on"):
                default = style_id
        return cls(by_id=by_id, default=default)

    def chain(self, style_id: str | None) -> list[tuple[str, _Style]]:
        """The style and the styles it is based on, nearest first (at most ``_MAX_STYLE_DEPTH``)."""
        found: list[tuple[str, _Style]] = []
        current = style_id if style_id in self.by_id else self.default
        while current is not None and current in self.by_id and len(found) < _MAX_STYLE_DEPTH:
            found.append((current, self.by_id[current]))
            current = self.by_id[current].based_on
        return found


def _paragraph(paragraph: Paragraph, styles: _Styles) -> tuple[str, str]:
    """The paragraph as Markdown and its kind: heading, title, list or body."""
    text = paragraph.text
    if not text.strip():
        return "", "body"
    chain = styles.chain(paragraph._p.style)
    style_name = chain[0][1].name if chain else ""
    level = _heading_level(paragraph, chain)
    if level is not None:
        return md.heading(level, text), "heading"
    if style_name.casefold() in _TITLE_STYLES:
        return md.paragraph(text), "title"
    depth = _list_depth(paragraph, style_name)
    if depth is not None:
        return md.list_item(text, depth, numbered=bool(_NUMBERED_STYLE.search(style_name))), "list"
    return md.paragraph(text), "body"


def _heading_level(paragraph: Paragraph, chain: list[tuple[str, _Style]]) -> int | None:
    """1-based heading level from the paragraph's outline level, its style chain's, or a Heading N style."""
    own = paragraph._p.xpath("./w:pPr/w:outlineLvl/@w:val")
    if own:
        return _outline(own[0])
    for style_id, style in chain:
        if style.outline is not None:
            return _outline(style.outline)
        match = _HEADING_STYLE.match(style.name) or _HEADING_STYLE.match(style_id)
        if match:
            return int(match.group(1))
    return None


def _outline(value: str) -> int | None:
    try:
        level = int(value)
    except ValueError:
        return None
    return None if level >= _BODY_OUTLINE_LEVEL or level < 0 else level + 1


def _list_depth(paragraph: Paragraph, style_name: str) -> int | None:
    """The list level (0 at the top) of a numbered or bulleted paragraph, None for body text."""
    levels = paragraph._p.xpath("./w:pPr/w:numPr/w:ilvl/@w:val")
    if paragraph._p.xpath("./w:pPr/w:numPr/w:numId"):
        return int(levels[0]) if levels and levels[0].isdigit() else 0
    return 0 if _LIST_STYLE.match(style_name) else None


def _table_rows(table: Table) -> list[list[str]]:
    rows = [[cell.text for cell in row.cells] for row in table.rows]
    return md.trim_grid(rows)


def _join(blocks: list[str]) -> str:
    """Blocks joined by blank lines, consecutive list items kept together as one list."""
    out: list[str] = []
    for block in blocks:
        if not block.strip():
            continue
        if out and _is_item(block) and _is_item(out[-1].rsplit("\n", 1)[-1]):
            out[-1] += "\n" + block
        else:
            out.append(block)
    return md.join_blocks(out)


def _is_item(line: str) -> bool:
    return line.lstrip().startswith(("- ", "1. "))
