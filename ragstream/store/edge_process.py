"""The embedded store held by a child process, so loading a built shard never stops the serving threads.

qdrant-edge holds Python's GIL while it loads a shard (13 s at a million chunks, docs/scaling.md), and every
thread of the process that loads it stops meanwhile: HTTP requests, health checks, the event loop. With
``store.edge_process`` on, :class:`EdgeProcessStore` keeps the shard in a child process
(``python -m ragstream.store.edge_child``, a :class:`~ragstream.store.qdrant_edge.QdrantEdgeStore` behind a
local socket) and forwards each store call to it. An index build is prepared by that child (its own build child
indexes a copy, :mod:`hnsw_build`); then a *second* child loads the built copy while the first one keeps
answering, the pointer file is committed, the store switches to the second child (one reference swap) and the
first one closes its shard in its own process and exits. Readers never wait for a load: the longest a reader
waits is one forwarded call.

A child that dies is started again on the next call (once per call; the shard on disk is the state). Writers are
serialised here, and an index build holds them off from the copy to the swap, as in the in-process store.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import secrets
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from multiprocessing.connection import Client, Connection
from pathlib import Path
from typing import Any

import numpy as np

from ragstream import child_process
from ragstream.config import StoreConfig
from ragstream.errors import VectorDBUnavailableError
from ragstream.models import Chunk
from ragstream.store import hnsw_build
from ragstream.store.base import Filters, RankedId, Snapshot
from ragstream.store.edge_child import AUTHKEY_ENV, READY

logger = logging.getLogger("ragstream.store")

_SOCKET = "edge.sock"


class _RetiredError(Exception):
    """The child was replaced by a build's swap after the caller picked it: call the store's current one."""


class _InFlight:
    """The calls in flight on one holder of the shard: counted on entry, refused once it retires (:class:`_RetiredError`),
    waited for before it stops."""

    def __init__(self) -> None:
        self._busy = 0
        self._retired = False
        self._quiet = threading.Condition()

    @contextmanager
    def call(self) -> Iterator[None]:
        with self._quiet:
            if self._retired:
                raise _RetiredError
            self._busy += 1
        try:
            yield
        finally:
            with self._quiet:
                self._busy -= 1
                self._quiet.notify_all()

    def retire(self, timeout: float) -> None:
        """Refuse new calls and wait (up to ``timeout``) for those in flight."""
        with self._quiet:
            self._retired = True
            self._quiet.wait_for(lambda: self._busy == 0, timeout=timeout)


class _Child:
    """One child process holding the shard, and a pool of connections to it (one call at a time on each)."""

    def __init__(self, process: subprocess.Popen[str], address: str, authkey: bytes, scratch: tempfile.TemporaryDirectory[str],
                 read_only: bool, config: StoreConfig) -> None:
        self.process = process
        self._config = config
        self.read_only = read_only
        self._address = address
        self._authkey = authkey
        self._scratch = scratch
        self._idle: queue.SimpleQueue[Connection] = queue.SimpleQueue()
        self._in_flight = _InFlight()

    @classmethod
    def start(cls, path: Path, dimensions: int, config: StoreConfig, *, read_only: bool, folder: Path | None) -> _Child:
        """Start a child that opens the shard at ``path`` (or the not yet committed built ``folder``) and wait
        until it has loaded it (``store.edge_process_start_seconds``); VectorDBUnavailableError when it fails."""
        scratch = tempfile.TemporaryDirectory(prefix="ragstream-edge-")
        address = str(Path(scratch.name) / _SOCKET)
        authkey = secrets.token_bytes(32)
        spec = {"path": str(path), "dimensions": dimensions, "config": config.model_dump(mode="json"),
                "read_only": read_only, "folder": str(folder) if folder else None, "address": address}
        process = child_process.spawn([sys.executable, "-m", "ragstream.store.edge_child", json.dumps(spec)],
                                      stderr=subprocess.PIPE, text=True, env={**os.environ, AUTHKEY_ENV: authkey.hex()})
        line = _first_line(process, config.edge_process_start_seconds)
        if not line.startswith(READY):
            try:  # it said why and exits, or it closed its output as it died: its end is known within a liveness check
                ended = f"it {_ending(process.wait(timeout=config.edge_process_liveness_seconds))}"
            except subprocess.TimeoutExpired:
                ended = (f"it was not ready within {config.edge_process_start_seconds:g} s "
                         "(store.edge_process_start_seconds) and was killed")
            process.kill()
            _, errors = process.communicate()
            scratch.cleanup()
            detail = (line or errors).strip()[-500:]
            message = f"the store process did not open the index at {folder or path}: {ended}"
            message += f": {detail}" if detail else ""
            logger.warning("%s", message)
            raise VectorDBUnavailableError(message)
        assert process.stderr is not None and process.stdout is not None
        for stream in (process.stdout, process.stderr):
            threading.Thread(target=_relay_log, args=(stream,), daemon=True).start()
        return cls(process, address, authkey, scratch, read_only=line.split()[1] == "1", config=config)

    def alive(self) -> bool:
        return self.process.poll() is None

    def call(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on the child's store; its exceptions raised here (:class:`_RetiredError` once it is stopping).

        A busy child is waited for, up to ``store.edge_process_call_seconds``; one that exits meanwhile fails the call
        at once. Either failure is a VectorDBUnavailableError, logged with its reason."""
        with self._in_flight.call():
            waited_until = time.monotonic() + self._config.edge_process_call_seconds
            try:
                try:
                    connection = self._idle.get_nowait()
                except queue.Empty:
                    connection = self._connect(method, waited_until)
                try:
                    connection.send((method, args))
                    status, value = self._reply(connection, method, waited_until)
                except BaseException:
                    connection.close()  # an abandoned call's late answer must not be read as the next call's
                    raise
                self._idle.put(connection)
            except (OSError, EOFError) as error:
                raise self._failed(method, f"{self._end()} ({type(error).__name__}: {error})") from error
        if status == "error":
            raise value
        return value

    def _connect(self, method: str, waited_until: float) -> Connection:
        """A new connection to the child. Its handshake needs the child's answers, so it runs on a thread of its own,
        waited for as a call is (:meth:`_wait`); a connection made after its caller gave up is closed."""
        made = threading.Event()
        lock = threading.Lock()
        outcome: dict[str, Any] = {}

        def connect() -> None:
            try:
                result: Connection | BaseException = Client(self._address, authkey=self._authkey)
            except BaseException as error:
                result = error
            with lock:
                if outcome.get("abandoned"):
                    if isinstance(result, Connection):
                        result.close()
                    return
                outcome["result"] = result
            made.set()

        threading.Thread(target=connect, name="ragstream-edge-connect", daemon=True).start()
        try:
            self._wait(made.wait, method, waited_until)
        except VectorDBUnavailableError:
            with lock:
                outcome["abandoned"] = True
                if isinstance(outcome.get("result"), Connection):
                    outcome["result"].close()
            raise
        result = outcome["result"]
        if isinstance(result, BaseException):
            raise result
        return result

    def _reply(self, connection: Connection, method: str, waited_until: float) -> Any:
        """The child's answer on ``connection``, waited for as a call is (:meth:`_wait`)."""
        self._wait(connection.poll, method, waited_until)
        return connection.recv()

    def _wait(self, ready: Callable[[float], bool], method: str, waited_until: float) -> None:
        """Until ``ready(timeout)`` while the child runs, up to ``waited_until``: VectorDBUnavailableError (logged) as
        soon as the child has exited, or at ``waited_until`` (``store.edge_process_call_seconds``) if it runs on."""
        waited = child_process.wait_while_alive(ready, self.process, waited_until,
                                                self._config.edge_process_liveness_seconds)
        if waited == "exited":
            raise self._failed(method, self._end())
        if waited == "timeout":
            raise self._failed(method, f"the store process (pid {self.process.pid}) is running but did not answer "
                                       f"{method} within {self._config.edge_process_call_seconds:g} s "
                                       "(store.edge_process_call_seconds)")

    def _end(self) -> str:
        """How the child ended, or that its connection failed while it still runs."""
        try:
            code = self.process.wait(timeout=self._config.edge_process_liveness_seconds)
        except subprocess.TimeoutExpired:
            return f"the store process (pid {self.process.pid}) is running but its connection failed"
        return f"the store process (pid {self.process.pid}) {_ending(code)}"

    @staticmethod
    def _failed(method: str, reason: str) -> VectorDBUnavailableError:
        logger.warning("store call %s failed: %s", method, reason)
        return VectorDBUnavailableError(f"store call {method} failed: {reason}")

    def stop(self, timeout: float) -> None:
        """Wait for the calls in flight, then close the child's input: it closes its shard and exits (killed past
        ``timeout``)."""
        deadline = time.monotonic() + timeout
        self._in_flight.retire(timeout)
        if child_process.stop(self.process, deadline - time.monotonic()):
            logger.warning("the store process did not close within %g s (store.edge_process_stop_seconds); killed",
                           timeout)
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                break
        self._scratch.cleanup()


