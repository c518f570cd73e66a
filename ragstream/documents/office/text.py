"""What the office readers return, and the Markdown they write: headings, paragraphs, tables."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ragstream.documents.document_titles import is_document_title
from ragstream.errors import DocumentTooLargeError, FileTooLargeError
from ragstream.models import Page

# Titles office applications put in a new file's properties: they name the application, not the document.
_DEFAULT_TITLES = frozenset({
    "powerpoint presentation", "presentation", "word document", "document", "microsoft word document",
    "slide 1", "sheet1", "book1", "workbook",
})
# A line that Markdown would read as structure: a heading, a code fence, a table row, a quote, a rule.
_MARKDOWN_START = re.compile(r"^(\s*)(#|`{3}|~{3}|\||>|-{3,}\s*$)")
_SPACES = re.compile(r"\s+")
_CELL_SEPARATOR_CHARS = 3  # " | " between the cells of a Markdown table row
_FLOAT_DIGITS = 15  # an IEEE double holds 15 significant decimal digits faithfully


@dataclass(frozen=True)
class Extracted:
    """A document's text as pages of Markdown, its title (if the file names one) and what was left out."""

    pages: tuple[Page, ...]
    title: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def has_text(self) -> bool:
        """True when some page holds text."""
        return any(page.text.strip() for page in self.pages)

    @property
    def chars(self) -> int:
        """Characters of text over all pages."""
        return sum(len(page.text) for page in self.pages)


def pick_title(*candidates: str | None) -> str | None:
    """The first candidate that names the document: not empty, not a file name, not an application default."""
    for candidate in candidates:
        title = squash(candidate or "")
        if is_document_title(title) and title.casefold() not in _DEFAULT_TITLES:
            return title
    return None


def squash(text: str) -> str:
    """Whitespace runs (line breaks too) as one space, trimmed."""
    return _SPACES.sub(" ", text).strip()


def heading(level: int, title: str) -> str:
    """A Markdown ATX heading (levels past 6 are written as 6)."""
    return f"{'#' * min(max(level, 1), 6)} {squash(title)}"


def paragraph(text: str) -> str:
    """Body text as a Markdown paragraph whose lines are never read as headings, fences or tables."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").replace("\v", "\n").split("\n")]
    return "\n".join(_MARKDOWN_START.sub(r"\1\\\2", line) for line in lines).strip()


def list_item(text: str, depth: int = 0, *, numbered: bool = False) -> str:
    """A Markdown list item, indented two spaces per ``depth``."""
    marker = "1." if numbered else "-"
    return f"{'  ' * depth}{marker} {squash(text)}"


def table(rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table: the first row is the header; short rows are padded, cells are one line with ``|`` escaped."""
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    lines = [_row(rows[0], width), "|" + " --- |" * width]
    lines.extend(_row(row, width) for row in rows[1:])
    return "\n".join(lines)


def cell(value: object) -> str:
    """A spreadsheet or CSV value as cell text: numbers without float noise, dates in ISO 8601."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return f"{value:.{_FLOAT_DIGITS}g}"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="seconds") if value.time() != dt.time() else value.date().isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return str(value)


def trim_grid(rows: Iterable[Sequence[str]]) -> list[list[str]]:
    """Rows without empty rows, and without the columns that are empty in every row."""
    kept = [list(row) for row in rows if any(value.strip() for value in row)]
    if not kept:
        return []
    width = max(len(row) for row in kept)
    used = [column for column in range(width) if any(column < len(row) and row[column].strip() for row in kept)]
    return [[row[column] if column < len(row) else "" for column in used] for row in kept]


def join_blocks(blocks: Iterable[str]) -> str:
    """Blocks separated by blank lines (empty ones dropped)."""
    return "\n\n".join(block for block in blocks if block.strip())


def _row(values: Sequence[str], width: int) -> str:
    cells = [squash(value).replace("|", "\\|") for value in values] + [""] * (width - len(values))
    return "| " + " | ".join(cells) + " |"


class RowBudget:
    """Counts the non-empty rows read from a file's tables and refuses the file past its row, column or character
    limit, at the first row past it."""

    def __init__(self, name: str, max_rows: int, max_columns: int, max_chars: int | None = None) -> None:
        self._name = name
        self._max_rows = max_rows
        self._max_columns = max_columns
        self._max_chars = max_chars
        self.rows = 0
        self.chars = 0

    def take(self, rows: Iterable[Sequence[Any]]) -> list[list[str]]:
        """The rows as cell text; raises :class:`FileTooLargeError` at the first row past the row or column limit,
        :class:`DocumentTooLargeError` at the first row that takes the text past ``max_chars``."""
        taken: list[list[str]] = []
        for row in rows:
            values = [cell(value) for value in row]
            while values and not values[-1].strip():
                values.pop()
            if not values:
                continue
            if len(values) > self._max_columns:
                raise too_many_columns(self._name, len(values), self._max_columns)
            self.rows += 1
            if self.rows > self._max_rows:
                raise FileTooLargeError(f"{self._name}: more than {self._max_rows} rows (limits.max_table_rows); "
                                        "raise the limit or split the file")
            self.chars += sum(len(value) for value in values) + _CELL_SEPARATOR_CHARS * len(values)
            if self._max_chars is not None and self.chars > self._max_chars:
                raise DocumentTooLargeError(f"{self._name}: the tables hold more than {self._max_chars} characters "
                                            "of text (limits.max_document_chars)")
            taken.append(values)
        return taken


def too_many_columns(name: str, columns: int | str, limit: int) -> FileTooLargeError:
    """The refusal of a row wider than ``limits.max_table_columns``."""
    return FileTooLargeError(f"{name}: a row has {columns} columns, more than the limit of {limit} "
                             "(limits.max_table_columns)")
