"""The PostgreSQL + pgvector backend (``store.backend = "postgres"``): catalog, vectors and BM25 in
one database at ``store.url``. Needs ``pip install 'ragstream[postgres]'``; docs/backends.md."""

from __future__ import annotations

from ragstream.config import StoreConfig
from ragstream.errors import ConfigError
from ragstream.store.base import VectorStore
from ragstream.store.catalog_base import Catalog

MISSING_PACKAGES = "the postgres backend needs its packages: pip install 'ragstream[postgres]'"


def open_store(config: StoreConfig, catalog: Catalog, dimensions: int) -> VectorStore:
    """The vector store beside ``catalog`` (sharing its connections when it is a postgres catalog)."""
    try:
        from ragstream.store.postgres.catalog import SCHEMA, PostgresCatalogConnection
        from ragstream.store.postgres.connection import Database
        from ragstream.store.postgres.store import PostgresStore
    except ImportError as error:
        raise ConfigError(f"{MISSING_PACKAGES} ({error})") from error
    if isinstance(catalog.connection, PostgresCatalogConnection):
        return PostgresStore(catalog.connection.db, dimensions, config)
    return PostgresStore(Database(config, SCHEMA), dimensions, config, owns_db=True)
