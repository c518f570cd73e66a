"""ask / stream_answer on the real embedded store: extractive without an LLM, the no-results path
(zero LLM calls), the retry policy through the answering path against a scripted local HTTP
endpoint (a real provider cannot be made to fail on demand), conversation memory."""

from __future__ import annotations

import pytest
from support.answer_fixtures import MARKDOWN_SAMPLES, llm_overrides
from support.recording_llm import RecordingLLM
from support.scripted_llm import ScriptedServer

from ragstream import metrics
from ragstream.errors import InvalidQueryError

QUESTION = "How do I set a timeout on a request?"
OFF_TOPIC = "How do I cook pasta?"
SEED_002_KEYS = {"answer", "sources", "relatedDocs", "citations", "confidence", "metadata"}
EXTENSION_KEYS = {"sentences"}  # issue 24: each sentence with its support verdict


@pytest.fixture
def scripted():
    servers: list[ScriptedServer] = []

    def start(script: list[int], reply: str = "Set it on the client [1]. Per request too [2].") -> ScriptedServer:
        server = ScriptedServer(script, reply=reply)
        server.__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def test_extractive_answer_without_llm(make_fast_index):
    rs = make_fast_index()
    rs.ingest(MARKDOWN_SAMPLES)
    answer = rs.ask(QUESTION)
    assert set(answer.model_dump()) == SEED_002_KEYS | EXTENSION_KEYS
    assert answer.metadata["mode"] == "extractive" and answer.metadata["model"] is None
    assert answer.sentences and all(s.supported and s.signals["extractive"] for s in answer.sentences)
    assert answer.answer.startswith(rs.config.answer.extractive_label)
    context = answer.metadata["context_chunk_ids"]
    assert 1 <= len(context) <= rs.config.pipeline.N3_FINAL_SELECTION_MAX
    assert answer.citations and all(c.matched and c.chunk_id in context for c in answer.citations)
    assert answer.metadata["unmatched_citations"] == []
    assert answer.sources and {s.url for s in answer.sources} <= {c.url for c in answer.citations}
    assert {d.document_id for d in answer.relatedDocs} >= {s.document_id for s in answer.sources}
    assert answer.confidence.level in ("High", "Medium") and answer.confidence.reason
    assert {"pipeline", "generation", "total"} <= set(answer.metadata["latencies_ms"])
    assert answer.metadata["degraded_reason"] is None and answer.metadata["llm_calls"] == 0
    assert any("timeout" in line.lower() for line in answer.answer.splitlines()[2:])


def test_extractive_stream_and_conversation_memory(make_fast_index):
    rs = make_fast_index()
    rs.ingest(MARKDOWN_SAMPLES)
    events = list(rs.stream_answer(QUESTION))
    assert events[-1].type == "done" and [e.type for e in events[:-1]].count("done") == 0
    done = events[-1].data
    context = done["response"]["metadata"]["context_chunk_ids"]
    cited = [e.data["chunk_id"] for e in events if e.type == "citation"]
    assert cited and set(cited) <= set(context) and len(cited) == len(set(cited))
    assert "".join(e.data["token"] for e in events if e.type == "token") == done["response"]["answer"]
    meta = done["response"]["metadata"]
    assert 0 < done["first_token_ms"] <= done["latency_ms"]
    assert done["first_token_ms"] == meta["latencies_ms"]["time_to_first_token"]
    assert list(meta["pipeline"]["stages_ms"]) == meta["pipeline"]["stages"]  # where the time went, per stage
    conversation = done["conversation_id"]
    follow_up = rs.ask("And how do I disable timeouts?", conversation_id=conversation)
    assert follow_up.metadata["conversation_id"] == conversation
    turns = rs.catalog.conversations.recent_turns(conversation, 10)
    assert [user for user, _ in turns] == [QUESTION, "And how do I disable timeouts?"]
    assert turns[0][1] == done["response"]["answer"]


def test_first_token_time_of_a_paced_llm_stream(make_fast_index):
    """The time to the first token is taken when the first token event leaves, not when the answer ends:
    a reply paced word by word (a real HTTP server) ends well after its first word."""
    before = _first_token_sample("count"), _first_token_sample("sum")
    with RecordingLLM("Timeouts are set on the client with a number of seconds [1].", word_seconds=0.05) as llm:
        rs = make_fast_index(llm={"base_url": llm.base_url, "model": "recorder", "max_retries": 0})
        rs.ingest(MARKDOWN_SAMPLES)
        events = list(rs.stream_answer(QUESTION))
    done = events[-1].data
    assert done["mode"] == "llm"
    latencies = done["response"]["metadata"]["latencies_ms"]
    assert latencies["pipeline"] < done["first_token_ms"] < done["latency_ms"]
    assert _first_token_sample("count") == before[0] + 1
    assert _first_token_sample("sum") - before[1] == pytest.approx(done["first_token_ms"] / 1000, rel=0.01)
    assert rs.ask(QUESTION).metadata["latencies_ms"].get("time_to_first_token") is None  # not streamed: none
    assert _first_token_sample("count") == before[0] + 1


