"""The PostgreSQL catalog: the SQLite catalog's tables and protocol in a database every worker shares, one
module per role over one shared
:class:`~ragstream.store.postgres.catalog.connection.PostgresCatalogConnection`; the factory
(:func:`ragstream.store.factory.postgres_catalog`) composes them."""

from __future__ import annotations

from ragstream.store.postgres.catalog.cache import PostgresEmbeddingCache
from ragstream.store.postgres.catalog.collections import PostgresCollections
from ragstream.store.postgres.catalog.connection import PostgresCatalogConnection
from ragstream.store.postgres.catalog.conversations import PostgresConversations
from ragstream.store.postgres.catalog.documents import PostgresDocuments
from ragstream.store.postgres.catalog.feedback import PostgresFeedback
from ragstream.store.postgres.catalog.jobs import PostgresJobQueue
from ragstream.store.postgres.catalog.migration_rows import PostgresMigrationRows
from ragstream.store.postgres.catalog.reads import PostgresReads
from ragstream.store.postgres.catalog.roots import PostgresRoots
from ragstream.store.postgres.catalog.schema import SCHEMA
from ragstream.store.postgres.catalog.settings import PostgresSettings
from ragstream.store.postgres.catalog.versions import PostgresVersions

__all__ = [
           "SCHEMA",
           "PostgresCatalogConnection",
           "PostgresCollections",
           "PostgresConversations",
           "PostgresDocuments",
           "PostgresEmbeddingCache",
           "PostgresFeedback",
           "PostgresJobQueue",
           "PostgresMigrationRows",
           "PostgresReads",
           "PostgresRoots",
           "PostgresSettings",
           "PostgresVersions",
]
