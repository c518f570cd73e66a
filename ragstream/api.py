"""The public Python API. The CLI, the HTTP server and the web UI are thin shells over it.

>>> from ragstream import Ragstream
>>> rs = Ragstream()                      # embedded store under ./ragstream_data
>>> rs.ingest(["docs/"])                  # IngestReport
>>> rs.search("how do I set a timeout?")  # SearchResult with ranked, attributed hits
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ragstream.config import RagstreamConfig, load_config
from ragstream.errors import DocumentNotFoundError, EmbedderUnavailableError
from ragstream.ingestion import Ingestor, ProgressCallback
from ragstream.models import Chunk, DocumentRecord, IngestReport, LoadedDocument, SearchMode, SearchResult
from ragstream.providers.embedders import Embedder, make_embedder
from ragstream.retrieval.searcher import Searcher
from ragstream.store.base import Filters, VectorStore
from ragstream.store.catalog import Catalog
from ragstream.store.qdrant_edge import QdrantEdgeStore
from ragstream.store.visibility import Visibility


class Ragstream:
    """One ragstream index: its config, catalog, vector store and models."""

    def __init__(self, config: RagstreamConfig | None = None, *, embedder: Embedder | None = None) -> None:
        self.config = config or load_config()
        data_dir = Path(self.config.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        self._embedder = embedder
        self._embedder_error: EmbedderUnavailableError | None = None
        self._embedder_lock = threading.Lock()
        self.catalog = Catalog(data_dir / "catalog.sqlite3")
        self.visibility = Visibility()
        self.store: VectorStore = QdrantEdgeStore(data_dir / "qdrant", self._vector_size(), self.config.store)
        self.ingestor = Ingestor(self.config, self.catalog, self.store, self.embedder, self.visibility)
        self.searcher = Searcher(self.store, self.embedder, self.config.retrieval, self.visibility,
                                 self.config.limits.max_query_chars)
        self.ingestor.recover()

    # -- models ----------------------------------------------------------------------------------

    def embedder(self) -> Embedder:
        """The embedder, loaded on first use; raises EmbedderUnavailableError if it cannot load."""
        with self._embedder_lock:
            if self._embedder is None:
                if self._embedder_error is not None:
                    raise self._embedder_error
                try:
                    self._embedder = make_embedder(self.config.embedding)
                except EmbedderUnavailableError as error:
                    self._embedder_error = error
                    raise
            return self._embedder

    def _vector_size(self) -> int:
        """The store's vector size: configured, remembered from creation, or asked of the embedder.

        Remembering it lets an existing index open (and fall back to BM25) without the embedder.
        """
        size = self.config.embedding.dimensions or self.catalog.setting("vector_size")
        if size is None:
            size = self.embedder().dimensions
            self.catalog.set_setting("vector_size", size)
        return size

    # -- documents -------------------------------------------------------------------------------

    def ingest(
        self, paths: Iterable[str | Path], *, metadata: dict[str, Any] | None = None, progress: ProgressCallback | None = None
    ) -> IngestReport:
        """Ingest files and folders; unchanged documents are skipped, bad files reported."""
        return self.ingestor.ingest_paths(paths, metadata=metadata, progress=progress)

    def ingest_documents(self, docs: Iterable[LoadedDocument], *, progress: ProgressCallback | None = None) -> IngestReport:
        """Ingest documents built in memory (upsert by document_id)."""
        return self.ingestor.ingest_documents(docs, progress=progress)

    def documents(self) -> list[DocumentRecord]:
        """Every live document."""
        return self.catalog.list()

    def document(self, document_id: str) -> DocumentRecord:
        """One document's record; raises DocumentNotFoundError."""
        record = self.catalog.get(document_id)
        if record is None:
            raise DocumentNotFoundError(f"no document with id {document_id!r}")
        return record

    def document_chunks(self, document_id: str) -> list[Chunk]:
        """The live chunks of one document, in order."""
        return self.store.chunks_of(document_id, self.document(document_id).generation)

    def delete(self, document_id: str) -> None:
        """Delete a document and every chunk of it."""
        self.ingestor.delete(document_id)

    def reindex(self, *, progress: ProgressCallback | None = None) -> IngestReport:
        """Rebuild every document under the current chunking and embedding settings."""
        return self.ingestor.reindex(progress=progress)

    def stale_documents(self) -> list[str]:
        """Documents indexed with other settings than the current config."""
        return self.ingestor.stale_documents()

    # -- retrieval -------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        mode: SearchMode | None = None,
        top_k: int | None = None,
        filters: Filters | None = None,
        score_threshold: float | None = None,
        query_vector: np.ndarray | None = None,
    ) -> SearchResult:
        """Hybrid (default), dense or BM25 search with metadata filters."""
        return self.searcher.search(query, mode=mode, top_k=top_k, filters=filters,
                                    score_threshold=score_threshold, query_vector=query_vector)

    def stats(self) -> dict[str, Any]:
        """Counts for observability."""
        return {"documents": len(self.catalog.list()), **self.store.info()}

    def close(self) -> None:
        """Flush and release the store and catalog."""
        self.store.flush()
        self.store.close()
        self.catalog.close()

    def __enter__(self) -> Ragstream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
