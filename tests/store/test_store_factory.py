"""The backend factory: store.backend and store.url choose the (catalog, store) pair."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragstream.config import RagstreamConfig
from ragstream.errors import ConfigError
from ragstream.store.edge_process import EdgeProcessStore
from ragstream.store.factory import BACKENDS, open_backend, open_catalog, single_process_reason
from ragstream.store.qdrant_edge import QdrantEdgeStore
from ragstream.store.sqlite_catalog import SqliteConnection


def test_default_backend_is_the_embedded_one(tmp_path: Path):
    config = RagstreamConfig(data_dir=tmp_path)
    catalog, store = open_backend(config, lambda catalog: 8)
    assert isinstance(catalog.connection, SqliteConnection) and isinstance(store, EdgeProcessStore)
    assert store.info()["process"] == os.getpid(), "an index never built is held in this process (auto)"
    assert (tmp_path / "catalog.sqlite3").is_file()
    store.close()
    catalog.close()


def test_the_embedded_store_in_this_process_or_in_a_child(tmp_path: Path):
    for mode, kind in (("off", QdrantEdgeStore), ("on", EdgeProcessStore)):
        config = RagstreamConfig(data_dir=tmp_path / mode, store={"edge_process": mode})
        catalog, store = open_backend(config, lambda catalog: 8)
        assert isinstance(store, kind)
        if mode == "on":
            assert store.info()["process"] != os.getpid()
        store.close()
        catalog.close()


def test_unregistered_backend_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delitem(BACKENDS, "qdrant")  # as in a build without the backend module
    monkeypatch.setenv("RAGSTREAM_STORE__BACKEND", "qdrant")
    monkeypatch.setenv("RAGSTREAM_STORE__URL", "http://127.0.0.1:1")
    config = RagstreamConfig(data_dir=tmp_path)
    assert config.store.backend == "qdrant"
    with pytest.raises(ConfigError, match="qdrant"):
        open_catalog(config)


def test_qdrant_backend_opens_a_sqlite_catalog_and_a_qdrant_collection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from ragstream.store.qdrant_server import QdrantServerStore

    monkeypatch.setenv("RAGSTREAM_STORE__BACKEND", "qdrant")
    with pytest.raises(ConfigError, match=r"needs store.url .* http://127.0.0.1:6333"):
        open_catalog(RagstreamConfig(data_dir=tmp_path))
    monkeypatch.setenv("RAGSTREAM_STORE__URL", str(tmp_path / "qdrant-local"))
    catalog, store = open_backend(RagstreamConfig(data_dir=tmp_path), lambda catalog: 8)
    assert isinstance(catalog.connection, SqliteConnection) and isinstance(store, QdrantServerStore)
    assert store.info()["backend"] == "qdrant" and (tmp_path / "catalog.sqlite3").is_file()
    store.close()
    catalog.close()


@pytest.mark.parametrize(("store", "shared"), [
    ({"backend": "qdrant_edge"}, False),
    ({"backend": "postgres", "url": "postgresql://u:p@db:5432/r"}, True),
    ({"backend": "qdrant", "url": "http://qdrant:6333"}, False),  # its catalog: SQLite in data_dir
    ({"backend": "qdrant", "url": ":memory:"}, False),  # qdrant-client's local mode
    ({"backend": "qdrant", "url": "http://qdrant:6333", "qdrant": {"catalog_url": "postgresql://u:p@db/r"}}, True),
])
def test_which_stores_several_processes_may_serve(tmp_path: Path, store: dict, shared: bool):
    reason = single_process_reason(RagstreamConfig(data_dir=tmp_path, store=store))
    assert (reason is None) == shared
    if reason is not None:  # says why, and what would do
        assert store["backend"] in reason and ("postgres" in reason or "catalog_url" in reason or "server" in reason)
