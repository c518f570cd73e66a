"""The support check, signal by signal (issue 24): answer sentences with their places and markers, numbers,
entities, negation, coverage, the verdicts they combine into, the confidence they cap, the streamed run and
the LLM judge (over a real OpenAI-compatible HTTP server that records what it was asked)."""

from __future__ import annotations

import pytest
from support.recording_llm import RecordingLLM

from ragstream.answer.citations import CitationResolver
from ragstream.answer.confidence import with_support
from ragstream.answer.models import Confidence, DocumentChunk
from ragstream.answer.sentence_support.checker import SupportChecker, SupportModels, locate, passage_units
from ragstream.answer.sentence_support.judge import judge, judge_candidates, parse_judgement
from ragstream.answer.sentence_support.run import SupportRun
from ragstream.answer.sentence_support.sentences import complete_sentences, split_answer
from ragstream.answer.sentence_support.signals import (
    WordIndex,
    abstains,
    content_words,
    entities,
    entity_in,
    negated,
    number_values,
    numbers,
    squeeze,
    squeezed_tokens,
)
from ragstream.config import load_config
from ragstream.providers.deadline import Deadline
from ragstream.providers.llm_client import LLMClient

CONFIG = load_config()
TIMEOUTS = """# Timeouts

HTTPX is careful to enforce timeouts everywhere by default. The default behavior is to raise a
`TimeoutException` after five seconds of network inactivity.

```python
client = httpx.Client(timeout=10.0)
```

Redirects are **not** followed by default.
"""
POOLS = "Connection pools keep up to 100 connections. Use `httpx.Limits` to change the pool size."


def chunk(chunk_id: str, text: str, title: str) -> DocumentChunk:
    return DocumentChunk(chunk_id=chunk_id, document_id=f"doc-{chunk_id}", text=text, metadata={"title": title},
                         relevance_score=0.7, position_in_doc=0)


CHUNKS = [chunk("timeouts", TIMEOUTS, "Timeouts"), chunk("pools", POOLS, "Pools")]


def checker(hash_embedder, question: str = "How do I set a timeout?", **support) -> SupportChecker:
    config = load_config(answer={"support": support}) if support else CONFIG
    return SupportChecker(CHUNKS, question, CitationResolver(CHUNKS, config.answer.citations), config.answer.support,
                          SupportModels(hash_embedder))


def verdict(hash_embedder, text: str, **support):
    """The one sentence of ``text`` and its verdict."""
    sentences = split_answer(text)
    assert len(sentences) == 1, sentences
    return checker(hash_embedder, **support).check(sentences)[0]


# -- sentences -----------------------------------------------------------------------------------


def test_sentences_keep_their_place_and_markers():
    text = ("Set a timeout with `httpx.Timeout(10.0)` [1]. It applies to every request, e.g. connect and read. [2]\n\n"
            "- Pools are **limited** [1]\n- Redirects are not followed. [1, 2] Next one here.\n\n"
            "```python\nclient = httpx.Client(timeout=5)\n```\n# A heading\nFor example:\n"
            "Sources:\n[1] guide.md > Timeouts\nFinal sentence [Timeouts].")
    sentences = split_answer(text)
    assert [s.text for s in sentences] == [
        "Set a timeout with `httpx.Timeout(10.0)`.", "It applies to every request, e.g. connect and read.",
        "Pools are limited", "Redirects are not followed.", "Next one here.", "Final sentence."]
    assert [s.markers for s in sentences] == [("1",), ("2",), ("1",), ("1, 2",), (), ("Timeouts",)]
    assert all(text[s.start : s.end] == s.raw for s in sentences)
    assert sentences[1].raw.endswith("[2]")  # a marker opening the next line belongs to the sentence before


def test_lead_ins_and_fragments_are_no_sentences():
    text = "Here's an example of how to do it:\n\nYou can use the following code:\nPass a timeout. [1"
    assert [s.text for s in split_answer(text)] == ["Pass a timeout."]


