"""Excel (.xlsx, .xlsm, .xltx) with openpyxl in read-only (streaming) mode: one section per sheet.

Each visible sheet is a ``#`` heading with the sheet's name, then its rows as one Markdown table whose
first non-empty row is the header (empty rows and columns dropped); the markdown chunker cuts a long
sheet between rows and repeats the header row in every chunk. Formulas give the values Excel cached
when it last saved the file (openpyxl ``data_only``): nothing is recalculated and no macro is run.
Hidden sheets are skipped unless ``ingest.read_hidden_sheets``. Rows past ``limits.max_table_rows`` (all
sheets together) or a row wider than ``limits.max_table_columns`` refuse the file with ``file_too_large``.
"""

from __future__ import annotations

import io
import warnings
from typing import Any

import openpyxl

from ragstream.documents.office import text as md
from ragstream.errors import CorruptDocumentError, FileTooLargeError
from ragstream.models import Page

_VISIBLE = "visible"


def read_xlsx(data: bytes, name: str, *, max_rows: int, max_columns: int, hidden_sheets: bool) -> md.Extracted:
    """The workbook as one Markdown page per sheet read, its title, and a warning naming skipped hidden sheets."""
    try:
        with warnings.catch_warnings():  # openpyxl warns about features it drops (data validation, styles)
            warnings.simplefilter("ignore")
            workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_vba=False,
                                              keep_links=False)
            try:
                pages, hidden = _sheets(workbook, name, max_rows, max_columns, hidden_sheets)
                title = workbook.properties.title
            finally:
                workbook.close()
    except (FileTooLargeError, CorruptDocumentError):
        raise
    # openpyxl and its XML parser raise many types (KeyError, ValueError, TypeError...) on damaged parts.
    except Exception as exc:
        raise CorruptDocumentError(f"{name}: cannot read the workbook: {exc}") from exc
    notes = (f"{name}: skipped hidden sheets {', '.join(hidden)} (set ingest.read_hidden_sheets to read them)",)
    return md.Extracted(pages=tuple(pages), title=md.pick_title(title), warnings=notes if hidden else ())


def _sheets(workbook: Any, name: str, max_rows: int, max_columns: int,
            hidden_sheets: bool) -> tuple[list[Page], list[str]]:
    pages: list[Page] = []
    hidden: list[str] = []
    budget = md.RowBudget(name, max_rows, max_columns)
    for sheet in workbook.worksheets:
        if sheet.sheet_state != _VISIBLE and not hidden_sheets:
            hidden.append(sheet.title)
            continue
        sheet.reset_dimensions()  # the stored dimension may claim far more cells than the sheet holds
        grid = md.trim_grid(budget.take(sheet.iter_rows(values_only=True)))
        if grid:
            pages.append(Page(number=None, text=md.join_blocks([md.heading(1, sheet.title), md.table(grid)])))
    return pages, hidden
