"""Sentence support with the real models (issue 24): the packaged embedder and cross-encoder on real
documentation text, and the packaged Qwen2.5-Coder-0.5B (llama.cpp) writing the answers it checks.

The model writes whatever it writes; the contract checked is ragstream's: every sentence of its answer
gets one verdict, in order, at its place in the text, checked against attachments of the prompt, the
span is a sentence of the attachment it names, the stream sends the same verdicts as ``done`` holds, an
unsupported sentence keeps the answer off High, and the LLM judge makes one bounded call.
"""

from __future__ import annotations

import re

import pytest
from support.answer_fixtures import MARKDOWN_SAMPLES, llm_overrides
from support.required import LLAMA, unavailable

from ragstream.answer.citations import CitationResolver
from ragstream.answer.sentence_support.checker import SupportChecker, SupportModels
from ragstream.answer.sentence_support.sentences import split_answer

pytestmark = pytest.mark.slow

QUESTION = "How do I set a timeout on a request?"
MAX_ATTACHMENTS = 3
SLOW_DEADLINE_SECONDS = 900.0
"""The question's deadline: on 2 busy shared cores the 0.5B model may take minutes, and an answer that ran out of
time is the extractive stand-in (with its notice), not the model's answer these tests check."""
AUXILIARY = re.compile(r"\b(?:is|are|can|will|should|does)\b")


def _slow_llm(base_url: str) -> dict:
    return llm_overrides(base_url, max_tokens=120, timeout_seconds=SLOW_DEADLINE_SECONDS)


def assert_consistent(answer) -> None:
    """One verdict per sentence of the answer, each at its place, checked against the prompt's attachments."""
    sentences = split_answer(answer.answer)
    assert [s.index for s in answer.sentences] == [s.index for s in sentences]
    attachments = range(1, len(answer.metadata["context_chunk_ids"]) + 1)
    for verdict, sentence in zip(answer.sentences, sentences, strict=True):
        assert answer.answer[verdict.start : verdict.end] == sentence.raw and verdict.text == sentence.text
        assert set(verdict.checked) <= set(attachments) and set(verdict.citations) <= set(verdict.checked)
        assert verdict.supported == (verdict.verdict == "supported") and 0.0 <= verdict.score <= 1.0
        assert verdict.reason
        if verdict.span is not None and verdict.span.start is not None:
            chunk_id = answer.metadata["context_chunk_ids"][verdict.span.number - 1]
            assert verdict.span.chunk_id == chunk_id
    if any(v.verdict == "unsupported" for v in answer.sentences):
        assert answer.confidence.level != "High" and "is unsupported" in answer.confidence.reason


def test_real_models_tell_a_supported_sentence_from_perturbed_ones(make_index):
    rs = make_index()
    rs.ingest(MARKDOWN_SAMPLES)
    answer = rs.ask(QUESTION)  # extractive: its quotes are real sentences of the attachments
    chunks = [c for c in rs.retrieve(QUESTION, max_chunks=5).document_chunks]
    reranker, _ = rs.reranker()
    assert reranker is not None and reranker.backend == "cross_encoder"
    config = rs.config.answer
    every_signal = config.support.model_copy(update={"similarity": "sentences", "cross_encoder": "all",
                                                     "cross_encoder_max_pairs": 10})
    checker = SupportChecker(chunks, QUESTION, CitationResolver(chunks, config.citations), every_signal,
                             SupportModels(rs.embedder(), reranker))
    quote = next(s.text for s in answer.sentences if len(s.text.split()) >= 6 and AUXILIARY.search(s.text))
    number = next(i for i, chunk in enumerate(chunks, start=1) if quote[:40] in chunk.text.replace("\n", " "))
    cases = {
        "copied": f"{quote} [{number}]",
        "negated": f"{AUXILIARY.sub(lambda m: m.group(0) + ' not', quote, count=1)} [{number}]",
        "cited elsewhere": f"Responses are cached on disk for ninety days by the Django middleware [{number}].",
    }
    verdicts = {name: checker.check(split_answer(text))[0] for name, text in cases.items()}
    assert verdicts["copied"].verdict == "supported", verdicts["copied"]
    assert verdicts["copied"].span.number == number and verdicts["copied"].signals["cross_encoder"] > 0.5
    assert verdicts["copied"].signals["similarity"] > verdicts["cited elsewhere"].signals["similarity"]
    assert verdicts["negated"].verdict == "unsupported" and "denies" in verdicts["negated"].reason
    assert verdicts["cited elsewhere"].verdict == "unsupported"
    assert answer.sentences and all(s.signals.get("extractive") for s in answer.sentences)

    one_pair = config.support.model_copy(update={"cross_encoder": "all", "cross_encoder_max_pairs": 1})
    budgeted = SupportChecker(chunks, QUESTION, CitationResolver(chunks, config.citations), one_pair,
                              SupportModels(rs.embedder(), reranker))
    twice = budgeted.check(split_answer(f"{cases['copied']}\n\n{cases['copied']}"))
    assert ["cross_encoder" in v.signals for v in twice] == [True, False]  # one pair per answer, then words alone


def test_qwen_answers_carry_one_verdict_per_sentence(make_index, qwen_server):
    rs = make_index(**_slow_llm(qwen_server), answer={"context_tokens": 700, "deadline_seconds": SLOW_DEADLINE_SECONDS},
                    pipeline={"N3_FINAL_SELECTION_MAX": MAX_ATTACHMENTS})
    rs.ingest(MARKDOWN_SAMPLES)
    answer = rs.ask(QUESTION)
    assert answer.metadata["mode"] in {"llm", "extractive"}
    assert answer.sentences, answer.answer
    assert_consistent(answer)

    events = list(rs.stream_answer(QUESTION))
    done = events[-1]
    assert done.type == "done"
    streamed = {e.sentence.index: e.sentence for e in events if e.type == "support"}
    assert list(streamed.values()) == done.response.sentences
    assert_consistent(done.response)
    print("qwen answer:", done.response.answer)
    for s in done.response.sentences:
        print(f"  {s.verdict} {s.score:.2f} {s.text!r}: {s.reason}")


def test_the_llm_judge_makes_one_bounded_call(make_index, qwen_server):
    judge_all = {"llm_judge": True, "judge_verdicts": ["supported", "unsupported", "uncertain"]}
    rs = make_index(**_slow_llm(qwen_server), pipeline={"N3_FINAL_SELECTION_MAX": MAX_ATTACHMENTS},
                    answer={"context_tokens": 700, "support": judge_all,
                            "deadline_seconds": SLOW_DEADLINE_SECONDS})
    rs.ingest(MARKDOWN_SAMPLES)
    answer = rs.ask(QUESTION)
    if answer.metadata["mode"] != "llm":  # a failure in CI: the local model must answer there
        unavailable(f"the model's answer was replaced: {answer.metadata['degraded_reason']}", LLAMA)
    support = answer.metadata["support"]
    assert support["judge_calls"] == 1 and answer.metadata["llm_calls"] == 2
    assert rs.answers().llm.calls == 2
    judged = [s for s in answer.sentences if "judge" in s.signals]
    assert all(s.reason.startswith("the LLM judge") for s in judged)
    assert_consistent(answer)