def test_a_sentence_completes_when_the_next_one_begins():
    assert complete_sentences("HTTPX enforces timeouts.") == []
    assert complete_sentences("HTTPX enforces timeouts. [1]") == []  # a marker may still follow the full stop
    done = complete_sentences("HTTPX enforces timeouts. [1] Pools")
    assert [s.raw for s in done] == ["HTTPX enforces timeouts. [1]"]


# -- signals -------------------------------------------------------------------------------------


def test_numbers_read_as_values():
    found = numbers("Wait 5 seconds, five retries, 5,000 requests, 2.5-fold, 50% and `timeout=10.0`; HSV-2 aside.")
    assert [(m.text, m.key, m.in_code) for m in found] == [
        ("5", 5.0, False), ("5,000", 5000.0, False), ("2.5", 2.5, False), ("50", 50.0, False),
        ("10.0", 10.0, True), ("five", 5.0, False)]
    assert numbers("one of the options") == []  # "one" is mostly a pronoun in a sentence ...
    assert 1.0 in number_values("exactly one connection")  # ... but counts in a passage


def test_entities_are_names_not_sentence_openers():
    names = [m.text for m in entities("The HTTPX `Client` uses httpx.Timeout and follow_redirects; "
                                      "PoolTimeout, IL-6 and Django too. However: Nothing else.")]
    assert names == ["Client", "httpx.Timeout", "follow_redirects", "PoolTimeout", "HTTPX", "IL-6", "Django"]
    passage = "Set `timeout` with the Timeout class; il 6 rises. Clients pool connections."
    squeezed = squeeze(passage)
    found = {m.text: entity_in(m, passage, squeezed) for m in entities("Use httpx.Timeout, IL-6 and the Clients API.")}
    assert found == {"httpx.Timeout": True, "IL-6": False, "Clients": True, "API": False}
    assert entity_in(entities("HSV-2 rises")[0], "hsv 2 infection", squeeze("hsv 2 infection"))


def test_negation_and_abstention():
    assert negated("Redirects are not followed") and negated("HTTPX doesn't follow redirects")
    assert negated("It fails to connect") and negated("without a timeout")
    assert not negated("not only timeouts but also pools") and not negated("whether or not it redirects")
    assert not negated("Disable timeouts by setting it to `None`.")  # a value in code denies nothing
    assert abstains("The attachments do not mention Django.") and abstains("I don't know.")
    assert not abstains("Redirects are not followed by default.")


def test_coverage_counts_words_and_their_first_letters():
    index = WordIndex("Infections spread through `httpx.Client` pools.", prefix_chars=5)
    assert index.coverage(content_words("infection client pools")) == 1.0
    assert index.coverage(content_words("infection spreads via carrier pigeons")) == pytest.approx(2 / 5)


def test_a_passage_sentence_is_found_in_the_chunk_text():
    units = passage_units(TIMEOUTS)
    assert [text for text, _, _ in units][-1] == "Redirects are not followed by default."
    _, start, end = units[-1]
    assert TIMEOUTS[start:end] == "Redirects are **not** followed by default."  # markup kept in the chunk
    assert locate("nowhere to be found", TIMEOUTS) == (None, None)


# -- verdicts ------------------------------------------------------------------------------------


def test_a_sentence_its_citation_says_is_supported(hash_embedder):
    result = verdict(hash_embedder, "HTTPX raises a `TimeoutException` after five seconds of network inactivity [1].")
    assert result.verdict == "supported" and result.supported and result.citations == [1] == result.checked
    assert result.span.number == 1 and TIMEOUTS[result.span.start : result.span.end].startswith("The default behavior")
    assert result.score >= CONFIG.answer.support.supported_min_score and "supported by [1]" in result.reason


