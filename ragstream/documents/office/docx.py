"""Word (.docx, .docm, .dotx) with python-docx: headings, paragraphs, lists and tables in reading order.

A paragraph is a heading when its style (or the paragraph itself) has an outline level, or its style
is a built-in ``Heading N``; it becomes a ``#`` line, so the markdown chunker puts it in ``header_path``.
List paragraphs (numbering or a ``List ...`` style) become list items, tables Markdown tables whose first
row is the header (a table nested in a cell gives that cell its rows, one line each). The title is the core
properties' title, else the first ``Title`` paragraph, else the first heading. Macro-enabled files are read
like any other: only their XML parts are parsed, the VBA project is never loaded, let alone run.
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

from ragstream.documents.bounds import ReadBounds
from ragstream.documents.office import text as md
from ragstream.documents.office.archive import open_zip
from ragstream.documents.office.xml_guard import scan_package
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
_MAIN_PART = "word/document.xml"
_P, _R, _T, _TBL, _TR, _TC = qn("w:p"), qn("w:r"), qn("w:t"), qn("w:tbl"), qn("w:tr"), qn("w:tc")
_HYPERLINK, _BR, _TYPE, _VAL = qn("w:hyperlink"), qn("w:br"), qn("w:type"), qn("w:val")
_PPR, _PSTYLE, _OUTLINE, _NUMPR, _NUMID, _ILVL = (qn("w:pPr"), qn("w:pStyle"), qn("w:outlineLvl"), qn("w:numPr"),
                                                  qn("w:numId"), qn("w:ilvl"))
_TCPR, _GRID_SPAN, _VMERGE = qn("w:tcPr"), qn("w:gridSpan"), qn("w:vMerge")
# What the run's other text elements show (a w:br shows a line break only when it is one, not a page break).
_RUN_CHARACTERS = {qn("w:tab"): "\t", qn("w:cr"): "\n", qn("w:noBreakHyphen"): "-", qn("w:ptab"): "\t"}


def read_docx(data: bytes, bounds: ReadBounds) -> md.Extracted:
    """The Word document as one page of Markdown and its title; :class:`CorruptDocumentError` when unreadable.

    Every XML part is scanned within ``bounds`` (elements, depth, the main part's characters) before python-docx
    parses any of them.
    """
    name = bounds.name
    with open_zip(data, name) as package:
        scan_package(package, bounds, text_parts=lambda part: part == _MAIN_PART, what="Word document")
    try:
        part = Package.open(io.BytesIO(data)).main_document_part
        if part.content_type != CONTENT_TYPE.WML_DOCUMENT_MAIN and part.content_type not in _WORD_MAIN_TYPES:
            raise CorruptDocumentError(f"{name}: the package's main part is {part.content_type}, not a Word document")
        document = part.document
        styles = _Styles.of(document)
        blocks: list[str] = []
        titles: list[str] = []
        headings: list[str] = []
        for element in document.element.body.iterchildren(_TBL, _P):
            if element.tag == _TBL:
                blocks.append(md.table(md.trim_grid(_table_rows(element))))
                continue
            text = paragraph_text(element)
            block, kind = _paragraph(element, text, styles)
            if kind == "title":
                titles.append(text)
            elif kind == "heading":
                headings.append(text)
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


def paragraph_text(p: Any) -> str:
    """A ``w:p``'s text as Word shows it: its runs and its hyperlinks' runs, tabs and line breaks kept.

    A ``w:t`` holding an entity reference the parser left unresolved keeps the text after it (python-docx's own
    ``text`` stops at the entity).
    """
    out: list[str] = []
    for child in p:
        if child.tag == _R:
            _run_text(child, out)
        elif child.tag == _HYPERLINK:
            for run in child:
                if run.tag == _R:
                    _run_text(run, out)
    return "".join(out)


def _run_text(run: Any, out: list[str]) -> None:
    for child in run:
        tag = child.tag
        if tag == _T:
            out.append(child.text or "")
            out.extend(inner.tail or "" for inner in child)
        elif tag == _BR:
            out.append("\n" if child.get(_TYPE) in (None, "textWrapping") else "")
        elif tag in _RUN_CHARACTERS:
            out.append(_RUN_CHARACTERS[tag])


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


def _paragraph(p: Any, text: str, styles: _Styles) -> tuple[str, str]:
    """The paragraph as Markdown and its kind: heading, title, list or body."""
    if not text.strip():
        return "", "body"
    properties = p.find(_PPR)
    chain = styles.chain(_value(properties, _PSTYLE))
    style_name = chain[0][1].name if chain else ""
    level = _heading_level(properties, chain)
    if level is not None:
        return md.heading(level, text), "heading"
    if style_name.casefold() in _TITLE_STYLES:
        return md.paragraph(text), "title"
    depth = _list_depth(properties, style_name)
    if depth is not None:
        return md.list_item(text, depth, numbered=bool(_NUMBERED_STYLE.search(style_name))), "list"
    return md.paragraph(text), "body"


def _value(parent: Any, tag: str) -> str | None:
    """The ``w:val`` of ``parent``'s child ``tag`` (None when either is missing)."""
    child = parent.find(tag) if parent is not None else None
    return child.get(_VAL) if child is not None else None


def _heading_level(properties: Any, chain: list[tuple[str, _Style]]) -> int | None:
    """1-based heading level from the paragraph's outline level, its style chain's, or a Heading N style."""
    own = _value(properties, _OUTLINE)
    if own is not None:
        return _outline(own)
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


def _list_depth(properties: Any, style_name: str) -> int | None:
    """The list level (0 at the top) of a numbered or bulleted paragraph, None for body text."""
    numbering = properties.find(_NUMPR) if properties is not None else None
    if numbering is not None and numbering.find(_NUMID) is not None:
        level = _value(numbering, _ILVL)
        return int(level) if level is not None and level.isdigit() else 0
    return 0 if _LIST_STYLE.match(style_name) else None


def _table_rows(table: Any) -> list[list[str]]:
    """A ``w:tbl``'s rows as cell text: a cell spanning columns repeats in each, a vertically merged cell repeats the
    text of the cell it continues (as python-docx's ``row.cells`` gives them, without its recursion)."""
    rows: list[list[str]] = []
    above: dict[int, str] = {}
    for row in table.iterchildren(_TR):
        cells: list[str] = []
        for cell in row.iterchildren(_TC):
            properties = cell.find(_TCPR)
            span = _value(properties, _GRID_SPAN)
            merge = properties.find(_VMERGE) if properties is not None else None
            offset = len(cells)
            if merge is not None and merge.get(_VAL, "continue") == "continue":
                text = above.get(offset, "")
            else:
                text = _cell_text(cell)
            for _ in range(int(span) if span is not None and span.isdigit() and int(span) > 0 else 1):
                above[len(cells)] = text
                cells.append(text)
        rows.append(cells)
    return rows


def _cell_text(cell: Any) -> str:
    """A table cell's text: its paragraphs and the rows of the tables nested in it, one line each."""
    lines: list[str] = []
    for child in cell.iterchildren(_P, _TBL):
        if child.tag == _P:
            lines.append(paragraph_text(child))
        else:
            lines.extend(" ".join(row) for row in _table_rows(child))
    return "\n".join(lines)


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
