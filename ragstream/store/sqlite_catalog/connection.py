"""The SQLite catalog's database: one connection and one lock that every role of it shares, atomic
and durable write transactions, nesting read transactions, and a full disk as a clear error."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragstream.errors import InsufficientStorageError
from ragstream.store.disk import ensure_free_space
from ragstream.store.sqlite_catalog.schema import INDEXES, SCHEMA, migrate

SQLITE_FULL = 13
SQLITE_READONLY = 8
SQLITE_IOERR = 10
PRIMARY_CODE_MASK = 0xFF  # extended result codes keep the primary code in the low byte

logger = logging.getLogger("ragstream.store")


class SqliteConnection:
    """The :class:`~ragstream.store.catalog_base.CatalogConnection` of the catalog database at ``path``
    (thread-safe: every statement runs under :attr:`lock`)."""

    def __init__(self, path: Path, wal_limit_bytes: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path = path
        self._wal_limit_bytes = wal_limit_bytes
        self.read_only = False
        """True when the catalog could only be opened read-only (e.g. a full disk): reads work, writes raise
        InsufficientStorageError."""
        try:
            self.db = _open_writable(path, wal_limit_bytes)
            """The connection (replaced when a read-only catalog opens for writing: read it under :attr:`lock`)."""
        except sqlite3.OperationalError as error:
            if not path.is_file():
                raise InsufficientStorageError(f"cannot create the catalog (is the disk full?): {error}") from error
            self.db = _open_read_only(path, error)
            self.read_only = True
            logger.warning("catalog opened read-only (%s): searches work, writes fail until there is room", error)
        self.lock = threading.RLock()
        self._read_depth = 0
        self.commit_lock = threading.RLock()
        """Writers' switches, one at a time (one process holds a SQLite catalog: a thread lock is enough)."""

    def reopen_writable(self, min_free_bytes: int) -> None:
        """Opened read-only (a full disk): open the database for writing now, between two transactions, once
        ``min_free_bytes`` stay free; InsufficientStorageError while they would not, or SQLite still cannot."""
        with self.lock:
            if not self.read_only:
                return
            ensure_free_space([self._path.parent], 0, min_free_bytes)
            try:
                writable = _open_writable(self._path, self._wal_limit_bytes)
            except sqlite3.OperationalError as error:
                raise InsufficientStorageError(f"the catalog still cannot be opened for writing: {error}") from error
            old, self.db = self.db, writable
            self.read_only = False
            old.close()
            logger.warning("catalog open for writing again: the disk has room")

    def close(self) -> None:
        """Close the database."""
        with self.lock:
            self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic, durable transaction."""
        with self.lock, _disk_full_as_error():
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    @contextmanager
    def read_transaction(self) -> Iterator[None]:
        """One read transaction: every catalog read inside it sees the same committed state (nests)."""
        with self.lock:
            outermost = self._read_depth == 0
            if outermost:
                self.db.execute("BEGIN")
            self._read_depth += 1
            try:
                yield
            finally:
                self._read_depth -= 1
                if outermost:
                    self.db.execute("COMMIT")

    def counter(self, name: str) -> int:
        """A counter's value (0 before it was first set); call it under :attr:`lock`."""
        row = self.db.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        return int(row[0]) if row else 0


class SqliteRole:
    """A role of the SQLite catalog: its statements run on the shared :class:`SqliteConnection`."""

    def __init__(self, connection: SqliteConnection) -> None:
        self._connection = connection


def _open_writable(path: Path, wal_limit_bytes: int) -> sqlite3.Connection:
    """The catalog for writing; its write-ahead log is checkpointed at ``wal_limit_bytes`` and cut back to them
    after each checkpoint (SQLite would leave it at its largest, 4 MB by default, however small the database)."""
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute(f"PRAGMA journal_size_limit={int(wal_limit_bytes)}")
        page_bytes = int(db.execute("PRAGMA page_size").fetchone()[0])
        db.execute(f"PRAGMA wal_autocheckpoint={max(1, wal_limit_bytes // page_bytes)}")
        db.executescript(SCHEMA)
        migrate(db)
        db.executescript(INDEXES)
    except sqlite3.OperationalError:
        db.close()
        raise
    return db


def _open_read_only(path: Path, cause: sqlite3.OperationalError) -> sqlite3.Connection:
    """The catalog for reading only: through SQLite's read-only mode, or, when even that needs room (the
    WAL index), as an immutable file, which is exact once no write-ahead log is left beside it."""
    wal = path.with_name(path.name + "-wal")
    modes = ["ro"] + (["ro&immutable=1"] if not wal.exists() or wal.stat().st_size == 0 else [])
    for mode in modes:
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True, check_same_thread=False,
                                 isolation_level=None)
            db.execute("SELECT COUNT(*) FROM documents").fetchone()
            return db
        except sqlite3.OperationalError:
            continue
    raise InsufficientStorageError(f"cannot open the catalog, not even read-only: {cause}") from cause


@contextmanager
def _disk_full_as_error() -> Iterator[None]:
    """SQLite's "database or disk is full" (or a catalog opened read-only) as InsufficientStorageError;
    the transaction rolled back."""
    try:
        yield
    except sqlite3.OperationalError as error:
        if (getattr(error, "sqlite_errorcode", 0) or 0) & PRIMARY_CODE_MASK in (SQLITE_FULL, SQLITE_READONLY, SQLITE_IOERR):
            raise InsufficientStorageError(f"the catalog could not write (disk full or opened read-only); nothing "
                                           f"was changed: {error}") from error
        raise

