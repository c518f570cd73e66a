"""Open the (catalog, vector store) pair the config names: ``store.backend`` and ``store.url``.

Each backend is one entry of :data:`BACKENDS`: a function that opens its catalog, and one that
opens its vector store once the vector size is known (the size may come from the catalog, which
remembers it, so an index opens without loading the embedder). A catalog is its roles composed
over one connection (:func:`sqlite_catalog`, :func:`postgres_catalog`; the roles are in
:mod:`ragstream.store.catalog_base`). docs/backends.md tells how to choose one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragstream.config import RagstreamConfig, StoreConfig
from ragstream.errors import ConfigError
from ragstream.store.base import VectorStore
from ragstream.store.catalog_base import Catalog

SQLITE_CATALOG_FILE = "catalog.sqlite3"
QDRANT_EDGE_DIR = "qdrant"


@dataclass(frozen=True)
class Backend:
    """How to open one backend's catalog and store."""

    open_catalog: Callable[[RagstreamConfig], Catalog]
    open_store: Callable[[RagstreamConfig, Catalog, int], VectorStore]
    needs_url: bool = False
    url_example: str = "postgresql://user:password@host:5432/ragstream; `ragstream db start` runs a local one"
    single_process: Callable[[RagstreamConfig], str | None] = lambda config: None
    """Why several processes may not open this backend's index at once (None: they may)."""


def sqlite_catalog(path: Path, config: StoreConfig | None = None) -> Catalog:
    """The SQLite catalog at ``path`` (created if new; read-only on a full disk): every role over one connection;
    ``config`` (default: the defaults) bounds its write-ahead log."""
    from ragstream.store import sqlite_catalog as sqlite

    connection = sqlite.SqliteConnection(path, (config or StoreConfig()).sqlite_wal_limit_bytes)
    return Catalog(connection=connection, documents=sqlite.SqliteDocuments(connection),
                   versions=sqlite.SqliteVersions(connection), reads=sqlite.SqliteReads(connection),
                   roots=sqlite.SqliteRoots(connection), settings=sqlite.SqliteSettings(connection),
                   cache=sqlite.SqliteEmbeddingCache(connection), conversations=sqlite.SqliteConversations(connection),
                   migration=sqlite.SqliteMigrationRows(connection), jobs=sqlite.SqliteJobQueue(connection),
                   collections=sqlite.SqliteCollections(connection),
                   feedback=sqlite.SqliteFeedback(connection))


def postgres_catalog(config: StoreConfig) -> Catalog:
    """The catalog in the PostgreSQL database at ``config.url``: every role over one pool and owner lock."""
    from ragstream.store.postgres import MISSING_PACKAGES

    try:
        from ragstream.store.postgres import catalog as pg
    except ImportError as error:
        raise ConfigError(f"{MISSING_PACKAGES} ({error})") from error
    connection = pg.PostgresCatalogConnection(config)
    return Catalog(connection=connection, documents=pg.PostgresDocuments(connection),
                   versions=pg.PostgresVersions(connection), reads=pg.PostgresReads(connection),
                   roots=pg.PostgresRoots(connection), settings=pg.PostgresSettings(connection),
                   cache=pg.PostgresEmbeddingCache(connection), conversations=pg.PostgresConversations(connection),
                   migration=pg.PostgresMigrationRows(connection), jobs=pg.PostgresJobQueue(connection),
                   collections=pg.PostgresCollections(connection),
                   feedback=pg.PostgresFeedback(connection))