@pytest.mark.parametrize(("sentence", "reason"), [
    ("HTTPX raises a `TimeoutException` after seven seconds of network inactivity [1].", "the number 'seven'"),
    ("HTTPX raises a `PoolTimeout` after five seconds of network inactivity [1].", "'PoolTimeout' is not named"),
    ("HTTPX is careful not to enforce timeouts everywhere by default [1].", "denies"),
    ("Redirects are followed by default [1].", "drops the negation"),
    ("Connection pools keep up to 100 connections [1].", "the number '100'"),  # true, but not what [1] says
    ("HTTPX sends every request through a carrier pigeon relay over the ocean [1].", "little of it is in [1]"),
])
def test_a_sentence_its_citation_does_not_say_is_unsupported(hash_embedder, sentence, reason):
    result = verdict(hash_embedder, sentence)
    assert result.verdict == "unsupported" and not result.supported, result
    assert reason in result.reason and result.score <= CONFIG.answer.support.unsupported_max_score


def test_a_number_from_the_question_may_stand_in_code(hash_embedder):
    sentences = split_answer("Pass `httpx.Client(timeout=60.0)` to set it [1].")
    mine = checker(hash_embedder, question="Allow 60 seconds").check(sentences)[0]
    theirs = checker(hash_embedder, question="Allow a minute").check(sentences)[0]
    assert "missing_numbers" not in mine.signals and theirs.signals["missing_numbers"] == ["60.0"]


def test_a_clause_restating_the_question_is_not_the_passages_to_support(hash_embedder):
    question = "How do I make HTTPX raise an error on slow Django views?"
    sentences = split_answer("To make HTTPX raise an error on slow Django views, rely on its default timeouts [1]. "
                             "To make Flask views raise an error, rely on its default timeouts [1].")
    mine, other = checker(hash_embedder, question=question).check(sentences)
    assert mine.verdict == "supported" and "missing_entities" not in mine.signals, mine
    assert other.verdict == "unsupported" and other.signals["missing_entities"] == ["Flask"]


def test_a_negation_in_the_restated_question_is_the_questions(hash_embedder):
    question = "How do I retry when a request cannot connect?"
    sentences = split_answer("To retry when a request cannot connect, note that HTTPX enforces timeouts everywhere [1].")
    result = checker(hash_embedder, question=question).check(sentences)[0]
    assert result.verdict == "supported" and "negation" not in result.signals, result


def test_names_match_whatever_their_hyphen():
    passage = "Satb1 restrains PD\u20101 expression."
    assert entity_in(entities("PD1 rises")[0], passage, squeeze(passage), squeezed_tokens(passage))


def test_a_negation_must_deny_what_the_passage_denies(hash_embedder):
    denied = verdict(hash_embedder, "Redirects are not followed by default [1].")
    other = verdict(hash_embedder, "HTTPX does not raise a `TimeoutException` after five seconds [1].")
    assert denied.verdict == "supported" and other.verdict == "unsupported" and other.signals["negation"] == "sentence"


def test_an_uncited_sentence_is_checked_against_every_attachment(hash_embedder):
    result = verdict(hash_embedder, "Connection pools keep up to 100 connections.")
    assert result.citations == [] and result.checked == [1, 2]
    assert result.verdict == "supported" and result.span.number == 2 and "it cites none" in result.reason


def test_a_check_can_be_switched_off(hash_embedder):
    sentence = "Connection pools keep up to 100 connections [1]."
    assert verdict(hash_embedder, sentence).verdict == "unsupported"
    assert "missing_numbers" not in verdict(hash_embedder, sentence, check_numbers=False).signals


def test_sentences_with_nothing_to_check_are_uncertain(hash_embedder):
    assert verdict(hash_embedder, "The attachments do not mention Django [1].").verdict == "uncertain"
    assert verdict(hash_embedder, "Yes, it is [1].").verdict == "uncertain"


def test_words_alone_decide_without_an_embedder():
    config = CONFIG.answer
    plain = SupportChecker(CHUNKS, "q", CitationResolver(CHUNKS, config.citations), config.support, SupportModels())
    results = plain.check(split_answer("Redirects are not followed by default [1]. Pigeons carry every request [1]."))
    assert [r.verdict for r in results] == ["supported", "unsupported"]
    assert all("similarity" not in r.signals for r in results)


