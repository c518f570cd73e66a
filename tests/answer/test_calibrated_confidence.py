"""The calibrated confidence (docs/answers.md, Confidence): the shipped model loads and is monotone, High / Medium /
Low follow the configured ranges, a model file of the wrong shape is refused with a clear error (and the answer
path then falls back to the rules, saying why), and answers carry their probability and signals."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from support.answer_fixtures import MARKDOWN_SAMPLES

from ragstream.answer.calibrated_confidence import (
    FORMAT,
    SHIPPED_MODEL,
    calibrated_confidence,
    interpolate,
    load_confidence_model,
    read_model,
)
from ragstream.answer.confidence import with_support
from ragstream.answer.confidence_signals import SIGNALS
from ragstream.answer.models import Answer, Confidence, SentenceSupport
from ragstream.config import ConfidenceConfig
from ragstream.errors import ModelUnavailableError

QUESTION = "How do I set a timeout on a request?"


def test_the_shipped_model_loads_and_is_monotone():
    model = load_confidence_model()
    assert model.path == SHIPPED_MODEL and set(model.features) <= set(SIGNALS)
    grid = [i / 200 for i in range(201)]
    mapped = [interpolate(x, model.knots_x, model.knots_y) for x in grid]
    assert all(0.0 <= p <= 1.0 for p in mapped)
    assert all(b >= a for a, b in itertools.pairwise(mapped)), "the calibration map must not decrease"
    # a signal with a positive weight never lowers the probability as it grows (the others at their means)
    means = dict(zip(model.features, model.mean, strict=True))
    for name, coef in zip(model.features, model.coef, strict=True):
        values = [model.probability({**means, name: v / 10}) for v in range(11)]
        pairs = list(itertools.pairwise(values))
        assert all(b >= a for a, b in pairs) if coef >= 0 else all(b <= a for a, b in pairs), name


def test_levels_are_ranges_of_the_probability_and_the_reason_says_it():
    thresholds = (0.8, 0.4)
    assert calibrated_confidence(0.85, thresholds, {}).level == "High"
    assert calibrated_confidence(0.8, thresholds, {}).level == "High"
    assert calibrated_confidence(0.79, thresholds, {}).level == "Medium"
    assert calibrated_confidence(0.4, thresholds, {}).level == "Medium"
    assert calibrated_confidence(0.39, thresholds, {}).level == "Low"
    confidence = calibrated_confidence(0.83, thresholds, {"ce_top": 0.9})
    assert confidence.probability == 0.83 and confidence.signals == {"ce_top": 0.9}
    assert confidence.reason == "about 8 in 10 answers like this cite a page that answers the question (estimated 83%)"
    assert calibrated_confidence(0.02, thresholds, {}).reason.startswith("fewer than 1 in 10 answers")


def test_the_thresholds_are_the_models_unless_configured():
    model = load_confidence_model()
    assert 0.0 <= model.medium <= model.high <= 1.0
    assert model.thresholds(ConfidenceConfig()) == (model.high, model.medium)
    configured = ConfidenceConfig(high_min_probability=0.75, medium_min_probability=0.3)
    assert model.thresholds(configured) == (0.75, 0.3)
    assert model.thresholds(ConfidenceConfig(medium_min_probability=0.3)) == (model.high, 0.3)


def test_an_unsupported_sentence_never_leaves_high_and_the_probability_stays():
    high = calibrated_confidence(0.97, (0.9, 0.5), {})
    sentences = [SentenceSupport(index=i, text=f"Sentence {i}.", start=0, end=1, citations=[1], checked=[1],
                                 supported=verdict == "supported", verdict=verdict, score=0.1, reason="little of it")
                 for i, verdict in enumerate(("supported", "unsupported"))]
    capped = with_support(high, sentences)
    assert capped.level == "Medium" and capped.probability == 0.97 and "is unsupported" in capped.reason


def _valid() -> dict:
    return {"format": FORMAT, "features": ["ce_top", "cites_top"], "mean": [0.5, 0.8], "scale": [0.2, 0.4],
            "coef": [1.0, 0.5], "intercept": 1.0, "calibration": {"x": [0.1, 0.5, 0.9], "y": [0.2, 0.6, 0.95]},
            "thresholds": {"high": 0.9, "medium": 0.5}}


@pytest.mark.parametrize(("change", "message"), [
    ({"format": "something-else"}, "'format' must be 'ragstream-confidence/1'"),
    ({"features": ["ce_top", "the_moon"]}, "features ['the_moon'] are not signals this version computes"),
    ({"coef": [1.0]}, "one value per feature"),
    ({"scale": [0.0, 1.0]}, "'scale' values must be positive"),
    ({"calibration": {"x": [0.1, 0.5, 0.9], "y": [0.2, 0.9, 0.6]}}, "must be monotone"),
    ({"calibration": {"x": [0.1], "y": [0.2, 0.3]}}, "as many 'x' as 'y'"),
    ({"mean": ["a", 1]}, "'mean' must be a list of finite numbers"),
    ({"intercept": None}, "'intercept' must be a number"),
    ({"thresholds": {"high": 0.4, "medium": 0.5}}, "0 <= medium <= high <= 1"),
    ({"thresholds": {"high": 0.9}}, "'medium'"),
])
def test_a_model_of_the_wrong_shape_is_refused_with_a_clear_error(tmp_path: Path, change: dict, message: str):
    path = tmp_path / "model.json"
    path.write_text(json.dumps({**_valid(), **change}), encoding="utf-8")
    with pytest.raises(ModelUnavailableError, match="wrong shape") as raised:
        read_model(path)
    assert message in raised.value.message and "bench/train_confidence.py" in raised.value.message


def test_a_model_that_is_not_json_or_missing_is_refused(tmp_path: Path):
    path = tmp_path / "model.json"
    path.write_text("not json", encoding="utf-8")
    with pytest.raises(ModelUnavailableError, match="cannot be read"):
        read_model(path)
    missing = {key: value for key, value in _valid().items() if key != "calibration"}
    path.write_text(json.dumps(missing), encoding="utf-8")
    with pytest.raises(ModelUnavailableError, match="wrong shape: 'calibration'"):
        read_model(path)
    with pytest.raises(ModelUnavailableError, match="cannot be read"):
        read_model(tmp_path / "absent.json")


def test_answers_carry_the_probability_and_fall_back_to_the_rules_on_a_bad_model(make_fast_index, tmp_path: Path):
    def index(**overrides):
        rs = make_fast_index(data_dir=tmp_path / f"index{len(list(tmp_path.iterdir()))}", **overrides)
        rs.ingest(MARKDOWN_SAMPLES)
        return rs

    calibrated = {"confidence": {"method": "calibrated"}}
    rs = index(answer=calibrated)
    answer = rs.ask(QUESTION)
    confidence = answer.confidence
    assert confidence.probability is not None and 0.0 <= confidence.probability <= 1.0
    assert set(confidence.signals) == set(SIGNALS) and "answers the question (estimated" in confidence.reason
    assert rs.ask("How do I cook pasta?").confidence.probability == 0.0  # no results: no page, none right
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**_valid(), "coef": [1.0]}), encoding="utf-8")
    rules = index(answer={"confidence": {"method": "calibrated", "model": str(bad)}}).ask(QUESTION).confidence
    assert rules.probability is None and set(rules.signals) == set(SIGNALS)
    assert "(rules: the confidence model" in rules.reason and "wrong shape" in rules.reason
    chosen = index().ask(QUESTION).confidence  # the default: the rules
    assert chosen.probability is None and "(rules:" not in chosen.reason


@pytest.mark.slow
def test_an_answer_over_a_real_index_carries_a_calibrated_probability(make_index):
    """The packaged embedder and cross-encoder: the signals the model was fitted on are there, and a question the
    samples answer is rated by the shipped model's probability."""
    rs = make_index(answer={"confidence": {"method": "calibrated"}})
    rs.ingest(MARKDOWN_SAMPLES)
    confidence = rs.ask(QUESTION).confidence
    assert confidence.probability is not None and 0.0 < confidence.probability <= 1.0
    assert set(confidence.signals) == set(SIGNALS)
    expected = load_confidence_model().probability(confidence.signals)
    assert confidence.probability == pytest.approx(expected, abs=1e-4)
    thresholds = load_confidence_model().thresholds(rs.config.answer.confidence)
    assert confidence.level == calibrated_confidence(confidence.probability, thresholds, {}).level


def test_the_response_schema_keeps_old_clients_working():
    schema = Answer.model_json_schema()["$defs"]["Confidence"]
    assert {"probability", "signals"} <= set(schema["properties"]) and schema["required"] == ["level", "reason"]
    assert Confidence.model_validate({"level": "Low", "reason": "old shape"}).probability is None