class _Local:
    """The shard held in this process (``store.edge_process = auto`` before the first index build): the same calls as
    a :class:`_Child`, without the hop."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._in_flight = _InFlight()

    @property
    def read_only(self) -> bool:
        return bool(self.store.read_only)

    @read_only.setter
    def read_only(self, value: bool) -> None:
        pass  # the store keeps its own flag

    def alive(self) -> bool:
        return True

    def call(self, method: str, *args: Any) -> Any:
        with self._in_flight.call():
            return self.store.read_only if method == "read_only" else getattr(self.store, method)(*args)

    def stop(self, timeout: float) -> None:
        self._in_flight.retire(timeout)
        self.store.close()


class EdgeProcessStore:
    """:class:`~ragstream.store.base.VectorStore` over a Qdrant Edge shard held by a child process.

    ``store.edge_process = on``: a child from the start. ``auto``: a child when the index was built before (a built
    shard is what takes long to load); else the shard is opened here, as by the plain store, until the first
    build, whose built copy a child loads."""

    def __init__(self, path: Path, dimensions: int, config: StoreConfig, *, read_only: bool = False) -> None:
        from ragstream.store.qdrant_edge import QdrantEdgeStore

        self._path = path
        self._dimensions = dimensions
        self._config = config
        self._write_lock = threading.RLock()
        """Serialises writes here; a build holds it from the copy to the swap (a write to the old child then would
        be lost)."""
        self._restart_lock = threading.Lock()
        self._retiring: list[threading.Thread] = []
        self._child: _Child | _Local
        if config.edge_process == "on" or hnsw_build.last_build_points(path) > 0:
            self._child = _Child.start(path, dimensions, config, read_only=read_only, folder=None)
        else:
            self._child = _Local(QdrantEdgeStore(path, dimensions, config, read_only=read_only))

    @property
    def read_only(self) -> bool:
        return self._child.read_only

    @read_only.setter
    def read_only(self, value: bool) -> None:
        raise AttributeError("read_only follows the store process: reopen_writable() changes it")

    def _live(self) -> _Child | _Local:
        """The child in use, started again if it died (the shard on disk is its whole state)."""
        child = self._child
        if child.alive():
            return child
        with self._restart_lock:
            if self._child is child and isinstance(child, _Child):
                logger.error("the store process %s; starting it again", _ending(child.process.returncode))
                child.stop(timeout=0)
                self._child = _Child.start(self._path, self._dimensions, self._config, read_only=child.read_only,
                                           folder=None)
            return self._child

    def _call(self, method: str, *args: Any) -> Any:
        while True:
            child = self._live()
            try:
                return child.call(method, *args)
            except _RetiredError:
                if self._child is child:  # stopped and not replaced: the store was closed
                    raise VectorDBUnavailableError("the vector store is closed") from None
                # else a build swapped in the next child between picking this one and calling it

    def _write(self, method: str, *args: Any) -> Any:
        with self._write_lock:
            return self._call(method, *args)

    def reopen_writable(self, min_free_bytes: int) -> None:
        with self._write_lock:
            child = self._live()
            child.call("reopen_writable", min_free_bytes)
            child.read_only = bool(child.call("read_only"))

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray, generation: int) -> None:
        self._write("upsert", list(chunks), vectors, generation)

    def delete_generation(self, document_id: str, generation: int) -> None:
        self._write("delete_generation", document_id, generation)

    def flush(self) -> None:
        self._write("flush")

    def set_collections(self, document_id: str, collections: Sequence[str]) -> None:
        self._write("set_collections", document_id, list(collections))

    def maybe_optimize(self) -> bool:
        """Build the HNSW index when the policy says so: the serving child prepares the built copy, a second child
        loads it while the first keeps answering, then the store switches to the second."""
        if self.read_only:
            return False
        with self._write_lock:
            prepared = self._call("prepare_build")
            if prepared is None:
                return False
            folder, old_folder, points = Path(prepared[0]), Path(prepared[1]), int(prepared[2])
            try:
                fresh = _Child.start(self._path, self._dimensions, self._config, read_only=False, folder=folder)
            except VectorDBUnavailableError as error:
                logger.warning("HNSW build not swapped in; searches stay exact: %s", error)
                hnsw_build.discard(folder)
                return False
            try:
                hnsw_build.commit(self._path, folder)
            except OSError as error:
                logger.warning("HNSW build not swapped in; searches stay exact: %s", error)
                fresh.stop(self._config.edge_process_stop_seconds)
                hnsw_build.discard(folder)
                return False
            old, self._child = self._child, fresh  # the switch: new calls go to the child holding the built shard
            retire = threading.Thread(target=self._retire, args=(old, old_folder), name="ragstream-edge-retire")
            retire.start()
            self._retiring.append(retire)
            try:
                hnsw_build.record_build(self._path, points)
            except OSError as error:
                logger.warning("could not record the HNSW build (the next one may come early): %s", error)
            return True

    def settle(self) -> None:
        """Wait until every shard a build replaced is closed (in its own process) and deleted."""
        while self._retiring:
            self._retiring.pop().join()

    def _retire(self, old: _Child | _Local, old_folder: Path) -> None:
        old.stop(self._config.edge_process_stop_seconds)
        hnsw_build.discard(old_folder)

    def search_dense(self, vector: np.ndarray, limit: int, filters: Filters | None,
                     snapshot: Snapshot) -> list[tuple[Chunk, float]]:
        return self._call("search_dense", vector, limit, filters, snapshot)

    def search_bm25(self, text: str, limit: int, filters: Filters | None,
                    snapshot: Snapshot) -> list[tuple[Chunk, float]]:
        return self._call("search_bm25", text, limit, filters, snapshot)

    def rank_dense(self, vector: np.ndarray, limit: int, filters: Filters | None,
                   snapshot: Snapshot) -> list[RankedId]:
        return [RankedId._make(row) for row in self._call("rank_dense", vector, limit, filters, snapshot)]

    def rank_bm25(self, text: str, limit: int, filters: Filters | None, snapshot: Snapshot) -> list[RankedId]:
        return [RankedId._make(row) for row in self._call("rank_bm25", text, limit, filters, snapshot)]

    def fetch(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        return self._call("fetch", list(chunk_ids)) if chunk_ids else {}

    def count(self, filters: Filters | None = None) -> int:
        return int(self._call("count", filters))

    def chunks_of(self, document_id: str, generation: int) -> list[Chunk]:
        return self._call("chunks_of", document_id, generation)

    def points_of(self, document_id: str, generation: int) -> list[tuple[Chunk, np.ndarray]]:
        return self._call("points_of", document_id, generation)

    def info(self) -> Mapping[str, Any]:
        child = self._child
        return {**self._call("info"), "process": child.process.pid if isinstance(child, _Child) else os.getpid()}

    def close(self) -> None:
        self.settle()
        self._child.stop(self._config.edge_process_stop_seconds)


def _ending(code: int) -> str:
    """How a process with exit code ``code`` ended: its signal's name or its exit status."""
    name = child_process.signal_name(code)
    if name is None:
        return f"exited with status {code}"
    return f"was killed by {name}" if name.startswith("SIG") else f"was killed by signal {name}"


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The child's first line of output (its ready line, or why it failed); '' when it said nothing in time."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    return process.stdout.readline() if ready else ""


def _relay_log(stream: Any) -> None:
    """The child's output lines, into this process's log (they would fill the pipe otherwise)."""
    for line in stream:
        if line.strip():
            logger.warning("store process: %s", line.rstrip())
