"""The backend factory: store.backend and store.url choose the (catalog, store) pair."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstream.config import RagstreamConfig
from ragstream.errors import ConfigError
from ragstream.store.catalog import Catalog
from ragstream.store.factory import open_backend, open_catalog
from ragstream.store.qdrant_edge import QdrantEdgeStore


def test_default_backend_is_the_embedded_one(tmp_path: Path):
    config = RagstreamConfig(data_dir=tmp_path)
    catalog, store = open_backend(config, lambda catalog: 8)
    assert isinstance(catalog, Catalog) and isinstance(store, QdrantEdgeStore)
    assert (tmp_path / "catalog.sqlite3").is_file()
    store.close()
    catalog.close()


def test_unregistered_backend_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RAGSTREAM_STORE__BACKEND", "qdrant")
    monkeypatch.setenv("RAGSTREAM_STORE__URL", "http://127.0.0.1:1")
    config = RagstreamConfig(data_dir=tmp_path)
    assert config.store.backend == "qdrant"
    with pytest.raises(ConfigError, match="qdrant"):
        open_catalog(config)
