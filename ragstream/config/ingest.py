"""``ingest``: which files a folder ingest takes and the checks a document must pass (docs/cli.md, docs/formats.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragstream.config.base import ConfigSection

DEFAULT_INCLUDE = (
    "*.md", "*.markdown", "*.txt", "*.rst", "*.html", "*.htm", "*.pdf",
    "*.docx", "*.docm", "*.pptx", "*.pptm", "*.xlsx", "*.xlsm", "*.csv", "*.tsv",
    "*.odt", "*.odp", "*.ods", "*.epub",
)
"""Document types a folder ingest takes: Markdown, text, reStructuredText, HTML, PDF, Word, PowerPoint, Excel
(macro-enabled too: their text is read, their macros never run), CSV/TSV, OpenDocument and EPUB. Images are read
(by OCR) when named or uploaded; add ``*.png``, ``*.jpg``... here to OCR them in folders too."""
DEFAULT_EXCLUDE = ("node_modules/", "__pycache__/", "site-packages/")
DEFAULT_IGNORE_FILES = (".gitignore", ".ragstreamignore")


class IngestConfig(ConfigSection):
    """How ingest jobs run, and the checks a document must pass before it is chunked."""

    reindex_stale: bool = Field(
        True, description="After an ingest or a sync, re-chunk and re-embed (from their stored text) the documents "
        "indexed under other chunking or embedding settings; false: they are only flagged (ragstream status) until "
        "ragstream reindex. Why on: docs/configuration.md.")
    write_batch_chunks: int = Field(
        256,
        description="Chunks of several documents embedded and written together. Bigger batches embed "
        "faster (full model batches, one flush); each document still switches atomically.",
    )

    required_metadata: list[str] = Field(
        default_factory=list,
        description="Metadata keys every ingested document must carry (e.g. source, doc_type, "
        "last_update_date); a document missing one fails with InvalidDocumentError.",
    )
    pdf_title_size_ratio: float = Field(
        1.25,
        gt=1.0,
        description="A PDF without a metadata or outline title takes its first page's largest line as "
        "title when that type is at least this many times the body type; otherwise its first line.",
    )
    include: list[str] = Field(
        default_factory=lambda: list(DEFAULT_INCLUDE),
        description="Folder ingest takes files matching one of these .gitignore-style globs (relative to the "
        "folder, case-insensitive): document types by default. Files named on their own are always taken.",
    )
    exclude: list[str] = Field(
        default_factory=lambda: list(DEFAULT_EXCLUDE),
        description="Folder ingest skips files and folders matching one of these .gitignore-style globs.",
    )
    ignore_files: list[str] = Field(
        default_factory=lambda: list(DEFAULT_IGNORE_FILES),
        description="Ignore files honoured in every folder walked, with .gitignore rules (a deeper file wins).",
    )
    skip_hidden: bool = Field(True, description="Folder ingest skips files and folders whose name starts with a dot.")
    follow_symlinks: Literal["never", "inside_root", "always"] = Field(
        "inside_root",
        description="A file symlink met in a folder (ingest, sync, watch): inside_root follows it only when its "
        "target, resolved, lies inside the folder given; never skips every link; always follows links anywhere "
        "(a link to /etc/passwd becomes a shared document). Checked again when the file is opened. Links to "
        "folders are never walked; a file named on its own is always read.",
    )
    read_hidden_sheets: bool = Field(
        False, description="Spreadsheets: also read sheets hidden in the workbook (by default only visible sheets).")
