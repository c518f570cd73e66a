"""Fixtures for tests on a real embedded index (real Qdrant Edge store and SQLite catalog on disk).

Two embedders:

* ``embedder`` / ``make_index``: the real packaged model (all-MiniLM-L6-v2). Loading it and
  embedding with it is what makes a test ``slow``; ``conftest.py`` marks every test that uses
  these fixtures ``slow``.
* ``hash_embedder`` / ``make_fast_index``: :class:`hash_embedder.HashEmbedder`, deterministic
  feature hashing with no model to load, for the fast tier.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ragstream import Ragstream, load_config
from ragstream.providers.embedders import Embedder, make_embedder
from support.hash_embedder import HashEmbedder

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = REPO_ROOT / "ragstream" / "samples" / "docs"
FAST_DEFAULTS: dict[str, Any] = {"reranker": {"backend": "none"}}
"""Config defaults of ``make_fast_index``: the ReRanker keeps the fused order (what it does when no
cross-encoder loads) without trying to load one, which would import torch; a test's own overrides
replace them."""


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The default local embedder (all-MiniLM-L6-v2 from its PyPI package), loaded once."""
    return make_embedder(load_config().embedding)


@pytest.fixture
def make_index(tmp_path: Path, embedder: Embedder) -> Iterator[Callable[..., Ragstream]]:
    """Factory: ``make_index(**config_overrides)`` opens a Ragstream on a fresh (or given) data dir."""
    yield from _index_factory(tmp_path, embedder, {})


@pytest.fixture(scope="session")
def hash_embedder() -> HashEmbedder:
    """The deterministic test embedder (feature hashing, 256 dims); no model to load."""
    return HashEmbedder()


@pytest.fixture
def make_fast_index(tmp_path: Path, hash_embedder: HashEmbedder) -> Iterator[Callable[..., Ragstream]]:
    """Factory: ``make_fast_index(data_dir=None, **config_overrides)`` opens a real Ragstream (Qdrant
    Edge + SQLite catalog under ``tmp_path``) that embeds with the hash embedder.

    Overrides are :func:`ragstream.load_config` keyword arguments on top of :data:`FAST_DEFAULTS`.
    Every index it opened is closed after the test.
    """
    yield from _index_factory(tmp_path, hash_embedder, FAST_DEFAULTS)


@pytest.fixture
def hash_embedder_by_default(monkeypatch: pytest.MonkeyPatch, hash_embedder: HashEmbedder) -> HashEmbedder:
    """In this process, a Ragstream opened without an embedder (the CLI run in process) embeds with
    the hash embedder, and :data:`FAST_DEFAULTS` apply through ``RAGSTREAM_*`` environment variables.

    Patches ``ragstream.providers.index_models.make_embedder``, the one place the package builds its default embedder.
    """
    monkeypatch.setattr("ragstream.providers.index_models.make_embedder", lambda config: hash_embedder)
    for section, values in FAST_DEFAULTS.items():
        for key, value in values.items():
            monkeypatch.setenv(f"RAGSTREAM_{section.upper()}__{key.upper()}", str(value))
    return hash_embedder


def _index_factory(tmp_path: Path, embedder: Embedder, defaults: dict[str, Any]) -> Iterator[Callable[..., Ragstream]]:
    """Yield ``factory(data_dir=None, **overrides)`` opening Ragstreams over ``embedder``; close them after."""
    opened: list[Ragstream] = []

    def factory(data_dir: Path | None = None, **overrides: Any) -> Ragstream:
        config = load_config(data_dir=data_dir or tmp_path / "index", **{**defaults, **overrides})
        rs = Ragstream(config, embedder=embedder)
        opened.append(rs)
        return rs

    yield factory
    for rs in opened:
        with contextlib.suppress(Exception):  # already closed by the test
            rs.close()
