"""OpenDocument spreadsheets (.ods): one section per sheet, rows as one Markdown table, as for Excel.

Cells give their displayed text (a formula's result as last saved, formatted as shown). Repeated rows
and cells (``number-rows-repeated``, ``number-columns-repeated``) are expanded only when they hold text:
a spreadsheet's trailing run of a million empty rows costs nothing. Sheets hidden by their table style
(``table:display="false"``) are skipped unless ``ingest.read_hidden_sheets``.
"""

from __future__ import annotations

from collections.abc import Iterator
from xml.etree.ElementTree import Element

from ragstream.documents.bounds import ReadBounds
from ragstream.documents.office import text as md
from ragstream.documents.office.odf_xml import attr, parts, row_cells, tag
from ragstream.models import Page

_ROW = tag("table:table-row")
_ROW_GROUPS = frozenset({tag("table:table-header-rows"), tag("table:table-rows"), tag("table:table-row-group")})


def read_ods(data: bytes, bounds: ReadBounds, *, max_rows: int, max_columns: int, hidden_sheets: bool) -> md.Extracted:
    """The spreadsheet as one Markdown page per sheet read, its title, and a warning naming skipped hidden sheets."""
    name = bounds.name
    content, title = parts(data, bounds)
    hidden_styles = {attr(style, "style:name") for style in content.iter(tag("style:style"))
                     if any(attr(props, "table:display") == "false" for props in style.iter(tag("style:table-properties")))}
    budget = md.RowBudget(name, max_rows, max_columns, bounds.max_chars)
    pages: list[Page] = []
    hidden: list[str] = []
    for sheet in content.iter(tag("table:table")):
        sheet_name = attr(sheet, "table:name") or f"Sheet {len(pages) + len(hidden) + 1}"
        if attr(sheet, "table:style-name") in hidden_styles and not hidden_sheets:
            hidden.append(sheet_name)
            continue
        grid = md.trim_grid(budget.take(_rows(sheet, max_columns)))
        if grid:
            pages.append(Page(number=None, text=md.join_blocks([md.heading(1, sheet_name), md.table(grid)])))
    notes = (f"{name}: skipped hidden sheets {', '.join(hidden)} (set ingest.read_hidden_sheets to read them)",)
    return md.Extracted(pages=tuple(pages), title=md.pick_title(title), warnings=notes if hidden else ())


def _rows(container: Element, max_columns: int) -> Iterator[list[str]]:
    """The sheet's rows in order; a repeated row is yielded once per repeat only when it holds text."""
    for child in container:
        if child.tag in _ROW_GROUPS:
            yield from _rows(child, max_columns)
        elif child.tag == _ROW:
            cells = row_cells(child, max_columns)
            if not any(cell.strip() for cell in cells):
                continue
            repeat = attr(child, "table:number-rows-repeated", "1")
            for _ in range(int(repeat) if repeat.isdigit() and int(repeat) > 0 else 1):
                yield cells
