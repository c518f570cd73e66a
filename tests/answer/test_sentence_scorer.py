"""The learned sentence scorer: the shipped model loads and orders sentences; a wrong file is refused and the
answer falls back to the cosine order; the features are the same code at training and at run time."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragstream.answer.extractive import candidate_quotes, extractive_answer
from ragstream.answer.models import DocumentChunk
from ragstream.answer.sentence_features import FEATURES, sentence_features
from ragstream.answer.sentence_scorer import SHIPPED_MODEL, configured_scorer, learned_score, load_scorer
from ragstream.errors import ModelUnavailableError


def chunk(n: int, text: str, document: str = "d") -> DocumentChunk:
    return DocumentChunk(chunk_id=f"c{n}", document_id=document, text=text, relevance_score=0.5, position_in_doc=n,
                         metadata={"title": "Timeouts", "section": "Setting a timeout"})


CHUNKS = [chunk(1, "The client keeps connections open between requests. "
                   "You can set the timeout with the timeout argument of the client."),
          chunk(2, "Proxies are configured with the proxy argument, which takes a URL.", "e")]


def test_the_shipped_model_loads_with_this_versions_features() -> None:
    scorer = load_scorer()
    assert scorer.features == FEATURES
    assert SHIPPED_MODEL.is_file()
    assert np.isfinite(scorer.weights).all()


def test_features_are_one_row_per_sentence_and_a_missing_model_does_not_order() -> None:
    candidates = [(n, q.sentence, q.example is not None) for n, q in candidate_quotes(CHUNKS, 20, 800)]
    rows = np.asarray(sentence_features("how do I set a timeout?", None, CHUNKS, candidates, None, None))
    assert rows.shape == (3, len(FEATURES))
    for name in ("cosine", "cosine_gap", "cosine_rank", "cross_encoder", "cross_encoder_gap", "cross_encoder_rank"):
        assert len(set(rows[:, FEATURES.index(name)])) == 1  # no embedder, no cross-encoder: a constant column
    terms = rows[:, FEATURES.index("question_terms")]
    assert terms[1] > terms[0]  # "set", "timeout": the second sentence holds the question's topic word
    assert list(rows[:, FEATURES.index("chunk_number")]) == [1, 1, 2]
    assert list(rows[:, FEATURES.index("same_document_as_first")]) == [1, 1, 0]


def test_the_learned_scorer_picks_the_sentence_it_scores_best() -> None:
    scorer = load_scorer()
    score = learned_score(scorer, "how do I set a timeout?", None, CHUNKS, None, None)
    scores = score(candidate_quotes(CHUNKS, 20, 800))
    text = extractive_answer(None, CHUNKS, None, label="From the documents:", max_sentences=1, min_chars=20,
                             max_example_chars=800, score=score)
    best = candidate_quotes(CHUNKS, 20, 800)[int(np.argmax(scores))]
    assert text.splitlines()[2] == f"- {best[1].sentence} [{best[0]}]"


@pytest.mark.parametrize("body", [
    "not json",
    json.dumps({"features": ["cosine"], "mean": [0], "scale": [1], "weights": [1], "bias": 0}),
    json.dumps({"features": list(FEATURES), "mean": [0] * len(FEATURES), "scale": [0] * len(FEATURES),
                "weights": [1] * len(FEATURES), "bias": 0}),
    json.dumps({"features": list(FEATURES)}),
])
def test_a_wrong_model_file_is_refused_and_the_answer_uses_the_cosine_order(tmp_path: Path, body: str) -> None:
    model = tmp_path / "sentences.json"
    model.write_text(body, encoding="utf-8")
    with pytest.raises(ModelUnavailableError, match="sentence scorer"):
        load_scorer(model)
    assert configured_scorer("learned", str(model)) is None
    assert configured_scorer("learned", str(tmp_path / "missing.json")) is None
    assert configured_scorer("cosine", None) is None
