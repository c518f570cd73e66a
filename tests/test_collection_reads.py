"""The catalog reads of collections do not grow with the documents (docs/collections.md): a collection's count, a
question's scope, the rights over a list of documents and an answer's labels each take a fixed number of
statements, whatever the index holds. Counted on the real catalog connection of each backend (SQLite on disk, the
session PostgreSQL) by a wrapper that records each statement and the rows it returned."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from ragstream import Ragstream

STORE = re.compile(r"\bchunks\b")
"""The PostgreSQL vector store's statements (on the catalog's database): a move rewrites each document's payloads."""


class _Rows:
    """A real cursor that counts the rows read from it."""

    def __init__(self, cursor: Any, log: list[list[Any]]) -> None:
        self._cursor = cursor
        self._entry = log[-1]

    def fetchone(self) -> Any:
        row = self._cursor.fetchone()
        self._entry[1] += row is not None
        return row

    def fetchall(self) -> list[Any]:
        rows = self._cursor.fetchall()
        self._entry[1] += len(rows)
        return list(rows)

    def __iter__(self) -> Iterator[Any]:
        for row in self._cursor:
            self._entry[1] += 1
            yield row

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class _Counted:
    """A real database connection (sqlite3 or psycopg) whose statements are logged as [text, rows read]."""

    def __init__(self, real: Any, log: list[list[Any]]) -> None:
        self._real = real
        self._log = log

    def execute(self, statement: Any, *params: Any) -> _Rows:
        self._log.append([str(statement), 0])
        return _Rows(self._real.execute(statement, *params), self._log)

    def executemany(self, statement: Any, *params: Any) -> Any:
        self._log.append([str(statement), 0])
        return self._real.executemany(statement, *params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@contextmanager
def counted(rs: Ragstream) -> Iterator[list[list[Any]]]:
    """Every statement the catalog runs inside the block, with the rows each returned."""
    log: list[list[Any]] = []
    connection: Any = rs.catalog.connection
    if hasattr(connection.db, "read"):  # PostgreSQL: every role runs its statements in db.read() / db.write()
        database = connection.db
        originals = {name: getattr(database, name) for name in ("read", "write")}

        def wrapped(name: str) -> Callable[[], Any]:
            @contextmanager
            def transaction() -> Iterator[_Counted]:
                with originals[name]() as conn:
                    yield _Counted(conn, log)
            return transaction

        for name in originals:
            setattr(database, name, wrapped(name))
        try:
            yield log
        finally:
            for name in originals:
                delattr(database, name)
    else:  # SQLite: every role runs its statements on connection.db
        real = connection.db
        connection.db = _Counted(real, log)
        try:
            yield log
        finally:
            connection.db = real


@pytest.fixture(params=["sqlite", "postgres"])
def index(request: pytest.FixtureRequest, make_fast_index) -> Ragstream:
    """An index on the backend under test."""
    store = ({"store": {"backend": "postgres", "url": request.getfixturevalue("postgres_url")}}
             if request.param == "postgres" else {})
    return make_fast_index(**store)


def _upload(rs: Ragstream, home: str, numbers: range) -> list[str]:
    """Shared documents uploaded into the collection ``home`` (so its editors may change them)."""
    return [rs.ingest_bytes(f"# Page {n}\n\nThe launch rule {n} asks for {n + 2} signatures.\n".encode(), f"p{n}.md",
                            source=f"upload://collection-{home}/p{n}.md", collection="handbook").document_ids[0]
            for n in numbers]


def _reads(rs: Ragstream, ids: list[str]) -> dict[str, tuple[int, int]]:
    """(statements, rows read) of each collection read of Bob's over the documents ``ids`` of ``handbook`` (which
    Bob edits), put in Alice's ``mine`` and taken out again."""
    found: dict[str, tuple[int, int]] = {}

    def measure(name: str, read: Callable[[], object]) -> None:
        with counted(rs) as log:
            read()
        catalog = [(statement, rows) for statement, rows in log if not STORE.search(statement)]
        found[name] = (len(catalog), sum(rows for _, rows in catalog))

    measure("collection", lambda: rs.collection("handbook", user="bob"))
    measure("scope", lambda: rs.collection_service.scope(["handbook", "mine"], "bob"))
    scope = rs.collection_service.scope(["handbook", "mine"], "bob")
    measure("labels", lambda: rs.collection_service.labeller(scope)(ids))
    measure("add", lambda: rs.add_to_collection("mine", ids, user="bob"))
    measure("remove", lambda: rs.remove_from_collection("mine", ids, user="bob"))
    assert rs.collection("mine", user="bob").documents == 0
    return found


def test_collection_reads_do_not_grow_with_the_documents(index: Ragstream) -> None:
    handbook = index.create_collection("handbook", access="all", editors=["bob"]).collection_id
    index.create_collection("mine", access="readers", readers=["bob"], editors=["bob"], user="alice")
    few = _reads(index, _upload(index, handbook, range(2)))
    many = _reads(index, [*_upload(index, handbook, range(2)), *_upload(index, handbook, range(2, 7))])
    statements = {name: (few[name][0], many[name][0]) for name in few}
    assert all(a == b for a, b in statements.values()), f"statements (2 documents, 7 documents): {statements}"
    # a count and a scope read a row per collection, not one per document (a move reads the documents it moves)
    rows = {name: (few[name][1], many[name][1]) for name in ("collection", "scope")}
    assert all(a == b for a, b in rows.values()), f"rows read (2 documents, 7 documents): {rows}"
