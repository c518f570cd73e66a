"""Documents: sniff, load and chunk files into :class:`~ragstream.models.Chunk` objects."""

from ragstream.documents.chunk_builder import build_chunks
from ragstream.documents.chunkers import approximate_token_count, chunk_document
from ragstream.documents.loaders import load_bytes, load_file
from ragstream.documents.sniff import sniff_mime

__all__ = ["approximate_token_count", "build_chunks", "chunk_document", "load_bytes", "load_file", "sniff_mime"]
