"""Connections to the backend's PostgreSQL database: one pool per process, shared by catalog and
store, read transactions pinned to the calling thread, database errors as ragstream errors."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool, PoolTimeout

from ragstream.config import StoreConfig
from ragstream.errors import VectorDBUnavailableError, VectorDBWriteError


class Database:
    """A connection pool over ``store.url`` with the ``vector`` extension and ragstream's schema."""

    def __init__(self, config: StoreConfig, schema: str) -> None:
        if not config.url:
            raise VectorDBUnavailableError("store.url is not set")
        self._local = threading.local()
        try:
            with psycopg.connect(config.url, autocommit=True, connect_timeout=int(config.connect_timeout_seconds)) as conn:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(hashtext('ragstream.catalog'))")  # one schema creator at a time
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                    conn.execute(schema)
            self.pool = ConnectionPool(config.url, min_size=1, max_size=config.pool_size, kwargs={"autocommit": True},
                                       configure=register_vector, timeout=config.connect_timeout_seconds,
                                       open=False, name="ragstream")
            self.pool.open(wait=True, timeout=config.connect_timeout_seconds)
        except (psycopg.Error, PoolTimeout) as error:
            raise VectorDBUnavailableError(f"cannot open the PostgreSQL database at {_redact(config.url)}: {error}") from error

    def close(self) -> None:
        """Close every connection."""
        self.pool.close()

    @contextmanager
    def read(self) -> Iterator[psycopg.Connection[Any]]:
        """A REPEATABLE READ, read-only transaction: every statement in it reads one committed state.

        Nested calls on the same thread share the outermost transaction.
        """
        current = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        with self._errors(VectorDBUnavailableError), self.pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            self._local.conn = conn
            try:
                yield conn
            finally:
                self._local.conn = None

    @contextmanager
    def write(self) -> Iterator[psycopg.Connection[Any]]:
        """One atomic, durable (READ COMMITTED) transaction."""
        with self._errors(VectorDBWriteError), self.pool.connection() as conn, conn.transaction():
            yield conn

    @contextmanager
    def _errors(self, kind: type[VectorDBUnavailableError] | type[VectorDBWriteError]) -> Iterator[None]:
        try:
            yield
        except PoolTimeout as error:
            raise VectorDBUnavailableError(f"no PostgreSQL connection free or reachable: {error}") from error
        except psycopg.OperationalError as error:
            raise VectorDBUnavailableError(f"PostgreSQL is unavailable: {error}") from error
        except psycopg.Error as error:
            raise kind(f"PostgreSQL error: {error}") from error


def _redact(url: str) -> str:
    """The URL without its password."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return "store.url"
    return f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"
