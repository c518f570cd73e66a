"""Child process for the crash tests: ingest a folder and get SIGKILLed.

``python -m support.crash_child DATA_DIR FOLDER MODE`` (the tests folder on ``PYTHONPATH``). The child opens
the index and loads the embedding model before it prints ``ready``, so what follows is the ingest alone. MODE
is one of ``crash_steps.CRASH_POINTS``, where the process SIGKILLs itself (``mid_upsert``, ``before_commit``,
``before_old_delete``), or ``steps``: it prints ``step NAME`` as each write step begins and the parent kills
it at a moment of its choosing. An ingest that is not killed closes the index, prints ``finished`` and exits
with 0.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import NoReturn

from ragstream import Ragstream, load_config
from support.crash_steps import CRASH_POINTS, announce_steps, install_crash

STEPS = "steps"


def _die(crash_point: str) -> NoReturn:
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable: SIGKILL cannot be caught")


def _say(line: str) -> None:
    print(line, flush=True)


def main() -> None:
    data_dir, folder, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    if mode not in (*CRASH_POINTS, STEPS):
        raise SystemExit(f"unknown mode {mode!r}: one of {', '.join((*CRASH_POINTS, STEPS))}")
    rs = Ragstream(load_config(data_dir=data_dir))  # RAGSTREAM_STORE__* chooses the backend
    rs.embedder().inner.embed_documents(["load the model before the ingest starts"])  # not through the cache: no write
    store_type, versions_type, documents_type = type(rs.store), type(rs.catalog.versions), type(rs.catalog.documents)
    if mode == STEPS:
        announce_steps(store_type, versions_type, documents_type, lambda step: _say(f"step {step}"))
    else:
        install_crash(store_type, documents_type, mode, _die)
    _say("ready")
    rs.ingest([folder], progress=lambda outcome, source: _say(f"{outcome} {source}"))
    rs.close()
    _say("finished")


if __name__ == "__main__":
    main()
