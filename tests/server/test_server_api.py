"""The HTTP API against a real ``ragstream serve`` process, over HTTP (issue 5).

The server embeds with the hash embedder and indexes the packaged samples: every route is
exercised without the real model. Uploading the real files beside the repo is ``slow``.
"""

from __future__ import annotations

import hashlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.folder_corpus import IMAGES, NOT_DOCUMENTS
from support.index_fixtures import SAMPLES
from support.server_process import RunningServer, running_server

from ragstream.writes.upload_store import user_folder

MAX_FILE_BYTES = 1_000_000
MAX_REQUEST_BYTES = 3_000_000
LIMITS = {"LIMITS__MAX_FILE_BYTES": str(MAX_FILE_BYTES), "LIMITS__MAX_REQUEST_BYTES": str(MAX_REQUEST_BYTES)}
TIMEOUT = httpx.Timeout(180.0)
LOG_WAIT_SECONDS = 10.0
PDFS = ("federal-register-2020-17221.pdf",)
MARKDOWN = ("httpx-timeouts.md", "httpx-async.md", "httpx-quickstart.md")
REAL_PDFS = ("002-trivial-libre-office-writer.pdf", "pdflatex-outline.pdf")
REAL_MARKDOWN = ("advanced/timeouts.md", "async.md", "quickstart.md")
QUESTION = "How do I set a timeout on a client?"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64)
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(64)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("server"), hash_embedder=True, **LIMITS) as running:
        yield running


@pytest.fixture(scope="module")
def api(server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        yield client


def upload(api: httpx.Client, paths: list[Path]) -> dict[str, dict]:
    """Upload ``paths`` in one request; checks 201 and every sha256; results by file name."""
    files = [("files", (path.name, path.read_bytes())) for path in paths]
    response = api.post("/api/documents", files=files)
    assert response.status_code == 201, response.text
    results = {item["filename"]: item for item in response.json()["files"]}
    for path in paths:
        assert results[path.name]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    return results


@pytest.fixture(scope="module")
def ingested(api: httpx.Client) -> dict[str, dict]:
    """The packaged sample PDF and Markdown files, uploaded in one request; results by file name."""
    return upload(api, [SAMPLES / name for name in (*PDFS, *MARKDOWN)])


def assert_stored_safely(server: RunningServer, results: dict[str, dict]) -> None:
    assert {item["status"] for item in results.values()} == {"ingested"}
    for item in results.values():
        folder, day, name = item["stored_as"].split("/")
        assert folder == user_folder("local") and len(day) == len("2025-01-01") and len(name) == 32
        assert (server.data_dir / "uploads" / item["stored_as"]).is_file()
        assert item["chunks"] > 0


def assert_error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body["error"]) == {"code", "type", "message"}
    assert body["error"]["code"] == code
    assert body["request_id"] == response.headers["x-request-id"]
    return body


def test_upload_files_stored_safely(server: RunningServer, ingested: dict[str, dict]):
    assert_stored_safely(server, ingested)


def assert_pdf_listed_with_chunks(api: httpx.Client, pdf: dict, filename: str) -> None:
    listed = {doc["document_id"]: doc for doc in api.get("/api/documents").json()}
    assert pdf["document_id"] in listed
    detail = api.get(f"/api/documents/{pdf['document_id']}", params={"include_chunks": True}).json()
    assert detail["document"]["metadata"]["filename"] == filename
    assert detail["chunks"] and detail["chunks"][0]["metadata"]["page"] == 1
    chunks = api.get(f"/api/documents/{pdf['document_id']}/chunks").json()
    assert [c["chunk_id"] for c in chunks] == [c["chunk_id"] for c in detail["chunks"]]


def test_list_get_chunks(api: httpx.Client, ingested: dict[str, dict]):
    assert_pdf_listed_with_chunks(api, ingested[PDFS[0]], PDFS[0])


