"""Provenance of an answer: each source carries the checksum of the document version it cites, each
attachment's header in the built prompt shows its ranking score, and a document without a chapter (title)
or a chunk under no section heading is cited as "Unknown" / "N/A" (the ingest report warns about it);
in process and over HTTP from a real ``ragstream serve``."""

from __future__ import annotations

import hashlib
import re

import httpx
from support.answer_fixtures import llm_overrides
from support.recording_llm import RecordingLLM
from support.server_process import running_server

from ragstream.models import LoadedDocument, Page

QUESTION = "What does the zanzibarquokka protocol require before a launch?"
TEXT = ("The zanzibarquokka protocol requires two signatures before a launch. Every zanzibarquokka launch is "
        "logged by the duty officer.\n")
TIMEOUT = 60.0


def _untitled() -> LoadedDocument:
    return LoadedDocument(document_id="22222222-2222-2222-2222-222222222222", source="notes/protocol.txt", title="",
                          mime="text/plain", checksum=hashlib.sha256(TEXT.encode()).hexdigest(),
                          size_bytes=len(TEXT), pages=(Page(text=TEXT),))


def test_sources_carry_the_checksum_and_missing_metadata_reads_unknown(make_fast_index):
    rs = make_fast_index()
    report = rs.ingest_documents([_untitled()])
    assert report.documents_processed == 1
    assert "notes/protocol.txt: no chapter (title) metadata: its citations show 'Unknown'" in report.warnings
    assert "notes/protocol.txt: 1 of 1 chunks stand under no section heading: their citations show 'N/A'" \
        in report.warnings
    answer = rs.ask(QUESTION)
    assert answer.sources, answer.answer
    source = answer.sources[0]
    assert source.checksum == hashlib.sha256(TEXT.encode()).hexdigest()
    assert (source.title, source.section) == ("Unknown", "N/A")
    assert all(c.checksum == source.checksum for c in answer.citations if c.matched)


def test_labels_come_from_the_configuration(make_fast_index):
    rs = make_fast_index(answer={"citations": {"missing_chapter_label": "(untitled)", "missing_section_label": "-"}})
    report = rs.ingest_documents([_untitled()])
    assert any(warning.endswith("'(untitled)'") for warning in report.warnings)
    source = rs.ask(QUESTION).sources[0]
    assert (source.title, source.section) == ("(untitled)", "-")


def test_attachment_headers_show_the_ranking_score(make_fast_index, tmp_path):
    page = tmp_path / "protocol.md"
    page.write_text(f"# Launch protocol\n\n## Signatures\n\n{TEXT}")
    with RecordingLLM() as llm:
        rs = make_fast_index(**llm_overrides(llm.base_url, model="recorder"))
        rs.ingest([page])
        answer = rs.ask(QUESTION)
        user = llm.requests[-1]["messages"][1]["content"]
    headers = re.findall(r"\[(\d+)\] SOURCE: .*\nSPAN: .*\nSCORE: (\d\.\d{3})\n---\n", user)
    assert headers and len(headers) == answer.metadata["pipeline"]["selected"]
    assert all(0.0 < float(score) <= 1.0 for _, score in headers)
    source = answer.sources[0]
    assert (source.title, source.section) == ("Launch protocol", "Signatures")  # present metadata is kept


def test_over_http_sources_carry_the_checksum(tmp_path):
    with running_server(tmp_path, hash_embedder=True) as server:
        body = TEXT.encode()
        assert httpx.post(f"{server.url}/api/documents", files={"files": ("protocol.txt", body)},
                          timeout=TIMEOUT).status_code == 201
        answer = httpx.post(f"{server.url}/api/query", json={"query": QUESTION}, timeout=TIMEOUT).json()
    assert answer["sources"][0]["checksum"] == hashlib.sha256(body).hexdigest()
    assert answer["sources"][0]["section"] == "N/A"
    assert answer["citations"][0]["checksum"] == hashlib.sha256(body).hexdigest()
