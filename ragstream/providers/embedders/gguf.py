"""``embedding.provider = "gguf"``: any GGUF model as the embedder, run by llama.cpp (the prebuilt ``xllamacpp``
wheel, ``pip install 'ragstream[local]'``) in a child process ragstream manages (docs/local-models.md).

The child is the one ``llm.provider = "local"`` uses (:mod:`ragstream.providers.local_llm`), started in embedding
mode: llama.cpp's server on 127.0.0.1, reached over ``/v1/embeddings`` (vectors) and ``/tokenize`` (token counts).
Why a child and not in the ragstream process: a model that crashes or runs out of memory takes down only the child
(started again on the next call), llama.cpp's server takes over SIGINT/SIGTERM in the process it runs in, and the
loopback round trip costs well under a millisecond beside the milliseconds of the model's own work
(``bench/gguf_embedder.py`` measures both ways).

Pooling and prefixes: ``embedding.pooling`` / ``query_prefix`` / ``passage_prefix`` when set, else what the file's
metadata says (:mod:`ragstream.providers.gguf_metadata`: ``<arch>.pooling_type``; the sentence-transformers prompts
a converter may store), else mean pooling and no prefix (llama.cpp can mean-pool any model, chat models too).
A text longer than ``embedding.gguf_context`` tokens is cut to that many; an empty text (which llama.cpp refuses)
gets the zero vector. The embedder's ``model_id`` and the index
fingerprint carry the file's path, size and sha256: another file is another model, so ``reindex``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import httpx
import numpy as np

from ragstream.config import EmbeddingConfig
from ragstream.errors import EmbedderUnavailableError, EmbeddingFailureError, LLMUnavailableError, ModelUnavailableError
from ragstream.observability import request_id_headers
from ragstream.providers.embedders.base import BatchedEmbedder
from ragstream.providers.embedders.openai_compatible import parse_embeddings
from ragstream.providers.gguf_metadata import embedding_metadata
from ragstream.providers.local_llm import LocalModelServer, LocalModelSpec, server_for

GGUF_POOLINGS = ("mean", "cls", "last")
"""The poolings llama.cpp offers for embeddings."""
SPECIAL_TOKEN_ROOM = 8
"""Tokens kept free for the model's special tokens when a text is judged short enough to send as text."""
KNOBS = ("embedding.gguf_start_timeout_seconds", "embedding.gguf_restart_backoff_seconds")


class GgufEmbedder(BatchedEmbedder):
    """A GGUF file's pooled vectors from a llama.cpp child process; thread-safe (one client, one child)."""

    def __init__(self, config: EmbeddingConfig) -> None:
        if importlib.util.find_spec("xllamacpp") is None:
            raise EmbedderUnavailableError("embedding.provider=gguf needs llama.cpp's prebuilt wheel: "
                                           "pip install 'ragstream[local]'")
        path = Path(config.model).expanduser()
        if not path.is_file():
            raise EmbedderUnavailableError(f"embedding.model {config.model!r} is not a file: with provider=gguf it "
                                           "names a GGUF model file")
        try:
            metadata = embedding_metadata(path, max_array_depth=config.gguf_max_array_depth)
        except (ModelUnavailableError, OSError) as error:
            raise EmbedderUnavailableError(f"embedding.model {config.model!r}: {getattr(error, 'message', error)}") from error
        self.pooling = _pooling(config.pooling, metadata.pooling, path)
        self.query_prefix = config.query_prefix if config.query_prefix is not None else metadata.query_prefix or ""
        self.passage_prefix = (config.passage_prefix if config.passage_prefix is not None
                               else metadata.document_prefix or "")
        self._context = config.gguf_context
        self._batch_size = max(1, config.batch_size)
        self._timeout = config.timeout_seconds
        self._dimensions = config.dimensions or 0
        self.server: LocalModelServer = server_for(
            LocalModelSpec(path.resolve(), context=config.gguf_context, threads=config.threads, alias=path.name,
                           pooling=self.pooling),
            start_timeout=config.gguf_start_timeout_seconds, restart_backoff=config.gguf_restart_backoff_seconds,
            knobs=KNOBS)
        self._client = httpx.Client(timeout=config.timeout_seconds)
        settings = f"pooling={self.pooling}" + (f",passage_prefix={self.passage_prefix!r}" if self.passage_prefix else "")
        self.model_id = f"gguf:{config.gguf_identity()}:{settings}"

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the model's own tokenizer, special tokens included."""
        return len(self._tokenize(text))

    def _inputs(self, texts: list[str]) -> list[str | list[int]]:
        """Each text as text when it surely fits the context (a token covers at least one UTF-8 byte), else its
        first ``gguf_context`` tokens."""
        return [text if len(text.encode()) + SPECIAL_TOKEN_ROOM <= self._context
                else self._tokenize(text)[:self._context] for text in texts]

    def _base(self) -> str:
        try:
            return self.server.base_url().removesuffix("/v1")
        except LLMUnavailableError as error:
            raise EmbedderUnavailableError(error.message) from error

    def _post(self, route: str, body: dict[str, object]) -> httpx.Response:
        try:
            response = self._client.post(self._base() + route, json=body, headers=request_id_headers(),
                                         timeout=self._timeout)
        except httpx.TimeoutException as error:
            raise EmbedderUnavailableError(f"the GGUF embedding model did not answer within {self._timeout:g}s "
                                           "(embedding.timeout_seconds)") from error
        except httpx.HTTPError as error:
            raise EmbedderUnavailableError(f"the GGUF embedding model process is unreachable: {error}; its log "
                                           f"ends with:\n{self.server.log_tail()}") from error
        if response.status_code >= 500:
            raise EmbedderUnavailableError(f"the GGUF embedding model answered {response.status_code}: "
                                           f"{response.text[:300]}")
        if response.status_code >= 400:
            raise EmbeddingFailureError(f"the GGUF embedding model refused the texts ({response.status_code}): "
                                        f"{response.text[:300]}")
        return response

    def _request(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts``; an empty text (llama.cpp refuses one) gets the zero vector, close to nothing."""
        filled = [index for index, text in enumerate(texts) if text]
        if not filled:
            return np.zeros((len(texts), self.dimensions), dtype=np.float32)
        response = self._post("/v1/embeddings", {"input": self._inputs([texts[i] for i in filled]),
                                                 "encoding_format": "float"})
        vectors = parse_embeddings(response, len(filled), self._dimensions)
        if not self._dimensions:
            self._dimensions = int(vectors.shape[1])
        if len(filled) == len(texts):
            return vectors
        rows = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        rows[filled] = vectors
        return rows

    def _tokenize(self, text: str) -> list[int]:
        response = self._post("/tokenize", {"content": text, "add_special": True})
        tokens = response.json().get("tokens")
        if not isinstance(tokens, list):
            raise EmbedderUnavailableError("the GGUF embedding model's /tokenize answered without a token list")
        return [int(token) for token in tokens]


def _pooling(configured: str | None, from_file: str | None, path: Path) -> str:
    """``embedding.pooling``, else the file's, else mean; refuses what llama.cpp cannot pool by."""
    if configured is not None:
        if configured not in GGUF_POOLINGS:
            raise EmbedderUnavailableError(f"embedding.pooling={configured} is not offered by llama.cpp: with "
                                           f"provider=gguf use one of {', '.join(GGUF_POOLINGS)}")
        return configured
    if from_file == "rank":
        raise EmbedderUnavailableError(f"{path.name} is a reranking model (its pooling_type is rank), not an embedder")
    return from_file if from_file in GGUF_POOLINGS else "mean"