@pytest.mark.slow
def test_upload_real_files(tmp_path: Path, shared_data: Path):
    """The real PDFs and Markdown files beside the repo, uploaded in one request, on a server of their own."""
    paths = [shared_data / "pdfs" / name for name in REAL_PDFS]
    paths += [shared_data / "markdown_docs" / "httpx" / "docs" / name for name in REAL_MARKDOWN]
    with running_server(tmp_path, hash_embedder=True, **LIMITS) as real, \
            httpx.Client(base_url=real.url, timeout=TIMEOUT) as client:
        results = upload(client, paths)
        assert_stored_safely(real, results)
        assert_pdf_listed_with_chunks(client, results[REAL_PDFS[1]], REAL_PDFS[1])


def test_duplicate_upload_is_reported(api: httpx.Client, ingested: dict[str, dict]):
    path = SAMPLES / PDFS[0]
    response = api.post("/api/documents", files={"files": ("copy.pdf", path.read_bytes())})
    assert response.status_code == 200, response.text
    item = response.json()["files"][0]
    assert item["status"] == "duplicate" and item["duplicate_of"] == [ingested[PDFS[0]]["document_id"]]
    assert item["stored_as"] is None


def test_bad_files_fail_alone(api: httpx.Client):
    files = [("files", ("broken.pdf", b"%PDF-1.7\n1 0 obj <<")), ("files", ("image.txt", PNG)),
             ("files", ("notes.md", b"# Notes\n\nThe upload of good files goes on when others fail."))]
    response = api.post("/api/documents", files=files)
    assert response.status_code == 201, response.text
    by_name = {item["filename"]: item for item in response.json()["files"]}
    assert by_name["broken.pdf"]["error"]["code"] == "corrupt_document"
    assert by_name["image.txt"]["error"]["code"] == "corrupt_document", "a PNG by content, read by OCR, but broken"
    assert "cannot decode the image" in by_name["image.txt"]["error"]["message"]
    assert by_name["notes.md"]["status"] == "ingested"
    assert response.json()["failed"] == 2 and response.json()["ingested"] == 1


def test_only_bad_files_is_a_client_error(api: httpx.Client):
    body = assert_error(api.post("/api/documents", files={"files": ("a.txt", ELF)}), 415, "unsupported_file_type")
    assert body["files"][0]["status"] == "failed"
    assert_error(api.post("/api/documents", files={"files": ("empty.txt", b"  \n")}), 422, "empty_document")
    assert_error(api.post("/api/documents", data={"other": "x"}), 422, "no_files")
    assert_error(api.post("/api/documents", json={"files": []}), 422, "no_files")


def test_path_traversal_name_is_stored_under_uploads(server: RunningServer, api: httpx.Client, tmp_path: Path):
    content = b"root:x:0:0 is what a passwd line looks like; this one is harmless text."
    response = api.post("/api/documents", files={"files": ("../../etc/passwd", content)},
                        headers={"X-User-ID": "../../evil user"})
    assert response.status_code == 201, response.text
    item = response.json()["files"][0]
    assert item["filename"] == "passwd"
    stored = (server.data_dir / "uploads" / item["stored_as"]).resolve()
    assert stored.is_relative_to((server.data_dir / "uploads").resolve())
    assert stored.read_bytes() == content
    assert item["stored_as"].startswith(f"{user_folder('../../evil user')}/")
    assert user_folder("../../evil user").startswith("eviluser-")
    assert not (server.data_dir.parent / "etc").exists()
    deleted = api.delete(f"/api/documents/{item['document_id']}", headers={"X-User-ID": "../../evil user"})
    assert deleted.status_code == 200 and not stored.exists()


def test_oversized_file_is_413(api: httpx.Client):
    big = b"a" * (MAX_FILE_BYTES + 1)
    body = assert_error(api.post("/api/documents", files={"files": ("big.txt", big)}), 413, "file_too_large")
    assert body["files"][0]["stored_as"] is None


