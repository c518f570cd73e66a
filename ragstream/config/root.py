"""The root config, ``RagstreamConfig``, and :func:`load_config`, which reads it from its sources.

Values resolve in this order (first wins): keyword arguments of :func:`load_config`, environment
variables ``RAGSTREAM_...``, a config file (TOML, YAML or JSON) named by ``config_file=`` or
``RAGSTREAM_CONFIG``, the defaults of the sections (docs/configuration.md).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import sys
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import (
    BaseSettings,
    JsonConfigSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
    YamlConfigSettingsSource,
)

from ragstream.config.agents import AgentsConfig
from ragstream.config.answer import AnswerConfig
from ragstream.config.chunking import ChunkingConfig
from ragstream.config.collections import CollectionsConfig
from ragstream.config.embedding import EmbeddingConfig
from ragstream.config.ingest import IngestConfig
from ragstream.config.limits import LimitsConfig
from ragstream.config.llm import LLMConfig
from ragstream.config.mcp import McpConfig
from ragstream.config.ocr import OcrConfig
from ragstream.config.pdf import PdfConfig
from ragstream.config.pipeline import PipelineLimits, PreprocessingConfig
from ragstream.config.reranker import RerankerConfig
from ragstream.config.retrieval import RetrievalConfig
from ragstream.config.server import ServerConfig
from ragstream.config.store import StoreConfig
from ragstream.config.sync import SyncConfig

CONFIG_FILE_ENV = "RAGSTREAM_CONFIG"
TEXT_PIPELINE_VERSION = 4
"""Version of the text extraction and cleaning code (Markdown dialects, PDF titles, a long table's header
repeated in each of its chunks, a PDF's headings from its outline or type). It is part
of the index fingerprint: bump it whenever a change alters chunk text, so existing documents
show as stale and ``reindex`` / re-ingest rebuilds them."""

APP_NAME = "ragstream"

_config_file: ContextVar[str | None] = ContextVar("ragstream_config_file", default=None)
"""The file :func:`load_config` was given, for the config it is building: a context variable, so
concurrent loads in other threads (or tasks) each read their own file and ``os.environ`` is left alone."""


def default_data_dir() -> Path:
    """The user's data directory for ragstream (platformdirs when installed, else XDG / OS conventions)."""
    if importlib.util.find_spec("platformdirs") is not None:
        platformdirs = importlib.import_module("platformdirs")
        return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / APP_NAME
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP_NAME
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    base_dir = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base_dir / APP_NAME


class RagstreamConfig(BaseSettings):
    """All of ragstream's settings: one field per section."""

    model_config = SettingsConfigDict(
        env_prefix="RAGSTREAM_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Where the store and catalog live; default: the user's data directory "
        "(~/.local/share/ragstream on Linux, or $XDG_DATA_HOME/ragstream).",
    )
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
    ingest: IngestConfig = IngestConfig()
    ocr: OcrConfig = OcrConfig()
    pdf: PdfConfig = PdfConfig()
    sync: SyncConfig = SyncConfig()
    answer: AnswerConfig = AnswerConfig()
    server: ServerConfig = ServerConfig()
    mcp: McpConfig = McpConfig()
    collections: CollectionsConfig = CollectionsConfig()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments, then the environment, then the config file (given to load_config, else
        ``RAGSTREAM_CONFIG``); the defaults come last."""
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = _config_file.get()
        if config_file is None:
            config_file = os.environ.get(CONFIG_FILE_ENV)
        if config_file:
            sources.append(_file_source(settings_cls, Path(config_file)))
        return tuple(sources)

    def index_fingerprint(self) -> str:
        """Hash of the settings that shape stored chunks and vectors; a change means reindex. The torch model and
        its packaged int8 ONNX export (cosine >= 0.999 to it) give one fingerprint: either serves the index."""
        if self.embedding.backend() == "gguf":  # the file's size and sha256: another file is another model
            return self._fingerprint(f"gguf:{self.embedding.gguf_identity()}")
        if self.embedding.backend() == "onnx" and not self.embedding.compatible_export():
            return self._fingerprint(f"onnx:{self.embedding.onnx_export()}")  # other weights: other vectors
        return self._fingerprint(None)

    def index_fingerprints(self) -> frozenset[str]:
        """The fingerprints a document may carry and still be current: :meth:`index_fingerprint`, and for the
        packaged ONNX export the one indexes built on it recorded before it shared the torch model's."""
        current = {self.index_fingerprint()}
        if self.embedding.compatible_export():
            current.add(self._fingerprint(f"onnx:{self.embedding.onnx_export()}"))
        return frozenset(current)

    def _fingerprint(self, weights: str | None) -> str:
        shaping = {
            "chunking": self.chunking.model_dump(),
            "embedding": self.embedding.model,
            "text_pipeline": TEXT_PIPELINE_VERSION,
        }
        for knob in ("passage_prefix", "pooling"):  # set only when they change passage vectors (old indexes stay fresh)
            if getattr(self.embedding, knob) is not None:
                shaping[knob] = getattr(self.embedding, knob)
        if weights is not None:
            shaping["embedding_weights"] = weights
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
    """Build the config from defaults, a file (``config_file``, else ``RAGSTREAM_CONFIG``), the
    environment and ``overrides``. Safe to call from several threads at once: nothing global changes."""
    if config_file is None:
        return RagstreamConfig(**overrides)
    token = _config_file.set(str(config_file))
    try:
        return RagstreamConfig(**overrides)
    finally:
        _config_file.reset(token)
