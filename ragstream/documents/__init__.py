"""Documents: sniff, load and chunk files into :class:`~ragstream.models.Chunk` objects.

The names below are imported on first use: searching an index needs none of the parsers
(HTML, PDF), so commands that only read stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragstream.lazy import lazy_getattr

if TYPE_CHECKING:
    from ragstream.documents.chunk_builder import build_chunks
    from ragstream.documents.chunkers import approximate_token_count, chunk_document
    from ragstream.documents.loaders import load_bytes, load_file
    from ragstream.documents.sniff import sniff_mime

__all__ = ["approximate_token_count", "build_chunks", "chunk_document", "load_bytes", "load_file", "sniff_mime"]

_LAZY = {
    "build_chunks": "ragstream.documents.chunk_builder",
    "approximate_token_count": "ragstream.documents.chunkers",
    "chunk_document": "ragstream.documents.chunkers",
    "load_bytes": "ragstream.documents.loaders",
    "load_file": "ragstream.documents.loaders",
    "sniff_mime": "ragstream.documents.sniff",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