def test_oversized_request_is_413_before_reading(api: httpx.Client):
    files = [("files", (f"part{i}.txt", b"b" * (MAX_FILE_BYTES - 1))) for i in range(4)]
    assert_error(api.post("/api/documents", files=files), 413, "request_too_large")


def test_oversized_streamed_request_is_413(server: RunningServer):
    """No Content-Length (chunked): the limit is enforced while the body streams in."""
    head = b'--x\r\nContent-Disposition: form-data; name="files"; filename="s.txt"\r\n\r\n'
    block = b"c" * 100_000

    def body() -> Iterator[bytes]:
        yield head
        for _ in range(MAX_REQUEST_BYTES // len(block) + 2):
            yield block
        yield b"\r\n--x--\r\n"

    response = httpx.post(f"{server.url}/api/documents", content=body(), timeout=TIMEOUT,
                          headers={"Content-Type": "multipart/form-data; boundary=x"})
    assert "content-length" not in response.request.headers
    assert_error(response, 413, "request_too_large")


def test_declared_length_over_limit_is_refused_unread(server: RunningServer):
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"POST /api/documents HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=x\r\n"
                     b"Content-Length: 999999999999\r\n\r\n")
        sock.settimeout(180.0)
        reply = b""
        while b"request_too_large" not in reply:
            data = sock.recv(65536)
            if not data:
                break
            reply += data
    assert reply.startswith(b"HTTP/1.1 413") and b"request_too_large" in reply


def test_delete_removes_document_and_upload(server: RunningServer, api: httpx.Client):
    response = api.post("/api/documents", files={"files": ("gone.md", b"# Gone\n\nThis document will be deleted.")})
    item = response.json()["files"][0]
    stored = server.data_dir / "uploads" / item["stored_as"]
    assert stored.is_file()
    deleted = api.delete(f"/api/documents/{item['document_id']}")
    assert deleted.json() == {"deleted": item["document_id"], "upload_removed": True}
    assert not stored.exists()
    assert_error(api.get(f"/api/documents/{item['document_id']}"), 404, "document_not_found")
    assert_error(api.delete(f"/api/documents/{item['document_id']}"), 404, "document_not_found")


def test_search(api: httpx.Client, ingested: dict[str, dict]):
    result = api.post("/api/search", json={"query": "pool timeout", "top_k": 3}).json()
    assert result["mode"] == "hybrid" and len(result["hits"]) == 3
    assert result["hits"][0]["chunk"]["metadata"]["extra"]["filename"] == "httpx-timeouts.md"
    filtered = api.post("/api/search", json={"query": "timeout", "mode": "bm25", "filters": {"has_code": True}}).json()
    assert filtered["hits"] and all(hit["chunk"]["metadata"]["has_code"] for hit in filtered["hits"])
    assert_error(api.post("/api/search", json={"query": "  "}), 422, "invalid_query")
    assert_error(api.post("/api/search", json={"query": "x", "top_k": 10_000}), 422, "invalid_query")


