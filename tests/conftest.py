"""Shared pytest fixtures and the two test tiers (see ``tests/README.md``).

The index fixtures (``embedder``, ``make_index`` on the real model; ``hash_embedder``,
``make_fast_index`` on the deterministic hash embedder) come from ``index_fixtures.py`` and the
real LLM servers (``smollm2_server``, ``qwen_server``) from ``llm_server.py``.

Tier rule: a test that uses the real model, a real LLM server or the real data beside the repo is
``slow``. Besides the ``pytestmark``/``@pytest.mark.slow`` marks in the modules, every test that
requests one of :data:`SLOW_FIXTURES` (directly or through another fixture) is marked ``slow`` at
collection, so ``pytest -m "not slow"`` never loads the model or starts a server through them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.backend_fixtures import backend, catalog, opened, postgres_server, postgres_url  # noqa: F401 - re-exported fixtures
from support.index_fixtures import (  # noqa: F401 - re-exported fixtures
    embedder,
    hash_embedder,
    hash_embedder_by_default,
    make_fast_index,
    make_index,
)
from support.llm_server import llama_servers_alive, qwen_server, smollm2_server  # noqa: F401 - re-exported fixtures
from support.qdrant_backend import qdrant  # noqa: F401 - re-exported fixture

from ragstream.providers.circuit import reset_breakers

SHARED_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SLOW_FIXTURES = frozenset({"embedder", "smollm2_server", "qwen_server", "shared_data"})
"""Fixtures that make a test ``slow``: the real embedding model (``make_index`` uses ``embedder``),
the real LLM servers and the real-data directory."""


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real-data directory beside the repo (../shared/data); skips the test when absent."""
    if not SHARED_DATA_DIR.is_dir():
        pytest.skip(f"real test data not found at {SHARED_DATA_DIR} (expected ../shared/data beside the repo)")
    return SHARED_DATA_DIR


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test that uses a fixture of :data:`SLOW_FIXTURES`."""
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _fast_tests_never_load_the_model(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test not marked ``slow`` fails if it loads the real embedding model in this process.

    Loading it is what the fast tier avoids (use ``make_fast_index``/``hash_embedder``, or mark the
    test ``slow``). Failing to load it (a missing model, the BM25 fallback) stays allowed.
    """
    if request.node.get_closest_marker("slow") is not None:
        return
    from ragstream.providers.embedders.onnx_runtime import OnnxEmbedder
    from ragstream.providers.embedders.sentence_transformers import (
        SentenceTransformerEmbedder,
    )

    for model_class in (SentenceTransformerEmbedder, OnnxEmbedder):
        def guarded(self: object, *args: object, _original=model_class.__init__, **kwargs: object) -> None:
            _original(self, *args, **kwargs)
            pytest.fail(f"{request.node.nodeid} loaded the real embedding model but is not marked slow: "
                        "use make_fast_index / hash_embedder, or mark it @pytest.mark.slow", pytrace=False)

        monkeypatch.setattr(model_class, "__init__", guarded)


@pytest.fixture(autouse=True)
def fresh_breakers() -> Iterator[None]:
    """Circuit breakers are shared per endpoint for the whole process: none leaks between tests."""
    reset_breakers()
    yield
    reset_breakers()