def _first_token_sample(kind: str) -> float:
    """``ragstream_answer_first_token_seconds_<kind>{mode="llm"}`` as ``GET /metrics`` renders it."""
    return metrics.REGISTRY.get_sample_value(f"ragstream_answer_first_token_seconds_{kind}", {"mode": "llm"}) or 0.0



def test_conversation_keeps_last_n_pairs(make_fast_index):
    rs = make_fast_index(pipeline={"N4_RECENT_CONV_MAX_PAIRS": 2})
    rs.ingest(MARKDOWN_SAMPLES[:1])
    conversation = "conv-1"
    for question in (OFF_TOPIC, "How do I bake bread?", "How do I grill fish?"):
        rs.ask(question, conversation_id=conversation)
    assert [pair.user for pair in rs.answers().conversations.recent(conversation)] == [
        "How do I bake bread?", "How do I grill fish?"]


def test_no_results_path_makes_zero_llm_calls(make_fast_index, scripted):
    server = scripted([200])
    rs = make_fast_index(**llm_overrides(server.base_url))
    rs.ingest(MARKDOWN_SAMPLES)
    answer = rs.ask(OFF_TOPIC)
    assert answer.answer == rs.config.answer.no_results_message
    assert answer.confidence.level == "Low"
    assert answer.sources == [] and answer.relatedDocs == [] and answer.citations == []
    assert answer.metadata["chunksRetrieved"] == 0 and answer.metadata["model"] is None
    events = list(rs.stream_answer(OFF_TOPIC))
    assert [e.type for e in events] == ["token", "done"]
    assert rs.answers().llm.calls == 0 and server.requests == []


def test_retry_policy_through_ask(make_fast_index, scripted):
    server = scripted([429, 500, 200])
    rs = make_fast_index(**llm_overrides(server.base_url))
    rs.ingest(MARKDOWN_SAMPLES)
    answer = rs.ask(QUESTION, selected_text="timeout=httpx.Timeout(10.0)")
    assert answer.metadata["mode"] == "llm" and answer.metadata["model"] == "scripted"
    # the 429 waited in the waiting line (answer/llm_line.py) and the question asked again; the 500 was retried
    assert len(server.requests) == 3 and rs.answers().llm.calls == 3 and rs.answers().llm.retries == 1
    assert [c.number for c in answer.citations] == [1, 2] and all(c.matched for c in answer.citations)
    request = server.requests[-1]
    system, user = (message["content"] for message in request["messages"])
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert "timeout=httpx.Timeout(10.0)" in user and "SOURCE:" not in system
    for number in range(1, len(answer.metadata["context_chunk_ids"]) + 1):
        assert f"[{number}] SOURCE: " in user  # every attachment the model sees has the number it cites
    assert f"[{len(answer.metadata['context_chunk_ids']) + 1}] SOURCE" not in user


def test_400_is_not_retried_and_degrades_to_the_extractive_answer(make_fast_index, scripted):
    server = scripted([400])
    rs = make_fast_index(**llm_overrides(server.base_url))
    rs.ingest(MARKDOWN_SAMPLES)
    answer = rs.ask(QUESTION)
    assert len(server.requests) == 1
    assert answer.metadata["mode"] == "extractive" and "llm_request_error" in answer.metadata["degraded_reason"]
    assert answer.answer.startswith("Extractive answer (LLM unavailable") and answer.citations


def test_unmatched_citations_are_reported_not_sources(make_fast_index, scripted):
    server = scripted([200], reply="Timeouts default to five seconds [1]. See also [42] and [Cooking pasta].")
    rs = make_fast_index(**llm_overrides(server.base_url))
    rs.ingest(MARKDOWN_SAMPLES)
    answer = rs.ask(QUESTION)
    assert answer.metadata["unmatched_citations"] == ["42", "Cooking pasta"]
    assert [c.number for c in answer.citations if c.matched] == [1]
    assert len(answer.sources) == 1 and answer.sources[0].url == answer.citations[0].url


def test_invalid_questions(make_fast_index):
    rs = make_fast_index()
    with pytest.raises(InvalidQueryError):
        rs.ask("  ")
    with pytest.raises(InvalidQueryError):
        rs.ask("x" * (rs.config.answer.max_question_chars + 1))


def test_a_stream_closed_early_is_recorded_incomplete(make_fast_index):
    rs = make_fast_index()
    rs.ingest(MARKDOWN_SAMPLES)
    events = rs.stream_answer("How do I set a timeout on a client?", conversation_id="leaving")
    assert next(events).type == "token"
    events.close()  # the consumer goes away before "done"
    turns = rs.conversation("leaving")
    assert len(turns) == 1 and turns[0]["incomplete"] is True
    finished = list(rs.stream_answer("And how do I disable it?", conversation_id="leaving"))
    assert finished[-1].type == "done"
    assert [turn["incomplete"] for turn in rs.conversation("leaving")] == [True, False]


def test_extractive_quotes_keep_the_code_example_they_introduce(make_fast_index):
    rs = make_fast_index()
    rs.ingest(MARKDOWN_SAMPLES)
    answer = rs.ask("How do I set a timeout on a client?")
    assert "```" in answer.answer and "timeout=" in answer.answer
    assert answer.answer.count("```") % 2 == 0, "examples are whole fenced blocks"
    assert answer.metadata["unmatched_citations"] == [] and answer.citations