def test_search_rerank_is_a_per_request_option(api: httpx.Client, ingested: dict[str, dict], tmp_path: Path):
    off = api.post("/api/search", json={"query": QUESTION, "top_k": 5, "rerank": True}).json()  # this server: backend none
    assert off["reranked"] is False and off["rerank_reason"] == "reranker.backend is none"
    with running_server(tmp_path, hash_embedder=True, RERANKER__BACKEND="onnx", RERANKER__TOP_N="4") as on, \
            httpx.Client(base_url=on.url, timeout=TIMEOUT) as client:
        upload(client, [SAMPLES / name for name in MARKDOWN])
        plain = client.post("/api/search", json={"query": QUESTION, "top_k": 6}).json()
        reranked = client.post("/api/search", json={"query": QUESTION, "top_k": 6, "rerank": True}).json()
    assert plain["reranked"] is False and all(hit["rerank_score"] is None for hit in plain["hits"])
    assert reranked["reranked"] is True and reranked["rerank_reason"] is None and "rerank" in reranked["latencies_ms"]
    ids = [hit["chunk"]["chunk_id"] for hit in plain["hits"]]
    new_ids = [hit["chunk"]["chunk_id"] for hit in reranked["hits"]]
    assert sorted(new_ids[:4]) == sorted(ids[:4]) and new_ids[4:] == ids[4:]  # the head re-ordered, the tail kept
    fused = {hit["chunk"]["chunk_id"]: hit["score"] for hit in plain["hits"]}
    for rank, hit in enumerate(reranked["hits"], start=1):
        assert hit["rank"] == rank and hit["fused_score"] == pytest.approx(fused[hit["chunk"]["chunk_id"]])
        assert (hit["rerank_score"] is not None) == (rank <= 4)
    assert [hit["score"] for hit in reranked["hits"]] == sorted((hit["score"] for hit in reranked["hits"]), reverse=True)


def test_error_shapes(api: httpx.Client):
    assert_error(api.get("/api/nowhere"), 404, "not_found")
    assert_error(api.put("/api/search"), 405, "method_not_allowed")
    body = assert_error(api.post("/api/search", content=b"{not json", headers={"Content-Type": "application/json"}),
                        422, "validation_error")
    assert body["details"]
    assert_error(api.post("/api/search", json={"query": 5, "mode": "fuzzy"}), 422, "validation_error")


def test_request_ids(server: RunningServer, api: httpx.Client):
    given = api.get("/healthz", headers={"X-Request-ID": "trace-42.a"})
    assert given.headers["x-request-id"] == "trace-42.a"
    fresh = api.get("/api/documents")
    assert len(fresh.headers["x-request-id"]) == 32
    unsafe = api.get("/healthz", headers={"X-Request-ID": "bad id\twith spaces"})
    assert unsafe.headers["x-request-id"] != "bad id\twith spaces"
    api.get("/api/documents", headers={"X-Request-ID": "find-me-in-the-log"})
    line = "[find-me-in-the-log] ragstream.server: GET /api/documents 200"
    deadline = time.monotonic() + LOG_WAIT_SECONDS  # the server logs the request after answering it
    while line not in server.log_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert line in server.log_text()


def test_reindex(api: httpx.Client, ingested: dict[str, dict]):
    report = api.post("/api/documents/reindex").json()
    assert report["documents_processed"] == len(api.get("/api/documents").json())  # every user's (only "local" has any)
    assert report["documents_failed"] == 0


def test_pipeline_manual_then_auto(api: httpx.Client, ingested: dict[str, dict]):
    stages = api.get("/api/pipeline/stages").json()
    assert len(stages) == 8
    registry = api.get("/api/pipeline/stages", params={"detail": "true"}).json()  # the stage registry, for the UI
    assert [stage["name"] for stage in registry] == stages and [stage["order"] for stage in registry] == list(range(1, 9))
    assert [(stage["entry"], stage["view_parent"]) for stage in registry if stage["view"]] == [
        ("retrieval", None), ("reranked", "retrieval"), ("a3", "reranked"), ("a4", "a3")]
    assert [stage["llm_key"] for stage in registry if stage["llm_key"]] == ["a0", "a2", "a3", "a4", "a5"]
    assert "rerank" in registry[3]["writes"] and registry[3]["scored"] and registry[3]["cap"] == "N2_RERANK_TOP_K"
    created = api.post("/api/pipeline", json={"text": QUESTION})
    assert created.status_code == 201
    state = created.json()
    assert state["next_stage"] == stages[0] and state["superprompt"]["stage"] == "raw"
    assert_error(api.post(f"/api/pipeline/{state['id']}/run", json={"stage": stages[2]}), 409, "stage_order")
    assert_error(api.post(f"/api/pipeline/{state['id']}/run", json={"stage": "nope"}), 422, "unknown_stage")
    for expected in stages[:3]:
        state = api.post(f"/api/pipeline/{state['id']}/run", json={"stage": expected}).json()
    assert state["stages_run"] == 3 and state["next_stage"] == stages[3]
    assert state["superprompt"]["views_by_stage"]["retrieval"]
    state = api.post(f"/api/pipeline/{state['id']}/auto", json={}).json()
    assert state["next_stage"] is None and state["superprompt"]["prompt_ready"]
    assert api.get(f"/api/pipeline/{state['id']}").json() == state
    assert_error(api.post(f"/api/pipeline/{state['id']}/run", json={}), 409, "stage_order")
    assert_error(api.get("/api/pipeline/unknown"), 404, "pipeline_not_found")


