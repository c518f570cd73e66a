"""``answer.citation_grammar``: the answering call carries a llama.cpp grammar of sentences that each end with a
marker of an attachment (ragstream/answer/cite_grammar.py), and a real llama.cpp model writes only that."""

from __future__ import annotations

import re

import pytest
from support.answer_fixtures import MARKDOWN_SAMPLES
from support.recording_llm import RecordingLLM

from ragstream.answer.cite_grammar import citation_grammar
from ragstream.config import LLMConfig
from ragstream.providers.llm_client import LLMClient

QUESTION = "How do I set a timeout on a request?"


def _allowed(text: str, attachments: int, finished: bool) -> bool:
    """Whether ``text`` is an answer the grammar allows: sentences without full stops or colons inside, each ending
    `` [n].`` or ``. [n]`` (n in 1..attachments); cut by the token cap (not ``finished``), complete sentences and
    the start of one."""
    n = f"[1-{attachments}]"
    sentence = rf"[^\[\]\n.:]+( \[{n}\]\.|\. \[{n}\])"
    if finished:
        return re.fullmatch(rf"{sentence}( {sentence})*", text) is not None
    return re.fullmatch(rf"({sentence} ?)*[^\[\]\n.:]*(\.? \[{n}?)?", text) is not None


def test_the_grammar_names_each_attachment_and_bounds_the_sentences():
    grammar = citation_grammar(3, 4)
    assert 'number ::= "1" | "2" | "3"' in grammar
    assert '(" " sentence){0,3}' in grammar
    assert "{0," not in citation_grammar(2, 1)
    with pytest.raises(ValueError):
        citation_grammar(0, 4)


def test_the_answering_call_carries_the_grammar_of_its_attachments(make_fast_index):
    with RecordingLLM(reply="Set the timeout on the client [1].") as server:
        llm = {"base_url": server.base_url, "model": "recorder", "max_retries": 0}
        rs = make_fast_index(llm=llm, answer={"citation_grammar": True, "citation_grammar_sentences": 3},
                             pipeline={"llm_stages": []})
        rs.ingest(MARKDOWN_SAMPLES)
        answer = rs.ask(QUESTION)
        events = list(rs.stream_answer(QUESTION))
        rs.close()
        plain = make_fast_index(data_dir=rs.config.data_dir, llm=llm, pipeline={"llm_stages": []})
        plain.ask(QUESTION)
    attachments = len(answer.metadata["context_chunk_ids"])
    assert attachments and events[-1].type == "done"
    asked, streamed, without = server.requests
    assert asked["grammar"] == streamed["grammar"] == citation_grammar(attachments, 3)
    assert streamed["stream"] is True and "grammar" not in without
    assert answer.metadata["mode"] == "llm" and answer.citations[0].match_type == "number"


@pytest.mark.slow
def test_a_llama_cpp_model_writes_only_what_the_grammar_allows(smollm2_server: str):
    client = LLMClient(LLMConfig(base_url=smollm2_server, max_tokens=120, timeout_seconds=120.0))
    messages = [{"role": "user", "content": "Attachments: [1] Timeouts default to five seconds. [2] Pools hold ten "
                                            "connections.\nTask: how long is the default timeout?"}]
    result = client.chat(messages, grammar=citation_grammar(2, 3))
    assert _allowed(result.text, 2, result.finish_reason == "stop"), result.text
    stream = client.stream_chat(messages, grammar=citation_grammar(2, 3))
    streamed = "".join(stream)
    assert _allowed(streamed, 2, stream.result.finish_reason == "stop"), streamed
