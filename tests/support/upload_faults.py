"""Faults no real file can cause once every reader's exceptions are typed: reading an upload, or ingesting it after
it was read, raises an exception that is no ragstream error (a bug), or reading never ends (a server killed
mid-request). Mocks by necessity: they stand for bugs we do not have yet. ``hash_site/sitecustomize.py``
installs them in a server process started with ``running_server(..., upload_faults=True)``; only files whose
name holds a marker are hit."""

from __future__ import annotations

import time
from typing import Any

READ_MARKER = "reader-bug"
"""An upload whose file name holds this fails in its reader with a RuntimeError."""
INGEST_MARKER = "ingest-bug"
"""An upload whose file name holds this is read, then its ingest raises a RuntimeError."""
HANG_MARKER = "reader-hang"
"""An upload whose file name holds this never finishes reading (the test kills the server meanwhile)."""
HANG_SECONDS = 3600.0
ENV = "RAGSTREAM_TEST_UPLOAD_FAULTS"


def install() -> None:
    """Wrap the upload's loader and the write service's ingest so that marked files raise."""
    from ragstream.writes import service, uploads

    load = uploads.load_bytes
    ingest = service.WriteService.ingest_documents

    def load_bytes(data: bytes, filename: str, *args: Any, **kwargs: Any) -> Any:
        if READ_MARKER in filename:
            raise RuntimeError(f"{filename}: a reader's bug (injected by the test)")
        if HANG_MARKER in filename:
            time.sleep(HANG_SECONDS)
        return load(data, filename, *args, **kwargs)

    def ingest_documents(self: service.WriteService, target: Any, docs: Any, **kwargs: Any) -> Any:
        docs = list(docs)
        if any(INGEST_MARKER in str(doc.metadata.get("filename", "")) for doc in docs):
            raise RuntimeError("an ingest bug (injected by the test)")
        return ingest(self, target, docs, **kwargs)

    uploads.load_bytes = load_bytes  # type: ignore[assignment]
    service.WriteService.ingest_documents = ingest_documents  # type: ignore[method-assign]