def _sse(response: httpx.Response) -> list[tuple[str, dict]]:
    events = []
    for block in response.text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_chat_streams_tokens_citations_done(api: httpx.Client, ingested: dict[str, dict]):
    response = api.post("/api/chat", json={"message": QUESTION})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = _sse(response)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "token" and kinds[-1] == "done" and "citation" in kinds
    citation = next(data for kind, data in events if kind == "citation")
    assert citation["chunk_id"] and citation["title"]
    done = events[-1][1]
    assert done["conversation_id"] and done["message_id"]
    assert 0 < done["first_token_ms"] <= done["latency_ms"]
    assert metric_samples(api)['ragstream_answer_first_token_seconds_count{mode="extractive"}'] >= 1
    assert_error(api.post("/api/chat", json={"message": ""}), 422, "invalid_query")


def test_query_and_retrieve(api: httpx.Client, ingested: dict[str, dict]):
    answer = api.post("/api/query", json={"query": QUESTION}).json()
    assert {"answer", "sources", "relatedDocs", "citations", "confidence", "metadata"} <= set(answer)
    assert answer["confidence"]["level"] in {"High", "Medium", "Low"} and answer["confidence"]["reason"]
    context = api.post("/api/retrieve", json={"query": QUESTION, "max_chunks": 3}).json()
    assert 0 < context["total_chunks"] <= 3 and context["document_chunks"][0]["relevance_score"] > 0
    assert_error(api.post("/api/query", json={"query": "x" * 5000}), 422, "invalid_query")
    assert_error(api.post("/api/retrieve", json={"query": "x", "max_chunks": 10_000}), 422, "invalid_query")


