"""An embedding model's query and passage prefixes and its pooling: from config, the model folder, or the registry.

Order of precedence, per setting: ``embedding.query_prefix`` / ``passage_prefix`` / ``pooling`` when
set; else the model folder's sentence-transformers files (``config_sentence_transformers.json``
``prompts`` ``query`` and ``passage``/``document``; ``1_Pooling/config.json``); else what the
packaged-model registry knows of the model (bge-small-en-v1.5: CLS pooling and its query
instruction); else no prefix and mean pooling.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ragstream.config import EmbeddingConfig
from ragstream.errors import EmbedderUnavailableError
from ragstream.providers.packaged_models import Pooling, packaged_model

ST_CONFIG = "config_sentence_transformers.json"
POOLING_CONFIG = Path("1_Pooling") / "config.json"
PASSAGE_PROMPT_NAMES = ("passage", "document", "corpus")


@dataclass(frozen=True)
class ModelSettings:
    """How texts are prepared and token vectors pooled for one embedding model."""

    query_prefix: str = ""
    passage_prefix: str = ""
    pooling: Pooling = "mean"


def model_settings(config: EmbeddingConfig, folder: Path | None) -> ModelSettings:
    """The settings of ``config.model`` whose files are in ``folder`` (None: no folder to read)."""
    packaged = packaged_model(config.model)
    prompts = _folder_prompts(folder) if folder is not None else {}
    query = config.query_prefix
    if query is None:
        query = prompts.get("query", packaged.query_prefix if packaged else "")
    passage = config.passage_prefix
    if passage is None:
        passage = next((prompts[name] for name in PASSAGE_PROMPT_NAMES if name in prompts),
                       packaged.passage_prefix if packaged else "")
    configured = config.pooling
    if configured == "last":
        raise EmbedderUnavailableError("embedding.pooling=last is for provider=gguf (llama.cpp); a sentence-transformers "
                                       "or ONNX model pools by mean, cls or max")
    pooling = configured or (_folder_pooling(folder) if folder is not None else None) or (
        packaged.pooling if packaged else "mean")
    return ModelSettings(query_prefix=query, passage_prefix=passage, pooling=pooling)


def with_prefix(prefix: str, texts: list[str]) -> list[str]:
    """``texts`` each preceded by ``prefix`` (the same list when there is none)."""
    return [prefix + text for text in texts] if prefix else texts


def _folder_prompts(folder: Path) -> dict[str, str]:
    path = folder / ST_CONFIG
    if not path.is_file():
        return {}
    prompts = json.loads(path.read_text(encoding="utf-8")).get("prompts") or {}
    return {str(name): str(text) for name, text in prompts.items() if isinstance(text, str)}


def _folder_pooling(folder: Path) -> Pooling | None:
    path = folder / POOLING_CONFIG
    if not path.is_file():
        return None
    pooling = json.loads(path.read_text(encoding="utf-8"))
    if pooling.get("pooling_mode_cls_token"):
        return "cls"
    if pooling.get("pooling_mode_max_tokens"):
        return "max"
    return "mean"
