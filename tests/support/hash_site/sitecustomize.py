"""Puts the hash embedder into every Python process started with this folder on PYTHONPATH and
``RAGSTREAM_TEST_HASH_EMBEDDER=1``: the worker processes ``ragstream serve --workers N`` spawns run no
code of the command line that started them, so this is how a fast-tier server's workers get it
(``server_process.running_server(..., hash_embedder=True, workers=N)``). With
``RAGSTREAM_TEST_UPLOAD_FAULTS=1`` it also installs :mod:`support.upload_faults`
(``running_server(..., upload_faults=True)``)."""

import os
import sys
from pathlib import Path

if os.environ.get("RAGSTREAM_TEST_HASH_EMBEDDER") == "1" or os.environ.get("RAGSTREAM_TEST_UPLOAD_FAULTS") == "1":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

if os.environ.get("RAGSTREAM_TEST_HASH_EMBEDDER") == "1":
    from support import hash_embedder

    hash_embedder.install_as_default()

if os.environ.get("RAGSTREAM_TEST_UPLOAD_FAULTS") == "1":
    from support import upload_faults

    upload_faults.install()
