"""Fixtures for tests on a real embedded index: real packaged model, real Qdrant Edge on disk."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ragstream import Ragstream, load_config
from ragstream.providers.embedders import Embedder, make_embedder

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLES = REPO_ROOT / "ragstream" / "samples" / "docs"


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The default local embedder (all-MiniLM-L6-v2 from its PyPI package), loaded once."""
    return make_embedder(load_config().embedding)


@pytest.fixture
def make_index(tmp_path: Path, embedder: Embedder) -> Iterator[Callable[..., Ragstream]]:
    """Factory: ``make_index(**config_overrides)`` opens a Ragstream on a fresh (or given) data dir."""
    opened: list[Ragstream] = []

    def factory(data_dir: Path | None = None, **overrides: Any) -> Ragstream:
        config = load_config(data_dir=data_dir or tmp_path / "index", **overrides)
        rs = Ragstream(config, embedder=embedder)
        opened.append(rs)
        return rs

    yield factory
    for rs in opened:
        try:
            rs.close()
        except Exception:  # noqa: BLE001 - already closed by the test
            pass
