"""Tables of a PDF's text layer, found by pdfplumber (MIT; pdfminer.six, MIT) from their ruling lines, as Markdown.

pdfplumber's default ``lines`` strategy finds a table where drawn lines make its grid; a table without rules (or
with only horizontal ones) is not found and stays as lines of words. A found grid counts as a table only with at
least ``pdf.table_min_rows`` rows and ``pdf.table_min_columns`` columns (after empty rows and columns are dropped)
and ``pdf.table_min_filled_share`` of its cells holding text: a framed code listing (one column) or a figure's
boxes (empty cells) are not tables. Pages are read until ``pdf.table_max_seconds`` have passed; the tables of the
pages after that stay as text, with a warning. A file pdfplumber cannot read keeps its text without tables.
"""

from __future__ import annotations

import io
import logging
import time
from dataclasses import dataclass, field

from ragstream.config.pdf import PdfConfig

logger = logging.getLogger("ragstream.documents")


@dataclass(frozen=True)
class PageTable:
    """A table on a page: its box in PDF coordinates (origin bottom left, as the text layer's) and its Markdown."""

    x0: float
    x1: float
    bottom: float
    top: float
    markdown: str

    def holds(self, x: float | None, y: float | None) -> bool:
        """Whether a line starting at (``x``, ``y``) lies inside the table's box."""
        return x is not None and y is not None and self.x0 <= x <= self.x1 and self.bottom <= y <= self.top


@dataclass
class FoundTables:
    """The tables of each page (by 1-based number) and what could not be read."""

    pages: dict[int, list[PageTable]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def find_tables(data: bytes, numbers: list[int], name: str, config: PdfConfig) -> FoundTables:
    """The tables on the pages ``numbers`` of the PDF ``data``."""
    found = FoundTables()
    if not config.tables or not numbers:
        return found
    try:
        import pdfplumber
    except ImportError:  # a trimmed install without it: tables stay as lines of words
        return found
    # pdfminer logs a warning for every font without a bounding box (common in pdfTeX files): noise in an ingest.
    logging.getLogger("pdfminer").setLevel(logging.ERROR)
    deadline = time.monotonic() + config.table_max_seconds
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            for position, number in enumerate(numbers):
                if time.monotonic() > deadline:
                    found.warnings.append(f"{name}: tables of {len(numbers) - position} page(s) were read as text: "
                                          f"finding them took longer than {config.table_max_seconds} s "
                                          "(pdf.table_max_seconds)")
                    break
                page = pdf.pages[number - 1]
                tables = [_table(page.height, grid.bbox, grid.extract(), config) for grid in page.find_tables()]
                if kept := [entry for entry in tables if entry is not None]:
                    found.pages[number] = kept
    # pdfminer raises many exception types on damaged files; the text layer pypdf read stays.
    except Exception as exc:
        logger.warning("finding the tables of %s failed: %s", name, exc)
        found.warnings.append(f"{name}: tables were read as text: {type(exc).__name__}: {exc}")
        found.pages.clear()
    return found


def _table(height: float, bbox: tuple[float, float, float, float], rows: list[list[str | None]],
           config: PdfConfig) -> PageTable | None:
    """The grid as a table, or None when it is too small or too empty to be one."""
    from ragstream.documents.office.text import table, trim_grid

    grid = trim_grid([[" ".join((value or "").split()) for value in row] for row in rows])
    if len(grid) < config.table_min_rows or not grid or len(grid[0]) < config.table_min_columns:
        return None
    cells = [value for row in grid for value in row]
    if sum(1 for value in cells if value) < config.table_min_filled_share * len(cells):
        return None
    x0, top, x1, bottom = bbox  # pdfplumber measures from the top of the page
    return PageTable(x0=x0, x1=x1, bottom=height - bottom, top=height - top, markdown=table(grid))
