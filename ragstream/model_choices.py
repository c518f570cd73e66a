"""What runs each model of a config on this machine, and why: the passage encoder, the query encoder and the
reranker (``ragstream doctor`` and the ``serve`` start-up lines print it). Decided from the config, what is
installed and the CPU's features (:mod:`ragstream.cpu_runtime`); no model is loaded."""

from __future__ import annotations

from dataclasses import dataclass

from ragstream.config import RagstreamConfig


@dataclass(frozen=True)
class ModelChoice:
    """One model's role, what runs it and why."""

    role: str
    runtime: str
    reason: str

    def line(self) -> str:
        """``passages: onnx (ONNX Runtime): why``."""
        return f"{self.role}: {self.runtime}: {self.reason}"


def model_choices(config: RagstreamConfig) -> list[ModelChoice]:
    """The passage encoder, the query encoder and the reranker ``config`` runs here."""
    return [_passages(config), _queries(config), _reranker(config)]


def _passages(config: RagstreamConfig) -> ModelChoice:
    embedding = config.embedding
    backend = embedding.backend()
    if backend == "openai":
        return ModelChoice("passages", f"openai ({embedding.model})", f"embedding.provider=openai at {embedding.base_url}")
    if backend == "gguf":
        return ModelChoice("passages", f"gguf ({embedding.model})", "embedding.provider=gguf (llama.cpp)")
    runtime = embedding.local_runtime()
    weights = f", {embedding.onnx_export() or embedding.model}" if runtime.provider == "onnx" else ""
    return ModelChoice("passages", f"{runtime.label()}{weights}", runtime.reason)


def _queries(config: RagstreamConfig) -> ModelChoice:
    embedding = config.embedding
    passages = _passages(config)
    if embedding.backend() != "sentence_transformers":
        return ModelChoice("queries", passages.runtime, "the passage encoder")
    if embedding.query_provider == "onnx" and embedding.onnx_export() is not None:
        return ModelChoice("queries", f"onnx (ONNX Runtime), {embedding.onnx_export()}",
                           "embedding.query_provider=onnx: ~4x faster per query than torch, cosine >= 0.999 to it")
    why = "embedding.query_provider=same" if embedding.query_provider == "same" else "no ONNX export of the model"
    return ModelChoice("queries", passages.runtime, f"{why}: the passage encoder")


def _reranker(config: RagstreamConfig) -> ModelChoice:
    reranker = config.reranker
    if reranker.backend == "onnx":
        return ModelChoice("reranker", f"onnx (ONNX Runtime), {reranker.onnx_model or reranker.model}",
                           "reranker.backend=onnx: int8 weights, no bfloat16, native on every CPU")
    if reranker.backend == "cross_encoder":
        return ModelChoice("reranker", f"cross_encoder (torch float32), {reranker.model}",
                           "reranker.backend=cross_encoder: float32, native on every CPU")
    if reranker.backend == "bi_encoder":
        return ModelChoice("reranker", "bi_encoder", "reranker.backend=bi_encoder: the passage encoder's cosine")
    return ModelChoice("reranker", "none", "reranker.backend=none: reranking off")
