"""Faults no real file can cause once every reader's exceptions are typed: reading an upload, or ingesting it after
it was read, raises an exception that is no ragstream error (a bug). Mocks by necessity: they stand for bugs we do
not have yet. ``hash_site/sitecustomize.py`` installs them in a server process started with
``running_server(..., upload_faults=True)``; only files whose name holds a marker are hit."""

from __future__ import annotations

from typing import Any

READ_MARKER = "reader-bug"
"""An upload whose file name holds this fails in its reader with a RuntimeError."""
INGEST_MARKER = "ingest-bug"
"""An upload whose file name holds this is read, then its ingest raises a RuntimeError."""
ENV = "RAGSTREAM_TEST_UPLOAD_FAULTS"


def install() -> None:
    """Wrap the upload's loader and the facade's ingest so that marked files raise."""
    from ragstream import api
    from ragstream.server import intake

    load = intake.load_bytes
    ingest = api.Ragstream.ingest_documents

    def load_bytes(data: bytes, filename: str, *args: Any, **kwargs: Any) -> Any:
        if READ_MARKER in filename:
            raise RuntimeError(f"{filename}: a reader's bug (injected by the test)")
        return load(data, filename, *args, **kwargs)

    def ingest_documents(self: api.Ragstream, docs: Any, **kwargs: Any) -> Any:
        docs = list(docs)
        if any(INGEST_MARKER in str(doc.metadata.get("filename", "")) for doc in docs):
            raise RuntimeError("an ingest bug (injected by the test)")
        return ingest(self, docs, **kwargs)

    intake.load_bytes = load_bytes  # type: ignore[assignment]
    api.Ragstream.ingest_documents = ingest_documents  # type: ignore[method-assign]
