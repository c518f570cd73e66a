"""The one typed configuration of ragstream (pydantic-settings), one module per section.

Every knob lives in its section's module (``limits.py``, ``embedding.py``, ``retrieval.py`` ...); the
root, ``RagstreamConfig``, and :func:`load_config` are in ``root.py``. Values resolve in this order
(first wins):

1. keyword arguments given to :func:`load_config`,
2. environment variables prefixed ``RAGSTREAM_`` (nested fields joined with ``__``,
   e.g. ``RAGSTREAM_CHUNKING__CHUNK_SIZE=800``; the data directory is ``RAGSTREAM_DATA_DIR``),
3. a config file (TOML, YAML or JSON) named by ``config_file=`` or ``RAGSTREAM_CONFIG``,
4. the documented defaults of the sections.

Import names from here (``from ragstream.config import RetrievalConfig``); docs/configuration.md
lists the sections and says where a new knob goes.
"""

from __future__ import annotations

from ragstream.config.agents import A3GateSettings, A4CondenserSettings, AgentsConfig, AgentSettings
from ragstream.config.answer import (
    DEFAULT_CLOSING_INSTRUCTION,
    DEFAULT_NO_RESULTS_MESSAGE,
    DEFAULT_SYSTEM_RULES,
    AnswerConfig,
    CitationConfig,
    ConfidenceConfig,
    RetrievalCacheConfig,
)
from ragstream.config.base import ConfigSection
from ragstream.config.chunking import ChunkingConfig
from ragstream.config.collections import CollectionsConfig
from ragstream.config.embedding import PACKAGED_ONNX_EXPORTS, PACKAGED_ONNX_ONLY, EmbeddingConfig
from ragstream.config.ingest import DEFAULT_EXCLUDE, DEFAULT_IGNORE_FILES, DEFAULT_INCLUDE, IngestConfig
from ragstream.config.limits import LimitsConfig
from ragstream.config.llm import LLMConfig
from ragstream.config.mcp import McpConfig
from ragstream.config.ocr import OcrConfig
from ragstream.config.pdf import DEFAULT_BOLD_FONT_MARKERS, PdfConfig
from ragstream.config.pipeline import PipelineLimits, PreprocessingConfig
from ragstream.config.reranker import RerankerConfig
from ragstream.config.retrieval import RetrievalConfig
from ragstream.config.root import (
    APP_NAME,
    CONFIG_FILE_ENV,
    TEXT_PIPELINE_VERSION,
    RagstreamConfig,
    default_data_dir,
    load_config,
)
from ragstream.config.server import ApiKeyEntry, JobsConfig, ServerConfig
from ragstream.config.store import MigrateConfig, QdrantServerConfig, StoreConfig
from ragstream.config.support import DEFAULT_JUDGE_VERDICTS, SupportConfig
from ragstream.config.sync import DEFAULT_TEMPORARY_FILES, SyncConfig

__all__ = [
    "APP_NAME",
    "CONFIG_FILE_ENV",
    "DEFAULT_BOLD_FONT_MARKERS",
    "DEFAULT_CLOSING_INSTRUCTION",
    "DEFAULT_EXCLUDE",
    "DEFAULT_IGNORE_FILES",
    "DEFAULT_INCLUDE",
    "DEFAULT_JUDGE_VERDICTS",
    "DEFAULT_NO_RESULTS_MESSAGE",
    "DEFAULT_SYSTEM_RULES",
    "DEFAULT_TEMPORARY_FILES",
    "PACKAGED_ONNX_EXPORTS",
    "PACKAGED_ONNX_ONLY",
    "TEXT_PIPELINE_VERSION",
    "A3GateSettings",
    "A4CondenserSettings",
    "AgentSettings",
    "AgentsConfig",
    "AnswerConfig",
    "ApiKeyEntry",
    "ChunkingConfig",
    "CitationConfig",
    "CollectionsConfig",
    "ConfidenceConfig",
    "ConfigSection",
    "EmbeddingConfig",
    "IngestConfig",
    "JobsConfig",
    "LLMConfig",
    "LimitsConfig",
    "McpConfig",
    "MigrateConfig",
    "OcrConfig",
    "PdfConfig",
    "PipelineLimits",
    "PreprocessingConfig",
    "QdrantServerConfig",
    "RagstreamConfig",
    "RerankerConfig",
    "RetrievalCacheConfig",
    "RetrievalConfig",
    "ServerConfig",
    "StoreConfig",
    "SupportConfig",
    "SyncConfig",
    "default_data_dir",
    "load_config",
]
