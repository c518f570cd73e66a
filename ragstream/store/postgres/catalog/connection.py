"""What every role of the PostgreSQL catalog shares: the database (one pool per process) and this
writer's owner key, whose advisory lock it holds while it lives."""

from __future__ import annotations

import contextlib
import secrets
from typing import Any

import psycopg

from ragstream.config import StoreConfig
from ragstream.errors import VectorDBUnavailableError
from ragstream.store.postgres.catalog.schema import SCHEMA
from ragstream.store.postgres.commit_lock import CommitLock
from ragstream.store.postgres.connection import Database

CLOCK = "extract(epoch FROM clock_timestamp())"
"""The database's clock in seconds since the epoch (leases are timed by it, not by any worker's)."""
BUMP = ("INSERT INTO counters(name, value) VALUES (%s, %s) "
        "ON CONFLICT (name) DO UPDATE SET value = counters.value + EXCLUDED.value RETURNING value")
"""Add to a counter; its new value."""
_OWNER_KEYS = 2**62  # random advisory-lock keys; a collision needs two live writers drawing the same one


class PostgresCatalogConnection:
    """The :class:`~ragstream.store.catalog_base.CatalogConnection` to the PostgreSQL database at ``store.url``."""

    read_only = False
    """A database server's disk is not this machine's: never opened read-only here."""

    def __init__(self, config: StoreConfig) -> None:
        self.db = Database(config, SCHEMA)
        """The pool the roles (and the postgres vector store beside them) run their transactions on."""
        self.reader_lease_seconds = config.reader_lease_seconds
        self.commit_lock = CommitLock(config)
        """Writers' switches, one at a time across every process sharing the database (commit_lock.py)."""
        # Several processes share the database: each writer marks its intents with an owner key whose
        # advisory lock it holds on a connection of its own while it lives, so recovery on another
        # process replays only the intents of writers that died (their lock is free), never a write in flight.
        self.owner = secrets.randbelow(_OWNER_KEYS) + 1
        try:
            self._owner_conn = psycopg.connect(config.url or "", autocommit=True,
                                               connect_timeout=int(config.connect_timeout_seconds))
            self._owner_conn.execute("SELECT pg_advisory_lock(%s)", (self.owner,))
        except psycopg.Error as error:
            self.db.close()
            raise VectorDBUnavailableError(f"PostgreSQL is unavailable: {error}") from error

    def reopen_writable(self, min_free_bytes: int) -> None:
        """Nothing to do: never opened read-only."""

    def close(self) -> None:
        """Release the owner lock and every connection."""
        with contextlib.suppress(psycopg.Error):  # what is left of our intents is recovery's now
            self._owner_conn.execute("SELECT pg_advisory_unlock(%s)", (self.owner,))  # at once, not when the server
        self._owner_conn.close()                                                       # notices the closed socket
        self.commit_lock.close()
        self.db.close()


class PostgresRole:
    """A role of the PostgreSQL catalog: its transactions run on the shared :class:`PostgresCatalogConnection`."""

    def __init__(self, connection: PostgresCatalogConnection) -> None:
        self._connection = connection
        self._db = connection.db


def one(conn: psycopg.Connection[Any], query: str, params: tuple[Any, ...]) -> int:
    """The integer the query returns."""
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return int(row[0])
