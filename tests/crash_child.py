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


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _install(crash_point: str, rs: Ragstream) -> None:
    """Patch the classes of the backend this index opened (``RAGSTREAM_STORE__*`` chooses it)."""
    store_type, catalog_type = type(rs.store), type(rs.catalog)
    if crash_point == "mid_upsert":
        original = store_type.upsert

        def upsert_half(self, chunks, vectors, generation):
            half = max(1, len(chunks) // 2)
            original(self, chunks[:half], vectors[:half], generation)
            self.flush()
            _die()

        store_type.upsert = upsert_half  # type: ignore[method-assign]
    elif crash_point == "before_commit":
        catalog_type.commit_documents = lambda self, *args, **kwargs: _die()  # type: ignore[method-assign]
    elif crash_point == "before_old_delete":
        store_type.delete_generation = lambda self, *args, **kwargs: _die()  # type: ignore[method-assign]


def main() -> None:
    data_dir, folder, crash_point = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    rs = Ragstream(load_config(data_dir=data_dir))
    _install(crash_point, rs)
    print("ready", flush=True)
    rs.ingest([folder], progress=lambda outcome, source: print(outcome, source, flush=True))
    print("finished", flush=True)


if __name__ == "__main__":
    main()
