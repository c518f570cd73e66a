"""The child side of :mod:`ragstream.store.edge_process`: ``python -m ragstream.store.edge_child SPEC`` opens the
embedded store, prints its ready line and answers the parent's calls on an authenticated local socket, one thread
per connection, until the parent goes (its end of the child's stdin closes)."""

from __future__ import annotations

import json
import logging
import os
import pickle
import sys
import threading
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection, Listener
from pathlib import Path
from typing import Any

from ragstream.child_process import until_parent_gone
from ragstream.config import StoreConfig
from ragstream.errors import VectorDBUnavailableError

AUTHKEY_ENV = "RAGSTREAM_EDGE_AUTHKEY"
"""The environment variable that hands the child the socket's authentication key (never on the command line)."""
READY = "ready"
"""The first word of the child's first line once its store is open (``ready 0|1``: 1 when opened read-only)."""
CALLS = frozenset({
    "reopen_writable", "upsert", "delete_generation", "flush", "set_collections", "search_dense", "search_bm25",
    "rank_dense", "rank_bm25", "fetch", "count", "chunks_of", "points_of", "info", "prepare_build", "read_only",
})
"""What a child answers: the store's calls, plus the build's first half and the read-only flag."""


def _serve(spec: Mapping[str, Any]) -> None:
    """Open the store, say ready, and answer calls on the socket until told to close (one thread per connection)."""
    from ragstream.store.qdrant_edge import QdrantEdgeStore

    config = StoreConfig.model_validate(spec["config"])
    folder = Path(spec["folder"]) if spec["folder"] else None
    try:
        store = QdrantEdgeStore(Path(spec["path"]), int(spec["dimensions"]), config,
                                read_only=bool(spec["read_only"]), folder=folder)
    except Exception as error:  # reported on the ready line; the parent raises it
        print(f"failed {type(error).__name__}: {error}", flush=True)
        sys.exit(1)
    listener = Listener(spec["address"], authkey=bytes.fromhex(os.environ[AUTHKEY_ENV]))
    print(f"{READY} {int(store.read_only)}", flush=True)
    threading.Thread(target=_exit_with_parent, args=(store,), daemon=True).start()
    calls: dict[str, Callable[..., Any]] = {name: getattr(store, name) for name in CALLS if name != "read_only"}
    calls["read_only"] = lambda: store.read_only
    for name in ("rank_dense", "rank_bm25"):  # plain tuples: a named tuple pickles one class reference per hit
        calls[name] = lambda *args, rank=calls[name]: [tuple(hit) for hit in rank(*args)]
    while True:
        try:
            connection = listener.accept()
        except Exception:  # a client that failed authentication or went away
            continue
        threading.Thread(target=_answer, args=(connection, calls), daemon=True).start()


def _exit_with_parent(store: Any) -> None:
    """The parent holds this child's stdin open: end of input means it is gone, so close the shard and exit."""
    until_parent_gone()
    store.close()
    os._exit(0)


def _answer(connection: Connection, calls: Mapping[str, Callable[..., Any]]) -> None:
    while True:
        try:
            method, args = connection.recv()
        except (OSError, EOFError):
            return
        try:
            reply: tuple[str, Any] = ("ok", calls[method](*args))
        except Exception as error:
            reply = ("error", error)
        try:
            connection.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as error:
            connection.send(("error", VectorDBUnavailableError(f"{method} failed: {reply[1]!r} ({error})")))
        except (OSError, EOFError):
            return


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
    _serve(json.loads(sys.argv[1]))
