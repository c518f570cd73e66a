"""``ragstream mcp`` (issue 23) driven by the MCP SDK's own client over stdio: a real subprocess on an index of
the bundled samples (four httpx Markdown pages and a Federal Register PDF), embedded with the hash embedder."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from support.hash_embedder import HashEmbedder
from support.index_fixtures import FAST_DEFAULTS, SAMPLES
from support.mcp_client import CLI, Mcp, connected, stdio_session, text_of, wait_for
from support.recording_llm import RecordingLLM
from support.server_process import server_env

from ragstream import Ragstream, load_config

TIMEOUTS = "httpx-timeouts.md"
QUESTION = "How do I set a timeout on a request?"
PAGE_SIZE = 2
READ_TOOLS = {"search", "ask", "rate_answer", "list_documents", "read"}


def open_index(data_dir: Path) -> Ragstream:
    return Ragstream(load_config(data_dir=data_dir, **FAST_DEFAULTS), embedder=HashEmbedder())


def timeouts_index(tmp_path: Path) -> Path:
    """A data dir of its own holding the timeouts page (an index is open in one process at a time)."""
    data_dir = tmp_path / "data"
    with open_index(data_dir) as rs:
        assert rs.ingest([SAMPLES / TIMEOUTS]).documents_processed == 1
    return data_dir


@pytest.fixture(scope="module")
def samples_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("mcp-stdio") / "data"
    with open_index(data_dir) as rs:
        assert rs.ingest([SAMPLES]).documents_processed == len(list(SAMPLES.iterdir()))
    return data_dir


@pytest.fixture(scope="module")
def mcp(samples_dir: Path) -> Iterator[Mcp]:
    with (samples_dir.parent / "stderr.log").open("w") as errlog, \
            connected(stdio_session(samples_dir, errlog=errlog, MCP__PAGE_SIZE=str(PAGE_SIZE))) as client:
        yield client


def test_the_tools_are_listed_with_schemas_and_query_advice(mcp: Mcp):
    tools = mcp.tools()
    assert set(tools) == READ_TOOLS  # ingest and delete are off over stdio unless configured
    for tool in tools.values():
        assert tool.input_schema["additionalProperties"] is False and tool.output_schema
        assert tool.annotations is not None
    for name in ("search", "ask"):
        description = tools[name].description or ""
        assert "stand-alone" in description and "pronoun" in description
    assert tools["ask"].output_schema is not None and {"answer", "citations", "sources", "confidence",
                                                        "conversation_id"} <= set(tools["ask"].output_schema["properties"])


def test_search_returns_attributed_passages(mcp: Mcp):
    result = mcp.call("search", {"query": "set a timeout on a client", "top_k": 4})
    found = result.structured_content
    assert found is not None and not result.is_error
    passages = found["passages"]
    assert len(passages) == 4 and [p["rank"] for p in passages] == [1, 2, 3, 4]
    assert passages[0]["source"].endswith(TIMEOUTS) and "timeout" in passages[0]["text"].lower()
    for passage in passages:
        assert passage["chunk_id"] and passage["document_id"] and passage["title"] and passage["section_path"]
        assert passage["chunk_id"] in text_of(result) and passage["source"] in text_of(result)
    only = mcp.ok("search", {"query": "timeout", "filters": {"source": passages[0]["source"]}})["passages"]
    assert only and {p["source"] for p in only} == {passages[0]["source"]}
    unranked = mcp.ok("search", {"query": "set a timeout on a client", "top_k": 4, "rerank": True})
    assert unranked["reranked"] is False and unranked["rerank_reason"]  # the fast tier's config has no cross-encoder
    assert [p["chunk_id"] for p in unranked["passages"]] == [p["chunk_id"] for p in passages]
    pdf = mcp.ok("search", {"query": "Federal Register proposed rules", "mode": "bm25", "top_k": 3})
    assert pdf["mode"] == "bm25" and pdf["passages"][0]["source"].endswith(".pdf")
    assert isinstance(pdf["passages"][0]["page"], int)


def test_ask_answers_with_citations_and_reports_progress(mcp: Mcp):
    progress: list[str] = []
    result = mcp.call("ask", {"question": QUESTION}, progress)
    answer = result.structured_content
    assert answer is not None and not result.is_error
    assert answer["mode"] == "extractive" and "[1]" in answer["answer"]
    cited = [c for c in answer["citations"] if c["matched"]]
    assert cited and any((c["source"] or "").endswith(TIMEOUTS) for c in cited)
    assert {s["document_id"] for s in answer["sources"]} <= {c["document_id"] for c in cited}
    assert answer["confidence"]["level"] in ("High", "Medium", "Low")
    assert progress[0] == "retrieving passages and running the pipeline" and progress[-1] == "done"
    assert "writing the answer" in progress
    text = text_of(result)
    assert answer["answer"] in text and "Sources:" in text and answer["conversation_id"] in text
    follow_up = mcp.ok("ask", {"question": "How do I disable timeouts on a client?",
                              "conversation_id": answer["conversation_id"]})
    assert follow_up["conversation_id"] == answer["conversation_id"] and follow_up["message_id"] != answer["message_id"]


def test_the_asker_rates_an_answer_by_its_message_id(tmp_path: Path):
    data_dir = timeouts_index(tmp_path)
    with (tmp_path / "stderr.log").open("w") as errlog, connected(stdio_session(data_dir, errlog=errlog)) as client:
        result = client.call("ask", {"question": QUESTION})
        message_id = result.structured_content["message_id"]
        assert f"message_id: {message_id}" in text_of(result)  # the text a model reads names it too
        rated = client.call("rate_answer", {"message_id": message_id, "rating": "not_helpful", "comment": "too vague"})
        assert not rated.is_error and rated.structured_content == {
            "message_id": message_id, "rating": "not_helpful", "comment": "too vague"}
        assert "not helpful" in text_of(rated)
        assert client.ok("rate_answer", {"message_id": message_id, "rating": "helpful"})["rating"] == "helpful"
        assert client.error("rate_answer", {"message_id": "no-such-answer", "rating": "helpful"})["code"] == \
            "message_not_found"
        assert client.error("rate_answer", {"message_id": message_id, "rating": "meh"})["code"] == "invalid_arguments"
        assert client.error("rate_answer", {"message_id": message_id, "rating": "helpful",
                                            "comment": "x" * 100_000})["code"] == "invalid_feedback"
    with open_index(data_dir) as rs:  # kept in the catalog: the later rating replaced the first
        summary = rs.feedback.summary()
        assert (summary.answers, summary.helpful_rate) == (1, 1.0)
        assert [(day.helpful, day.not_helpful) for day in summary.days] == [(1, 0)]


def test_list_documents_pages_and_filters(mcp: Mcp):
    first = mcp.ok("list_documents", {})
    assert first["total"] == 5 and first["limit"] == PAGE_SIZE and first["next_offset"] == PAGE_SIZE
    seen = [doc["document_id"] for doc in first["documents"]]
    offset = first["next_offset"]
    while offset is not None:
        page = mcp.ok("list_documents", {"offset": offset})
        seen += [doc["document_id"] for doc in page["documents"]]
        offset = page["next_offset"]
    assert len(seen) == len(set(seen)) == 5
    timeouts = mcp.ok("list_documents", {"query": "timeouts"})
    assert [doc["source"].rsplit("/", 1)[-1] for doc in timeouts["documents"]] == [TIMEOUTS]
    doc = timeouts["documents"][0]
    assert doc["shared"] is True and doc["chunks"] > 1 and doc["uri"] == f"ragstream://documents/{doc['document_id']}"
    by_title = mcp.ok("list_documents", {"sort": "title", "order": "desc", "limit": 5})["documents"]
    assert [d["title"] for d in by_title] == sorted((d["title"] for d in by_title), key=str.lower, reverse=True)


def test_read_gives_a_document_by_pages_and_a_chunk_with_its_neighbours(mcp: Mcp):
    [doc] = mcp.ok("list_documents", {"query": "timeouts"})["documents"]
    page = mcp.ok("read", {"document_id": doc["document_id"], "limit": 2})
    assert [c["index"] for c in page["chunks"]] == [0, 1] and page["total_chunks"] == doc["chunks"]
    assert page["next_offset"] == 2
    middle = mcp.ok("read", {"document_id": doc["document_id"], "offset": 2, "limit": 1})["chunks"][0]
    around = mcp.ok("read", {"document_id": doc["document_id"], "chunk_id": middle["chunk_id"], "neighbours": 1})
    assert [c["index"] for c in around["chunks"]] == [1, 2, 3] and around["focus_chunk_id"] == middle["chunk_id"]
    assert around["chunks"][1] == middle
    result = mcp.call("read", {"document_id": doc["document_id"], "chunk_id": middle["chunk_id"], "neighbours": 0})
    assert middle["text"] in text_of(result) and "(the chunk asked for)" in text_of(result)


def test_documents_are_resources_and_the_prompt_quotes_passages(mcp: Mcp):
    first = mcp.resources()
    assert len(first.resources) == PAGE_SIZE and first.next_cursor == str(PAGE_SIZE)
    uris = [str(r.uri) for r in first.resources]
    cursor = first.next_cursor
    while cursor:
        page = mcp.resources(cursor)
        uris += [str(r.uri) for r in page.resources]
        cursor = page.next_cursor
    assert len(set(uris)) == 5 and all(uri.startswith("ragstream://documents/") for uri in uris)
    [doc] = mcp.ok("list_documents", {"query": "timeouts"})["documents"]
    text = mcp.read_resource(doc["uri"])
    assert text.startswith(f"# {doc['title']}") and "timeout" in text.lower() and len(text) > 1000
    chunk = mcp.ok("read", {"document_id": doc["document_id"], "limit": 1})["chunks"][0]
    assert chunk["text"] in mcp.read_resource(f"{doc['uri']}/chunks/{chunk['chunk_id']}")
    templates = mcp.portal.call(mcp.session.list_resource_templates).resource_templates
    assert {t.uri_template for t in templates} == {"ragstream://documents/{document_id}",
                                                   "ragstream://documents/{document_id}/chunks/{chunk_id}"}
    [prompt] = mcp.portal.call(mcp.session.list_prompts).prompts
    assert prompt.title == "Answer from my documents" and prompt.arguments and prompt.arguments[0].required
    message = mcp.prompt(prompt.name, {"question": QUESTION})
    assert f"Question: {QUESTION}" in message and "[1] " in message and TIMEOUTS in message


@pytest.mark.parametrize(("tool", "arguments", "code"), [
    ("search", {"query": "timeout", "colour": "red"}, "invalid_arguments"),
    ("search", {"query": 42}, "invalid_arguments"),
    ("search", {}, "invalid_arguments"),
    ("ask", {"question": "timeout", "conversation_id": "no spaces allowed"}, "invalid_arguments"),
    ("search", {"query": "timeout " * 2000}, "invalid_query"),
    ("ask", {"question": "timeout " * 2000}, "invalid_query"),
    ("search", {"query": "timeout", "top_k": 10_000}, "invalid_query"),
    ("search", {"query": "timeout", "filters": {"colour": "red"}}, "unknown_filter_field"),
    ("read", {"document_id": "no-such-document"}, "document_not_found"),
    ("list_documents", {"limit": 100_000}, "invalid_query"),
    ("ingest", {"documents": [{"name": "a.md", "text": "# A\n\nText."}]}, "forbidden"),
    ("rm_rf", {}, "unknown_tool"),
])
def test_bad_input_gets_a_tool_error_with_its_code(mcp: Mcp, tool: str, arguments: dict[str, Any], code: str):
    error = mcp.error(tool, arguments)
    assert error["code"] == code and error["message"]
    assert mcp.ok("search", {"query": "timeout", "top_k": 1})["passages"]  # the server goes on


def test_missing_chunks_and_resources_are_not_found(mcp: Mcp):
    [doc] = mcp.ok("list_documents", {"query": "timeouts"})["documents"]
    assert mcp.error("read", {"document_id": doc["document_id"], "chunk_id": "gone"})["code"] == "chunk_not_found"
    for uri, code in ((f"{doc['uri']}/chunks/gone", "chunk_not_found"), ("ragstream://documents/gone", "document_not_found"),
                      ("ragstream://elsewhere/x", "resource_not_found")):
        with pytest.raises(MCPError) as caught:
            mcp.read_resource(uri)
        assert caught.value.code == -32002 and caught.value.data["code"] == code
    with pytest.raises(MCPError) as caught:
        mcp.prompt("answer_from_documents", {})
    assert caught.value.data["code"] == "invalid_arguments"


def test_stdout_carries_only_mcp_messages_even_when_code_prints(tmp_path: Path):
    # A library that prints cannot be produced on demand: the server process patches search to print first.
    noisy = ("import ragstream.mcp_server.tools as t; original = t.Tools.search; "
             "t.Tools.search = lambda self, *a: (print('stray output from a library'), original(self, *a))[1]; ")
    with (tmp_path / "stderr.log").open("w") as errlog, \
            connected(stdio_session(timeouts_index(tmp_path), errlog=errlog, before=noisy)) as client:
        assert client.ok("search", {"query": "timeout"})["passages"]
        assert client.ok("search", {"query": "async client"})["passages"]
    log = (tmp_path / "stderr.log").read_text()
    assert "stray output from a library" in log and "ragstream.mcp: tool search answered" in log


@pytest.mark.parametrize(("tool", "arguments"), [
    ("ingest", {"documents": [{"name": "memo.md", "text": "# Memo\n\nDue Friday.\n"}]}),
    ("delete", {"document_id": "x"}),
])
def test_admin_tools_off_over_stdio_say_how_to_turn_them_on(mcp: Mcp, tool: str, arguments: dict[str, Any]):
    error = mcp.error(tool, arguments)  # stdio has no keys: "needs an admin key" would leave the user stuck
    assert error["code"] == "forbidden" and "admin key" not in error["message"]
    assert "ragstream mcp --admin-tools" in error["message"] and "mcp.stdio_admin_tools" in error["message"]


def test_admin_tools_over_stdio_when_configured(tmp_path: Path):
    data_dir = tmp_path / "data"
    note = tmp_path / "notes" / "pelican.md"
    note.parent.mkdir()
    note.write_text("# Pelican harbour\n\nThe pelican harbour opens at dawn for the fishing boats.\n")
    with (tmp_path / "stderr.log").open("w") as errlog, \
            connected(stdio_session(data_dir, errlog=errlog, MCP__STDIO_ADMIN_TOOLS="true")) as client:
        assert set(client.tools()) == READ_TOOLS | {"ingest", "delete"}
        done = client.ok("ingest", {"paths": [str(note.parent)],
                                    "documents": [{"name": "zebra.md", "text": "# Zebra crossing\n\nA zebra crossing "
                                                   "gives pedestrians the right of way.\n", "metadata": {"team": "roads"}}]})
        assert done["ingested"] == 2 and done["failed"] == 0 and len(done["document_ids"]) == 2
        again = client.ok("ingest", {"documents": [{"name": "zebra.md", "text": "# Zebra crossing\n\nA zebra crossing "
                                                    "gives pedestrians the right of way.\n", "metadata": {"team": "roads"}}]})
        assert again["unchanged"] == 1 and again["ingested"] == 0  # the same name and text: nothing to do
        bad = client.ok("ingest", {"documents": [{"name": "empty.md", "text": "   "}]})
        assert bad["failed"] == 1 and bad["failures"][0]["code"] == "empty_document"
        zebra = client.ok("search", {"query": "zebra crossing pedestrians", "filters": {"team": "roads"}})["passages"]
        assert zebra and zebra[0]["source"] == "mcp://zebra.md"
        assert client.ok("search", {"query": "pelican harbour dawn"})["passages"][0]["source"] == str(note)
        deleted = client.ok("delete", {"document_id": zebra[0]["document_id"]})
        assert deleted["deleted"] == zebra[0]["document_id"]
        assert client.error("read", {"document_id": zebra[0]["document_id"]})["code"] == "document_not_found"
    with open_index(data_dir) as rs:
        assert [record.source for record in rs.documents()] == [str(note)]


def test_a_cancelled_ask_stops_the_llm_call_and_keeps_the_turn_incomplete(tmp_path: Path):
    data_dir = timeouts_index(tmp_path)
    reply = " ".join(["Timeouts are set on the client [1]."] * 60)
    conversation = "cancelled-over-stdio"
    with RecordingLLM(reply, word_seconds=0.02) as llm, (tmp_path / "stderr.log").open("w") as errlog, \
            connected(stdio_session(data_dir, errlog=errlog, LLM__BASE_URL=llm.base_url, LLM__MODEL="recorder")) as client:
        async def ask_then_cancel() -> list[str]:
            seen: list[str] = []
            with anyio.CancelScope() as scope:
                async def progress(value: float, total: float | None, message: str | None) -> None:
                    seen.append(message or "")
                    if "tokens written" in (message or ""):
                        scope.cancel()  # the client gives up mid-answer: the SDK sends notifications/cancelled
                await client.session.call_tool("ask", {"question": QUESTION, "conversation_id": conversation},
                                               progress_callback=progress)
            return seen

        seen = client.portal.call(ask_then_cancel)
        assert "done" not in seen and any("tokens written" in message for message in seen)
        wait_for(lambda: llm.disconnects == 1, "the LLM stream to be closed")
        assert len(llm.requests) == 1
        assert client.ok("search", {"query": "timeout"})["passages"]  # the server goes on
    log = (tmp_path / "stderr.log").read_text()
    assert "ask ended before its answer was done" in log
    with open_index(data_dir) as rs:
        [turn] = rs.conversation(conversation)
    assert turn["incomplete"] is True and turn["user"] == QUESTION and turn["assistant"].startswith("Timeouts")


def test_a_client_that_goes_away_mid_answer_stops_the_llm_call(tmp_path: Path):
    data_dir = timeouts_index(tmp_path)
    reply = " ".join(["Timeouts are set on the client [1]."] * 60)
    conversation = "client-left-over-stdio"
    with RecordingLLM(reply, word_seconds=0.02) as llm, (tmp_path / "stderr.log").open("w") as errlog:
        async def ask_and_quit() -> list[str]:
            seen: list[str] = []
            with anyio.CancelScope() as scope:
                async with stdio_session(data_dir, errlog=errlog, LLM__BASE_URL=llm.base_url,
                                         LLM__MODEL="recorder") as session:
                    async def progress(value: float, total: float | None, message: str | None) -> None:
                        seen.append(message or "")
                        if "tokens written" in (message or ""):
                            scope.cancel()  # the client quits: its end of the pipes closes, the server sees EOF
                    await session.call_tool("ask", {"question": QUESTION, "conversation_id": conversation},
                                            progress_callback=progress)
            return seen

        seen = anyio.run(ask_and_quit)
        assert "done" not in seen and any("tokens written" in message for message in seen)
        wait_for(lambda: llm.disconnects == 1, "the LLM stream to be closed")
    with open_index(data_dir) as rs:  # the server process has ended and left the turn behind
        [turn] = rs.conversation(conversation)
    assert turn["incomplete"] is True


def test_without_the_sdk_ragstream_mcp_names_the_extra(tmp_path: Path):
    # The SDK is installed here: hiding it (sys.modules entry None) is the only way to produce its absence.
    code = "import sys; sys.modules['mcp'] = None; " + CLI
    done = subprocess.run([sys.executable, "-c", code, "mcp"], env=server_env(tmp_path / "data"), capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == ""
    assert "pip install 'ragstream[mcp]'" in done.stderr


@pytest.mark.slow
def test_the_packaged_model_behind_ragstream_mcp(make_index, tmp_path: Path):
    """What users run: the real model loads in the server process and nothing it prints reaches stdout."""
    data_dir = tmp_path / "real"
    rs = make_index(data_dir=data_dir)
    rs.ingest([SAMPLES])
    rs.close()
    with (tmp_path / "stderr.log").open("w") as errlog, \
            connected(stdio_session(data_dir, errlog=errlog, hash_embedder=False)) as client:
        passages = client.ok("search", {"query": "How do I disable timeouts?", "top_k": 3})["passages"]
        assert passages[0]["source"].endswith(TIMEOUTS)
        answer = client.ok("ask", {"question": QUESTION})
        assert any((c["source"] or "").endswith(TIMEOUTS) for c in answer["citations"] if c["matched"])
