"""The SQLite catalog (the embedded default, one process): one module per role over one shared
:class:`~ragstream.store.sqlite_catalog.connection.SqliteConnection`; the factory
(:func:`ragstream.store.factory.sqlite_catalog`) composes them."""

from __future__ import annotations

from ragstream.store.sqlite_catalog.cache import SqliteEmbeddingCache
from ragstream.store.sqlite_catalog.collections import SqliteCollections
from ragstream.store.sqlite_catalog.connection import SqliteConnection
from ragstream.store.sqlite_catalog.conversations import SqliteConversations
from ragstream.store.sqlite_catalog.documents import SqliteDocuments
from ragstream.store.sqlite_catalog.feedback import SqliteFeedback
from ragstream.store.sqlite_catalog.jobs import SqliteJobQueue
from ragstream.store.sqlite_catalog.migration_rows import SqliteMigrationRows
from ragstream.store.sqlite_catalog.reads import SqliteReads
from ragstream.store.sqlite_catalog.roots import SqliteRoots
from ragstream.store.sqlite_catalog.settings import SqliteSettings
from ragstream.store.sqlite_catalog.versions import SqliteVersions

__all__ = ["SqliteCollections", "SqliteConnection", "SqliteConversations", "SqliteDocuments", "SqliteEmbeddingCache",
           "SqliteFeedback", "SqliteJobQueue", "SqliteMigrationRows", "SqliteReads", "SqliteRoots", "SqliteSettings",
           "SqliteVersions"]
