"""Streaming end to end against the real local LLM server (Qwen2.5-Coder-0.5B on llama.cpp).

The model writes whatever it writes; the contract checked is ragstream's: every citation event
names a chunk of the prompt's context, each at most once, right after its marker; markers naming
no prompt chunk appear only as unmatched; the tokens add up to the answer.
"""

from __future__ import annotations

from support.answer_fixtures import MARKDOWN_SAMPLES, llm_overrides

QUESTION = "How do I set a timeout on a request?"
SMALL_CONTEXT = {"context_tokens": 700}
MAX_ATTACHMENTS = 3


def test_stream_with_citation_events(make_index, qwen_server):
    rs = make_index(**llm_overrides(qwen_server, max_tokens=120), answer=SMALL_CONTEXT,
                    pipeline={"N3_FINAL_SELECTION_MAX": MAX_ATTACHMENTS})
    rs.ingest(MARKDOWN_SAMPLES)
    events = list(rs.stream_answer(QUESTION))
    assert events[-1].type == "done"
    done = events[-1].data
    response = done["response"]
    context = response["metadata"]["context_chunk_ids"]
    assert response["metadata"]["mode"] == "llm" and response["metadata"]["model"]
    assert 1 <= len(context) <= MAX_ATTACHMENTS

    tokens = "".join(e.data["token"] for e in events if e.type == "token")
    assert tokens.strip() and tokens == response["answer"]
    citation_events = [e.data for e in events if e.type == "citation"]
    assert citation_events, f"the model cited nothing: {tokens!r}"
    assert [c["chunk_id"] for c in citation_events] == [c["chunk_id"] for c in response["citations"] if c["matched"]]
    for citation in citation_events:
        assert citation["chunk_id"] == context[citation["number"] - 1]
        assert citation["url"] and citation["chapter"] == citation["title"]
    unmatched = [c["marker"] for c in response["citations"] if not c["matched"]]
    assert unmatched == done["unmatched_citations"]
    assert {s["url"] for s in response["sources"]} == {c["url"] for c in citation_events}
    assert done["completion_tokens"] and done["latency_ms"] > 0
    assert rs.answers().llm.calls == 1
    print("qwen answer:", tokens, "| citations:", [c["number"] for c in citation_events], "| unmatched:", unmatched)
