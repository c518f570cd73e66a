"""``pdf``: how a PDF's structure is read: its outline or its headings' type, into section paths (docs/formats.md)."""

from __future__ import annotations

from pydantic import Field

from ragstream.config.base import ConfigSection

DEFAULT_BOLD_FONT_MARKERS = ("bold", "black", "heavy", "semibold", "demibold", "cmbx", "cmb10")
"""Parts of a font name (case-insensitive) that say its type is bold (``Helvetica-Bold``, LaTeX's ``CMBX12``)."""


class PdfConfig(ConfigSection):
    """Section paths of PDF chunks: headings from the outline (bookmarks), else from the type of the text layer."""

    structure: bool = Field(
        True, description="Write a PDF page's headings as Markdown '#' lines (from the outline, else from the type), "
        "so chunks get a section path and never cross a section; false: pages are plain text under no heading.")
    max_outline_entries: int = Field(
        2000, ge=0, description="Outline (bookmark) entries read at most; the walk stops there and later entries "
        "are not headings. 0: the outline is ignored and headings come from the type.")
    max_outline_depth: int = Field(
        6, ge=1, le=6, description="Outline levels read at most (1-6, Markdown's heading levels); deeper entries "
        "are not headings.")
    outline_title_lines: int = Field(
        3, ge=1, description="A bookmark's title is looked for on its page in at most this many consecutive text "
        "lines (a long title wraps); not found, the heading goes where the bookmark points on the page, else on top.")
    heading_size_ratio: float = Field(
        1.15, gt=1.0, description="Without an outline, a short line whose type is at least this many times the "
        "body type (the size most characters of the document have) is a heading; larger sizes are higher levels.")
    heading_bold: bool = Field(
        True, description="Without an outline, a short line entirely in bold type (of body size or larger) is a "
        "heading too, one level below the smallest larger-type heading.")
    heading_max_chars: int = Field(
        120, ge=1, description="Lines longer than this many characters are never headings (type-based headings).")
    heading_max_levels: int = Field(
        3, ge=1, le=6, description="Type-based headings: distinct heading sizes beyond this many take the deepest "
        "level.")
    heading_max_pages_share: float = Field(
        0.5, gt=0.0, le=1.0, description="Type-based headings: a heading line (digits aside) found on more than this "
        "share of the pages of a document of several pages is a running header, not a heading.")
    bold_font_markers: list[str] = Field(
        default_factory=lambda: list(DEFAULT_BOLD_FONT_MARKERS),
        description="Parts of a font name (case-insensitive) that mark it bold.")
    tables: bool = Field(
        True, description="With structure on, find tables drawn with ruling lines (pdfplumber) and write them as "
        "Markdown tables in place of their lines of words.")
    table_min_rows: int = Field(
        2, ge=1, description="A ruled grid is a table only with at least this many rows holding text.")
    table_min_columns: int = Field(
        2, ge=1, description="A ruled grid is a table only with at least this many columns holding text (a framed "
        "code listing has one).")
    table_min_filled_share: float = Field(
        0.5, ge=0.0, le=1.0, description="A ruled grid is a table only when at least this share of its cells holds "
        "text (a figure's boxes are empty).")
    table_max_seconds: float = Field(
        30.0, gt=0, description="Seconds spent finding one PDF's tables at most; the pages after that keep their "
        "tables as lines of words, with a warning.")
