"""Shared pytest fixtures.

The index fixtures (``embedder``, ``make_index``) come from ``index_fixtures.py`` and the real
LLM servers (``smollm2_server``, ``qwen_server``) from ``llm_server.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from index_fixtures import embedder, make_index  # noqa: F401 - re-exported fixtures
from llm_server import qwen_server, smollm2_server  # noqa: F401 - re-exported fixtures

SHARED_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real-data directory beside the repo (../shared/data); skips the test when absent."""
    if not SHARED_DATA_DIR.is_dir():
        pytest.skip(f"real test data not found at {SHARED_DATA_DIR} (expected ../shared/data beside the repo)")
    return SHARED_DATA_DIR
