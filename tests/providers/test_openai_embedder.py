"""The OpenAI-compatible embedder against a real local /v1/embeddings server.

The server is a small stdlib HTTP server in this test that embeds with the real packaged MiniLM
model. Its first answers can be scripted faults (429, 500), because a real provider cannot be
made to fail on demand.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from ragstream.config import EmbeddingConfig
from ragstream.errors import EmbedderUnavailableError, EmbeddingFailureError
from ragstream.providers.circuit import reset_breakers
from ragstream.providers.embedders.openai_compatible import OpenAICompatibleEmbedder


@pytest.fixture(autouse=True)
def fresh_breakers() -> Iterator[None]:
    """Circuit breakers are shared per endpoint for the whole process: none leaks between tests."""
    reset_breakers()
    yield
    reset_breakers()


class _EmbeddingServer(ThreadingHTTPServer):
    def __init__(self, embedder) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.embedder = embedder
        self.faults: list[int] = []
        self.requests: list[dict] = []


class _Handler(BaseHTTPRequestHandler):
    server: _EmbeddingServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        if self.server.faults:
            self._reply(self.server.faults.pop(0), {"error": {"message": "scripted fault"}})
            return
        vectors = self.server.embedder.embed_documents(body["input"])
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
        self._reply(200, {"object": "list", "data": data, "model": body["model"]})

    def _reply(self, status: int, payload: dict) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(embedder) -> Iterator[_EmbeddingServer]:
    httpd = _EmbeddingServer(embedder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()


def _remote(server: _EmbeddingServer, **overrides) -> OpenAICompatibleEmbedder:
    port = server.server_address[1]
    settings = {"provider": "openai", "base_url": f"http://127.0.0.1:{port}/v1", "model": "minilm",
                "batch_size": 4, "retry_base_seconds": 0.01, "retry_max_seconds": 0.02, **overrides}
    return OpenAICompatibleEmbedder(EmbeddingConfig(**settings))


BATCHING_TOLERANCE = 4e-3
"""How far apart the components of one text's unit vector may be when the local encoder embeds it in different
batches. That encoder is torch in bfloat16 (8 significant bits: a rounding step of 2**-8 = 3.9e-3 of a value),
whose kernels round differently for other batch shapes: 1.1e-3 apart measured on a CPU with AVX-512 and AMX
(ten texts in one batch against batches of four), 2.0e-3 here (a text alone against it among nine texts of
other lengths). Cosines stay >= 0.9999. The ONNX encoder gives the very same vector in any batch."""
TEXTS = ["sentence number 0 about timeouts and connection pools", "short", "Cats purr.",
         "a much longer sentence about connection pools, read and write timeouts, and retries in httpx clients",
         *(f"sentence number {i} about timeouts and connection pools" for i in range(4, 10))]


def test_remote_vectors_match_local_ones_and_are_batched(server, embedder):
    remote = _remote(server)
    vectors = remote.embed_documents(TEXTS)
    assert vectors.shape == (10, embedder.dimensions)
    assert [len(r["input"]) for r in server.requests] == [4, 4, 2]
    assert remote.dimensions == embedder.dimensions
    same_batches = np.vstack([embedder.embed_documents(r["input"]) for r in server.requests])
    assert np.allclose(vectors, same_batches, rtol=0, atol=1e-6)  # the remote path itself changes nothing
    local = embedder.embed_documents(TEXTS)  # one batch of ten: the local encoder's own batching differs
    assert np.abs(vectors - local).max() <= BATCHING_TOLERANCE
    assert np.sum(vectors * local, axis=1).min() >= 0.9999


def test_retries_on_429_and_5xx_then_succeeds(server):
    server.faults = [429, 500, 503]
    vectors = _remote(server).embed_queries(["hello"])
    assert vectors.shape[0] == 1 and len(server.requests) == 4


def test_gives_up_after_max_retries_and_never_retries_400(server):
    server.faults = [500] * 10
    with pytest.raises(EmbeddingFailureError):
        _remote(server, max_retries=2).embed_queries(["hello"])
    assert len(server.requests) == 3
    server.requests.clear()
    server.faults = [400]
    with pytest.raises(EmbeddingFailureError):
        _remote(server).embed_queries(["hello"])
    assert len(server.requests) == 1


def test_unreachable_endpoint_is_reported_as_unavailable():
    dead = OpenAICompatibleEmbedder(EmbeddingConfig(provider="openai", base_url="http://127.0.0.1:9/v1",
                                                    max_retries=1, retry_base_seconds=0.01, dimensions=384))
    with pytest.raises(EmbedderUnavailableError):
        dead.embed_queries(["hello"])
