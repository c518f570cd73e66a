"""Where the tests find a Qdrant for the ``qdrant`` store backend (not a test module).

``local``: qdrant-client's local mode in a temp folder, always. ``server``: the real Qdrant server
at ``RAGSTREAM_TEST_QDRANT_URL`` (e.g. ``http://127.0.0.1:6333``), each test in a collection of
its own that is dropped afterwards; skipped with the reason when the variable is unset (no Qdrant
server binary is available on the CI machines).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SERVER_ENV = "RAGSTREAM_TEST_QDRANT_URL"
API_KEY_ENV = "RAGSTREAM_TEST_QDRANT_API_KEY"
QDRANT_TARGETS = ("local", "server")


@dataclass(frozen=True)
class QdrantTarget:
    """A place for one test's Qdrant collection: ``url`` and ``collection`` for ``store.url`` and
    ``store.qdrant.collection``."""

    kind: str
    url: str
    collection: str
    api_key: str | None = None

    def settings(self) -> dict:
        """The ``store.qdrant`` section for this target."""
        return {"collection": self.collection, **({"api_key": self.api_key} if self.api_key else {})}

    def overrides(self) -> dict:
        """``load_config`` overrides selecting this target as the store backend."""
        return {"store": {"backend": "qdrant", "url": self.url, "qdrant": self.settings()}}


def qdrant_target(kind: str, tmp_path: Path) -> Iterator[QdrantTarget]:
    """Yield a fresh target of ``kind`` (skipping ``server`` without a server); drop it after."""
    if kind == "local":
        yield QdrantTarget("local", str(tmp_path / "qdrant-local"), "ragstream")
        return
    url = os.environ.get(SERVER_ENV)
    if not url:
        pytest.skip(f"no Qdrant server: set {SERVER_ENV}=http://host:6333 to run the qdrant backend against one")
    collection = f"ragstream_test_{uuid.uuid4().hex[:12]}"
    api_key = os.environ.get(API_KEY_ENV)
    yield QdrantTarget("server", url, collection, api_key)
    from qdrant_client import QdrantClient

    client = QdrantClient(url=url, api_key=api_key)
    client.delete_collection(collection)
    client.close()


@pytest.fixture(params=QDRANT_TARGETS)
def qdrant(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QdrantTarget]:
    """A Qdrant target: local mode always, the real server when ``RAGSTREAM_TEST_QDRANT_URL`` is set."""
    yield from qdrant_target(request.param, tmp_path)