def test_openai_compatible(api: httpx.Client, ingested: dict[str, dict]):
    request = {"model": "ragstream", "messages": [{"role": "user", "content": QUESTION}]}
    completion = api.post("/v1/chat/completions", json=request).json()
    assert completion["object"] == "chat.completion"
    assert completion["choices"][0]["message"]["content"]
    assert completion["ragstream"]["confidence"]["level"]
    streamed = api.post("/v1/chat/completions", json={**request, "stream": True})
    lines = [line.removeprefix("data: ") for line in streamed.text.splitlines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    chunks = [json.loads(line) for line in lines[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text and chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert_error(api.post("/v1/chat/completions", json={"messages": [{"role": "system", "content": "hi"}]}),
                 422, "invalid_query")


def test_openai_clients_list_the_ragstream_model(server: RunningServer, api: httpx.Client):
    from openai import OpenAI

    client = OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
    assert [model.id for model in client.models.list()] == ["ragstream", "ragstream/default"]  # each collection too
    card = client.models.retrieve("ragstream")
    assert card.object == "model" and card.owned_by == "ragstream" and card.created > 0
    assert client.models.retrieve("ragstream/default").id == "ragstream/default"
    listed = api.get("/v1/models").json()
    assert listed["object"] == "list" and listed["data"][0] == api.get("/v1/models/ragstream").json()
    assert_error(api.get("/v1/models/gpt-4o"), 404, "model_not_found")


def metric_samples(api: httpx.Client) -> dict[str, float]:
    """``GET /metrics`` as ``{'name{labels}': value}``."""
    samples = {}
    for line in api.get("/metrics").text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


FAILED_FILES = 'ragstream_ingested_files_total{outcome="failed"}'


def test_svg_script_stylesheet_and_image_uploads_are_refused_and_counted(api: httpx.Client):
    before = metric_samples(api).get(FAILED_FILES, 0.0)
    contents = {name: text.encode() for name, text in NOT_DOCUMENTS.items()}
    files = [("files", (Path(name).name, data)) for name, data in contents.items()]
    body = assert_error(api.post("/api/documents", files=files), 415, "unsupported_file_type")
    assert [item["status"] for item in body["files"]] == ["failed"] * len(files)
    assert {item["error"]["code"] for item in body["files"]} == {"unsupported_file_type"}
    assert "SVG image" in body["error"]["message"] and "script" in body["error"]["message"]
    # Images are read by OCR: a blank logo has no text, a JPEG header alone is no image.
    images = [("files", (Path(name).name, data)) for name, data in IMAGES.items()]
    body = assert_error(api.post("/api/documents", files=images), 422, "upload_failed")
    assert {item["filename"]: item["error"]["code"] for item in body["files"]} == {
        "logo.png": "empty_document", "photo.jpg": "corrupt_document"}
    assert metric_samples(api)[FAILED_FILES] == before + len(files) + len(images)


def test_every_failed_upload_is_counted(api: httpx.Client):
    before = metric_samples(api).get(FAILED_FILES, 0.0)
    files = [("files", ("broken.pdf", b"%PDF-1.7\n1 0 obj <<")), ("files", ("empty.md", b"  \n")),
             ("files", ("big.txt", b"x" * (MAX_FILE_BYTES + 1))),
             ("files", ("fine.md", b"# Counted\n\nOnly the failures of this upload are counted as failed."))]
    response = api.post("/api/documents", files=files)
    assert response.status_code == 201 and response.json()["failed"] == 3, response.text
    assert metric_samples(api)[FAILED_FILES] == before + 3


def test_metrics(api: httpx.Client, ingested: dict[str, dict]):
    api.post("/api/search", json={"query": "async client"})
    for _ in range(2):  # a miss, then a hit of the retrieval cache
        api.post("/api/retrieve", json={"query": "metrics cache probe", "context_key": "metrics:test"})
    response = api.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    samples = {}
    for line in response.text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    assert samples['ragstream_ingested_files_total{outcome="processed"}'] >= len(PDFS) + len(MARKDOWN)
    assert samples["ragstream_chunks_written_total"] > 0
    assert samples['ragstream_embedding_calls_total{kind="documents"}'] > 0
    assert samples['ragstream_searches_total{mode="hybrid"}'] > 0
    assert samples["ragstream_documents"] >= len(PDFS) + len(MARKDOWN)
    assert any(name.startswith("ragstream_search_seconds_bucket") for name in samples)
    assert samples['ragstream_http_requests_total{method="POST",route="/api/search",status="200"}'] > 0
    assert samples['ragstream_cache_lookups_total{cache="retrieval",outcome="hit"}'] >= 1
    assert samples['ragstream_cache_lookups_total{cache="retrieval",outcome="miss"}'] >= 1


def test_ui_and_docs_are_served(api: httpx.Client):
    assert api.get("/", follow_redirects=False).headers["location"] == "/ui/"
    page = api.get("/ui/documents.html")
    assert page.status_code == 200 and "<main" in page.text
    docs = api.get("/docs")
    assert docs.status_code == 200 and "/static-offline-docs/swagger-ui-bundle.js" in docs.text
    assert api.get("/static-offline-docs/swagger-ui-bundle.js").status_code == 200
    assert "/api/documents" in api.get("/openapi.json").json()["paths"]
