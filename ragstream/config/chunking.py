"""``chunking``: how documents are cut into chunks (docs/cli.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragstream.config.base import ConfigSection


class ChunkingConfig(ConfigSection):
    """How documents are cut into chunks."""

    strategy: Literal["auto", "window", "markdown", "split_when_needed"] = Field(
        "auto", description="auto = markdown-aware for the formats read as Markdown-flavoured text (Markdown, HTML, "
        "PDF, office files, EPUB, CSV: docs/formats.md), character windows otherwise (plain text)."
    )
    chunk_size: int = Field(1000, description="Window size in characters (800-1200).")
    chunk_overlap: int = Field(200, description="Window overlap in characters (150-250).")
    max_chunk_tokens: int = Field(
        8192, description="split_when_needed: keep a document whole up to this many tokens."
    )
    split_header_level: int = Field(2, description="split_when_needed: first heading level to split at.")
    fallback_header_level: int = Field(3, description="split_when_needed: heading level for oversized sections.")
    min_chunk_chars: int = Field(1, description="Chunks shorter than this many characters (after stripping) are dropped.")