def test_extractive_quotes_are_supported_by_construction(hash_embedder):
    text = "Extractive answer (no LLM configured): the passages.\n\n- Redirects are not followed by default. [1]"
    results = checker(hash_embedder).extractive(split_answer(text))
    assert len(results) == 1 and results[0].verdict == "supported" and results[0].score == 1.0
    assert results[0].signals == {"extractive": True} and "by construction" in results[0].reason
    assert TIMEOUTS[results[0].span.start : results[0].span.end] == "Redirects are **not** followed by default."


# -- confidence, the streamed run, the judge -----------------------------------------------------


def test_confidence_is_never_high_with_an_unsupported_sentence(hash_embedder):
    results = checker(hash_embedder).check(split_answer(
        "Redirects are not followed by default [1]. Connection pools keep up to 100 connections [1]."))
    high = Confidence(level="High", reason="3 relevant sources with 1 citations")
    capped = with_support(high, results)
    assert capped.level == "Medium" and 'sentence 2 ("Connection pools keep up to 100 connections.")' in capped.reason
    assert with_support(high, results[:1]) == high
    assert with_support(high, results[1:]).level == "Low"  # no sentence is supported


def test_a_streamed_run_gives_each_sentence_one_verdict_as_it_completes(hash_embedder):
    text = "Redirects are not followed by default. [1] Pools keep up to 100 connections [1]. Pigeons fly [2]."
    run = SupportRun(lambda: checker(hash_embedder))
    given = []
    for end in range(1, len(text) + 1):
        given += [(end, v.index) for v in run.feed(text[:end], "llm")]
    given += [(len(text), v.index) for v in run.finish(text, "llm")]
    assert [index for _, index in given] == [0, 1, 2]
    assert given[0][0] == text.index("Pools") + 1  # once the next sentence began
    assert run.verdicts == checker(hash_embedder).check(split_answer(text))
    assert SupportRun(lambda: checker(hash_embedder)).finish("No results.", "no_results") == []


def test_the_judge_parses_one_line_per_statement():
    reply = "1: SUPPORTED\n2: not supported\nStatement 3 - UNSUPPORTED\n9: SUPPORTED\nnoise"
    assert parse_judgement(reply, 3) == {1: True, 2: False, 3: False}


def test_the_llm_judge_revises_uncertain_sentences_in_one_bounded_call(hash_embedder):
    results = checker(hash_embedder).check(split_answer(
        "Redirects are not followed by default [1]. Yes, it is [1]. The client waits, then it stops waiting [1]."))
    asked = judge_candidates(results, CONFIG.answer.support)
    assert [r.verdict for r in asked] == ["uncertain"] * len(asked) and asked
    with RecordingLLM(reply="\n".join(f"{n}: UNSUPPORTED" for n in range(1, len(asked) + 1))) as server:
        llm = LLMClient(load_config(llm={"base_url": server.base_url, "max_retries": 0}).llm)
        revised, failure = judge(llm, asked, CHUNKS, CONFIG.answer.support, Deadline(30.0))
        sent = server.requests[0]
    assert failure is None and len(server.requests) == 1
    assert sent["max_tokens"] == CONFIG.answer.support.judge_max_tokens and "Statement 1:" in sent["messages"][1]["content"]
    assert [r.verdict for r in revised] == ["unsupported"] * len(asked)
    assert all(r.signals["judge"] == "unsupported" and r.reason.startswith("the LLM judge") for r in revised)


def test_a_judge_that_cannot_answer_leaves_the_cheap_verdicts(hash_embedder):
    results = checker(hash_embedder).check(split_answer("Yes, it is [1]. The client waits, then stops [1]."))
    asked = judge_candidates(results, CONFIG.answer.support)
    with RecordingLLM(hang=True) as server:
        llm = LLMClient(load_config(llm={"base_url": server.base_url, "max_retries": 0}).llm)
        revised, failure = judge(llm, asked, CHUNKS, load_config(answer={"support": {"judge_timeout_seconds": 0.5}}
                                                                 ).answer.support, Deadline(30.0))
        server.release.set()
    assert revised == [] and failure and failure.startswith("the LLM judge failed")
