"""Excel (.xlsx, .xlsm, .xltx) with openpyxl in read-only (streaming) mode: one section per sheet.

Each visible sheet is a ``#`` heading with the sheet's name, then its rows as one Markdown table whose
first non-empty row is the header (empty rows and columns dropped); the markdown chunker cuts a long
sheet between rows and repeats the header row in every chunk. Formulas give the values Excel cached
when it last saved the file (openpyxl ``data_only``): nothing is recalculated and no macro is run.
Hidden sheets are skipped unless ``ingest.read_hidden_sheets``. Rows past ``limits.max_table_rows`` (all
sheets together) or a row wider than ``limits.max_table_columns`` refuse the file with ``file_too_large``.

openpyxl reads a sheet's whole XML on opening when the sheet has no ``<dimension>`` element (it looks for one
until the end of ``<sheetData>``), which would read a million-row sheet before any row limit applies: such a
sheet gets a placeholder dimension first (the rows are then read one by one, as for any sheet).
"""

from __future__ import annotations

import io
import re
import warnings
import zipfile
from typing import Any

import openpyxl

from ragstream.documents.office import text as md
from ragstream.documents.office.archive import open_zip, read_entry, stream_entry
from ragstream.errors import CorruptDocumentError, DocumentError
from ragstream.models import Page

_VISIBLE = "visible"
_SHEET_PART = re.compile(r"^xl/worksheets/[^/]+\.xml$")
_HEAD_BYTES = 64 * 1024  # the elements before <sheetData> (sheet properties, views, columns) fit in far less
_SHEET_DATA = re.compile(rb"<(\w+:)?sheetData[\s>/]")
_DIMENSION = re.compile(rb"<(\w+:)?dimension[\s>/]")


def read_xlsx(data: bytes, name: str, *, max_rows: int, max_columns: int, hidden_sheets: bool,
              max_chars: int | None = None) -> md.Extracted:
    """The workbook as one Markdown page per sheet read, its title, and a warning naming skipped hidden sheets."""
    try:
        with warnings.catch_warnings():  # openpyxl warns about features it drops (data validation, styles)
            warnings.simplefilter("ignore")
            workbook = openpyxl.load_workbook(io.BytesIO(_with_dimensions(data, name)), read_only=True, data_only=True, keep_vba=False,
                                              keep_links=False)
            try:
                pages, hidden = _sheets(workbook, md.RowBudget(name, max_rows, max_columns, max_chars), hidden_sheets)
                title = workbook.properties.title
            finally:
                workbook.close()
    except DocumentError:
        raise
    # openpyxl and its XML parser raise many types (KeyError, ValueError, TypeError...) on damaged parts.
    except Exception as exc:
        raise CorruptDocumentError(f"{name}: cannot read the workbook: {exc}") from exc
    notes = (f"{name}: skipped hidden sheets {', '.join(hidden)} (set ingest.read_hidden_sheets to read them)",)
    return md.Extracted(pages=tuple(pages), title=md.pick_title(title), warnings=notes if hidden else ())


def _sheets(workbook: Any, budget: md.RowBudget, hidden_sheets: bool) -> tuple[list[Page], list[str]]:
    pages: list[Page] = []
    hidden: list[str] = []
    for sheet in workbook.worksheets:
        if sheet.sheet_state != _VISIBLE and not hidden_sheets:
            hidden.append(sheet.title)
            continue
        sheet.reset_dimensions()  # the stored dimension may claim far more cells than the sheet holds
        grid = md.trim_grid(budget.take(sheet.iter_rows(values_only=True)))
        if grid:
            pages.append(Page(number=None, text=md.join_blocks([md.heading(1, sheet.title), md.table(grid)])))
    return pages, hidden


def _with_dimensions(data: bytes, name: str) -> bytes:
    """``data``, or a copy in which every sheet without a ``<dimension>`` has a placeholder one (see the module doc)."""
    with open_zip(data, name) as package:
        missing = [info.filename for info in package.infolist()
                   if _SHEET_PART.match(info.filename) and not _DIMENSION.search(_head(package, info.filename, name))]
        if not missing:
            return data
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as fixed:
            for info in package.infolist():
                content = read_entry(package, info.filename, name)
                if info.filename in missing:
                    content = _SHEET_DATA.sub(lambda m: b"<%sdimension ref=\"A1\"/>" % (m.group(1) or b"") + m.group(0),
                                              content, count=1)
                fixed.writestr(info.filename, content)
    return out.getvalue()


def _head(package: zipfile.ZipFile, entry: str, name: str) -> bytes:
    head = b""
    for chunk in stream_entry(package, entry, name):
        head += chunk
        if len(head) >= _HEAD_BYTES:
            break
    return head[:_HEAD_BYTES]
