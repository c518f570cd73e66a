"""Chunking strategies and the dispatcher that applies one to a loaded document."""

from __future__ import annotations

from collections.abc import Callable

from ragstream.config import ChunkingConfig
from ragstream.documents.chunkers.markdown import chunk_markdown
from ragstream.documents.chunkers.split_when_needed import chunk_split_when_needed
from ragstream.documents.chunkers.tokens import TokenCounter, approximate_token_count
from ragstream.documents.chunkers.window import chunk_window
from ragstream.documents.markdown_dialects import clean_markdown
from ragstream.documents.markdown_structure import HeadingStack, scan_lines, stack_after
from ragstream.documents.mimes import MARKDOWN, SECTIONS_SPAN_PAGES, STRUCTURED
from ragstream.models import LoadedDocument, TextPiece

__all__ = [
    "TokenCounter",
    "approximate_token_count",
    "chunk_document",
    "chunk_markdown",
    "chunk_split_when_needed",
    "chunk_window",
]

Chunker = Callable[[str, ChunkingConfig, TokenCounter, HeadingStack], list[TextPiece]]
"""A strategy: the text, the settings, the token counter and the heading path in force where the text starts."""

_CHUNKERS: dict[str, Chunker] = {
    "window": chunk_window,
    "markdown": chunk_markdown,
    "split_when_needed": chunk_split_when_needed,
}


def chunk_document(
    doc: LoadedDocument, config: ChunkingConfig, count_tokens: TokenCounter = approximate_token_count
) -> list[TextPiece]:
    """Cut ``doc`` into pieces with the configured strategy.

    ``auto`` means markdown for Markdown and for the formats whose loader writes Markdown-flavoured
    text (HTML, EPUB, office files, CSV: see :data:`~ragstream.documents.mimes.STRUCTURED`) and window
    otherwise. Each page is chunked on its own, so PDF and slide pieces keep their page number (and
    OCR'd pages their ``ocr`` mark); in a PDF a section runs on across pages, so a page starts under the headings
    in force where the page before ended. Pieces shorter than ``min_chunk_chars`` after stripping are dropped.
    Markdown is first rewritten by :func:`clean_markdown` (admonitions, includes, attribute
    lists and comments of documentation-site dialects become plain structure).
    """
    chunker = _CHUNKERS[resolve_strategy(config.strategy, doc.mime)]
    pieces: list[TextPiece] = []
    stack: HeadingStack = ()
    for page in doc.pages:
        text = clean_markdown(page.text) if doc.mime == MARKDOWN else page.text
        for piece in chunker(text, config, count_tokens, stack):
            if len(piece.text.strip()) >= config.min_chunk_chars:
                pieces.append(piece.model_copy(update={"page": page.number, "ocr": page.ocr}))
        if doc.mime in SECTIONS_SPAN_PAGES:
            stack = stack_after(scan_lines(text), stack)
    return pieces


def resolve_strategy(strategy: str, mime: str) -> str:
    """The concrete strategy for ``mime`` when ``strategy`` is ``auto``."""
    if strategy != "auto":
        return strategy
    return "markdown" if mime in STRUCTURED else "window"
