"""OpenDocument spreadsheets (.ods): one section per sheet, rows as one Markdown table, as for Excel.

Cells give their displayed text (a formula's result as last saved, formatted as shown). Repeated rows
and cells (``number-rows-repeated``, ``number-columns-repeated``) are expanded only when they hold text:
a spreadsheet's trailing run of a million empty rows costs nothing. Sheets hidden by their table style
(``table:display="false"``) are skipped unless ``ingest.read_hidden_sheets``.

``content.xml`` is read as a stream (ElementTree's pull parser, a megabyte at a time): each row is turned into
cell text when it ends and then let go, so memory holds one row, never the sheet's tree, and a sheet at
``limits.max_table_rows`` costs what its rows' text costs. Nesting is bounded by ``limits.max_xml_depth``; the
elements outside rows (rows themselves included) and those of any one row by ``limits.max_xml_elements``; the
whole read by ``limits.max_read_seconds`` (a million rows of a thousand empty cells each is no text, but work).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree
from xml.etree.ElementTree import Element

from ragstream.documents.bounds import ReadBounds
from ragstream.documents.office import text as md
from ragstream.documents.office.archive import open_zip, stream_entry
from ragstream.documents.office.odf_xml import WHAT, attr, checked_title, row_cells, tag
from ragstream.errors import CorruptDocumentError, DocumentTooLargeError
from ragstream.models import Page

_CONTENT = "content.xml"
_TABLE = tag("table:table")
_ROW = tag("table:table-row")
_CELLS = frozenset({tag("table:table-cell"), tag("table:covered-table-cell")})
_STYLE = tag("style:style")
_TABLE_PROPERTIES = tag("style:table-properties")
_STRUCTURE = _CELLS | {_TABLE, _ROW, _STYLE}  # what _start and _end keep count of


def read_ods(data: bytes, bounds: ReadBounds, *, max_rows: int, max_columns: int, hidden_sheets: bool) -> md.Extracted:
    """The spreadsheet as one Markdown page per sheet read, its title, and a warning naming skipped hidden sheets."""
    name = bounds.name
    reader = _Reader(bounds, md.RowBudget(name, max_rows, max_columns, bounds.max_chars), max_columns, hidden_sheets)
    with open_zip(data, name) as package:
        title = checked_title(package, bounds)
        parser: ElementTree.XMLPullParser[Element] = ElementTree.XMLPullParser(events=("start", "end"))
        try:
            for chunk in stream_entry(package, _CONTENT, name):
                parser.feed(chunk)
                reader.take(parser.read_events())
            parser.close()
            reader.take(parser.read_events())
        except ElementTree.ParseError as exc:
            raise CorruptDocumentError(f"{name}: cannot read the {WHAT}: its XML part {_CONTENT} is broken: "
                                       f"{exc}") from exc
    notes = (f"{name}: skipped hidden sheets {', '.join(reader.hidden)} (set ingest.read_hidden_sheets to read "
             "them)",)
    return md.Extracted(pages=tuple(reader.pages), title=md.pick_title(title), warnings=notes if reader.hidden else ())


@dataclass
class _Sheet:
    name: str
    hidden: bool
    rows: list[list[str]] = field(default_factory=lambda: [])


class _Reader:
    """Turns the pull parser's events into sheets: rows as they end, each element let go once it is read."""

    def __init__(self, bounds: ReadBounds, budget: md.RowBudget, max_columns: int, hidden_sheets: bool) -> None:
        self._bounds = bounds
        self._budget = budget
        self._max_columns = max_columns
        self._hidden_sheets = hidden_sheets
        self._stack: list[Element] = []
        self._hidden_styles: set[str] = set()
        self._sheet: _Sheet | None = None
        self._cells = 0  # open cells: a table inside a cell is that cell's text, not a sheet
        self._keeping = 0  # open rows and styles: their elements are kept until they end and are read
        self._row_elements = 0
        self.pages: list[Page] = []
        self.hidden: list[str] = []

    def take(self, events: Iterable[Any]) -> None:
        """Read the parser's ``start`` and ``end`` events (the only ones asked for: each carries its element)."""
        stack, max_depth, max_elements = self._stack, self._bounds.max_depth, self._bounds.max_elements
        for event, element in events:
            if event == "end":
                self._end(element)
                continue
            stack.append(element)
            tag_ = element.tag
            if self._keeping and tag_ not in _STRUCTURE:  # inside a row, no cell: the hot path, kept short
                self._row_elements += 1
                if len(stack) > max_depth or self._row_elements > max_elements:
                    self._bounds.nesting(len(stack))
                    raise DocumentTooLargeError(f"{self._bounds.name}: a row holds more than {max_elements} XML "
                                                "elements (limits.max_xml_elements)")
                continue
            self._start(element, tag_)

    def _start(self, element: Element, tag_: str) -> None:
        if self._keeping:  # a row's cell: bounded per row (rows are bounded by limits.max_table_rows)
            self._bounds.nesting(len(self._stack))
            self._bounds.tick()
            self._row_elements += 1
            if self._row_elements > self._bounds.max_elements:
                raise DocumentTooLargeError(f"{self._bounds.name}: a row holds more than {self._bounds.max_elements} "
                                            "XML elements (limits.max_xml_elements)")
        else:  # rows, sheets and everything around them count against limits.max_xml_elements
            self._bounds.element(len(self._stack))
        if tag_ in _CELLS:
            self._cells += 1
        elif tag_ == _TABLE and not self._cells:
            name = attr(element, "table:name") or f"Sheet {len(self.pages) + len(self.hidden) + 1}"
            hidden = attr(element, "table:style-name") in self._hidden_styles and not self._hidden_sheets
            self._sheet = _Sheet(name=name, hidden=hidden)
        if tag_ in (_ROW, _STYLE):
            if not self._keeping:
                self._row_elements = 0
            self._keeping += 1

    def _end(self, element: Element) -> None:
        self._stack.pop()
        tag_ = element.tag
        if tag_ in _CELLS:
            self._cells -= 1
            return
        if tag_ in (_ROW, _STYLE):
            self._keeping -= 1
            if tag_ == _STYLE and any(attr(properties, "table:display") == "false"
                                      for properties in element.iter(_TABLE_PROPERTIES)):
                self._hidden_styles.add(attr(element, "style:name"))
            if tag_ == _ROW and not self._cells and self._sheet is not None and not self._sheet.hidden:
                self._row(element, self._sheet)
        elif self._keeping:
            return
        elif tag_ == _TABLE and not self._cells and self._sheet is not None:
            self._finish(self._sheet)
            self._sheet = None
        if not self._keeping and self._stack:
            self._stack[-1].remove(element)  # read: let it go (it is its parent's last child)

    def _row(self, row: Element, sheet: _Sheet) -> None:
        """The row's cells, once per repeat when it holds text (a repeated empty row costs nothing)."""
        cells = row_cells(row, self._max_columns)
        if not any(cell.strip() for cell in cells):
            return
        repeat = attr(row, "table:number-rows-repeated", "1")
        for _ in range(int(repeat) if repeat.isdigit() and int(repeat) > 0 else 1):
            sheet.rows.extend(self._budget.take([cells]))

    def _finish(self, sheet: _Sheet) -> None:
        if sheet.hidden:
            self.hidden.append(sheet.name)
            return
        grid = md.trim_grid(sheet.rows)
        if grid:
            self.pages.append(Page(number=None, text=md.join_blocks([md.heading(1, sheet.name), md.table(grid)])))
