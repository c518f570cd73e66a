"""Child process for the crash tests: ingest a folder and get SIGKILLed.

``python crash_child.py DATA_DIR FOLDER CRASH_POINT`` where CRASH_POINT is ``none`` (the parent
kills at a random moment) or a precise point at which the process SIGKILLs itself:
``mid_upsert`` (half of a document's points written), ``before_commit`` (all points written and
flushed, catalog not switched) or ``before_old_delete`` (catalog switched, old points still there).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from ragstream import Ragstream, load_config
from ragstream.store.catalog import Catalog
from ragstream.store.qdrant_edge import QdrantEdgeStore


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _install(crash_point: str) -> None:
    if crash_point == "mid_upsert":
        original = QdrantEdgeStore.upsert

        def upsert_half(self, chunks, vectors, generation):
            half = max(1, len(chunks) // 2)
            original(self, chunks[:half], vectors[:half], generation)
            self.flush()
            _die()

        QdrantEdgeStore.upsert = upsert_half
    elif crash_point == "before_commit":
        Catalog.commit_documents = lambda self, *args, **kwargs: _die()
    elif crash_point == "before_old_delete":
        QdrantEdgeStore.delete_generation = lambda self, *args, **kwargs: _die()


def main() -> None:
    data_dir, folder, crash_point = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    rs = Ragstream(load_config(data_dir=data_dir))
    _install(crash_point)
    print("ready", flush=True)
    rs.ingest([folder], progress=lambda outcome, source: print(outcome, source, flush=True))
    print("finished", flush=True)


if __name__ == "__main__":
    main()