def _sqlite_catalog(config: RagstreamConfig) -> Catalog:
    data_dir = Path(config.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    return sqlite_catalog(data_dir / SQLITE_CATALOG_FILE, config.store)


def _qdrant_edge_store(config: RagstreamConfig, catalog: Catalog, dimensions: int) -> VectorStore:
    """The embedded store; read-only when its catalog is, or when the disk has less than
    ``limits.min_free_disk_bytes`` free besides what loading the shard may allocate (a full disk: searches
    still work, writes are refused; loading it for writing then would be a SIGBUS)."""
    from ragstream.store.disk import free_bytes
    from ragstream.store.qdrant_edge import QdrantEdgeStore, room_to_load

    data_dir = Path(config.data_dir)
    shard = data_dir / QDRANT_EDGE_DIR
    read_only = catalog.read_only or free_bytes(data_dir) < config.limits.min_free_disk_bytes + room_to_load(shard)
    if config.store.edge_process == "off":
        return QdrantEdgeStore(shard, dimensions, config.store, read_only=read_only)
    from ragstream.store.edge_process import EdgeProcessStore

    return EdgeProcessStore(shard, dimensions, config.store, read_only=read_only)


def _postgres_catalog(config: RagstreamConfig) -> Catalog:
    return postgres_catalog(config.store)


def _postgres_store(config: RagstreamConfig, catalog: Catalog, dimensions: int) -> VectorStore:
    from ragstream.store.postgres import open_store

    return open_store(config.store, catalog, dimensions)


def _qdrant_catalog(config: RagstreamConfig) -> Catalog:
    """The qdrant backend's catalog: SQLite in data_dir, or PostgreSQL at ``store.qdrant.catalog_url``."""
    url = config.store.qdrant.catalog_url
    if not url:
        return _sqlite_catalog(config)
    return _postgres_catalog(config.model_copy(update={"store": config.store.model_copy(update={"url": url})}))


def _embedded_only(config: RagstreamConfig) -> str | None:
    return (f"store.backend 'qdrant_edge' keeps the index in {config.data_dir} (SQLite + an embedded shard), which "
            "one process opens at a time; several workers need a server backend: store.backend 'postgres', or "
            "'qdrant' on a server with store.qdrant.catalog_url")


def _qdrant_single_process(config: RagstreamConfig) -> str | None:
    url = str(config.store.url or "")
    if not url.startswith(("http://", "https://")):
        return (f"store.backend 'qdrant' with store.url {url!r} runs qdrant-client's local mode, which one process "
                "opens at a time; several workers need a Qdrant server (http://...)")
    if not config.store.qdrant.catalog_url:
        return ("store.backend 'qdrant' keeps its catalog in SQLite in data_dir, which one process opens at a time; "
                "several workers need the catalog in PostgreSQL: set store.qdrant.catalog_url")
    return None


def _qdrant_store(config: RagstreamConfig, catalog: Catalog, dimensions: int) -> VectorStore:
    from ragstream.store.qdrant_server import QdrantServerStore

    return QdrantServerStore(str(config.store.url), dimensions, config.store)


BACKENDS: dict[str, Backend] = {
    "qdrant_edge": Backend(_sqlite_catalog, _qdrant_edge_store, single_process=_embedded_only),
    "postgres": Backend(_postgres_catalog, _postgres_store, needs_url=True),
    "qdrant": Backend(_qdrant_catalog, _qdrant_store, needs_url=True,
                      url_example="http://127.0.0.1:6333 (a Qdrant server), or :memory: or a folder for qdrant-client's "
                      "local mode", single_process=_qdrant_single_process),
}
"""Registered backends by ``store.backend`` name; a backend module adds its entry here."""


def backend(config: RagstreamConfig) -> Backend:
    """The configured backend; ConfigError when it is unknown, not installed yet or lacks ``store.url``."""
    name = config.store.backend
    found = BACKENDS.get(name)
    if found is None:
        raise ConfigError(f"store.backend {name!r} is not available in this build; "
                          f"choose one of {', '.join(sorted(BACKENDS))}")
    if found.needs_url and not config.store.url:
        raise ConfigError(f"store.backend {name!r} needs store.url (RAGSTREAM_STORE__URL), e.g. {found.url_example}")
    return found


def single_process_reason(config: RagstreamConfig) -> str | None:
    """Why the configured index cannot be served by several processes at once (None: it can)."""
    return backend(config).single_process(config)


def open_catalog(config: RagstreamConfig) -> Catalog:
    """The configured backend's catalog."""
    return backend(config).open_catalog(config)


def open_store(config: RagstreamConfig, catalog: Catalog, dimensions: int) -> VectorStore:
    """The configured backend's vector store, for vectors of ``dimensions``."""
    return backend(config).open_store(config, catalog, dimensions)


def open_backend(config: RagstreamConfig, dimensions: Callable[[Catalog], int]) -> tuple[Catalog, VectorStore]:
    """(catalog, store) of the configured backend; ``dimensions(catalog)`` gives the vector size.

    The catalog is closed again when the store cannot open.
    """
    chosen = backend(config)
    catalog = chosen.open_catalog(config)
    try:
        return catalog, chosen.open_store(config, catalog, dimensions(catalog))
    except BaseException:
        catalog.close()
        raise
