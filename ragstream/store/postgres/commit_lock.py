"""The index's commit lock on PostgreSQL: one writer at a time, across every process and host sharing the database.

A writer re-reads the live versions, allocates generations, writes a batch's chunks and switches the documents
under this lock (``Ingestor.commit_lock``), so two processes writing the same document cannot both take the
version they saw as the one to replace (which left the first writer's version behind, visible beside the
second's). In this process it is a reentrant thread lock; across processes, a session advisory lock held on a
connection of its own while the outermost holder is inside. The server releases it when that connection ends,
so a SIGKILLed writer never keeps it. Waiting is bounded by ``store.commit_lock_timeout_seconds``.
"""

from __future__ import annotations

import contextlib
import threading
from types import TracebackType
from typing import Any

import psycopg

from ragstream.config import StoreConfig
from ragstream.errors import VectorDBUnavailableError

LOCK_KEY = "ragstream.commit"
"""Hashed (``hashtext``) to the advisory-lock key; advisory locks are per database, so one index per database."""
_MILLISECONDS = 1000


class CommitLock:
    """A reentrant lock held by one thread of one process at a time among all those opening the database."""

    def __init__(self, config: StoreConfig) -> None:
        self._url = config.url or ""
        self._connect_timeout = int(config.connect_timeout_seconds)
        self._timeout_ms = int(config.commit_lock_timeout_seconds * _MILLISECONDS)
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._conn: psycopg.Connection[Any] | None = None

    def __enter__(self) -> CommitLock:
        self._thread_lock.acquire()
        if self._depth == 0:
            try:
                self._take()
            except BaseException:
                self._thread_lock.release()
                raise
        self._depth += 1
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._depth -= 1
        try:
            if self._depth == 0:
                self._give_back()
        finally:
            self._thread_lock.release()

    def _take(self) -> None:
        try:
            if self._conn is None or self._conn.closed:
                self._conn = psycopg.connect(self._url, autocommit=True, connect_timeout=self._connect_timeout)
                self._conn.execute(f"SET lock_timeout = {self._timeout_ms}")
            self._conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (LOCK_KEY,))
        except psycopg.errors.LockNotAvailable as error:
            raise VectorDBUnavailableError(
                f"another process held the index's commit lock for over {self._timeout_ms / _MILLISECONDS:g} s "
                "(store.commit_lock_timeout_seconds); try again") from error
        except psycopg.Error as error:
            self._drop()
            raise VectorDBUnavailableError(f"PostgreSQL is unavailable: {error}") from error

    def _give_back(self) -> None:
        try:
            if self._conn is not None:
                self._conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (LOCK_KEY,))
        except psycopg.Error:
            self._drop()  # the server releases a session's advisory locks when its connection ends

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
        self._conn = None

    def close(self) -> None:
        """Close the lock's connection (releasing the lock if held)."""
        with self._thread_lock:
            self._drop()
