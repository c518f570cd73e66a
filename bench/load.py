"""Load benchmark: concurrent readers and one writer against a loopback ``ragstream serve``.

Usage: python bench/load.py [--clients 50] [--seconds 60] [--baseline-seconds 20] [--hash-embedder]
                            [--corpus ../shared/data/markdown_docs] [--keep DIR]

Starts ``ragstream serve`` on a free loopback port over a fresh data directory, uploads a copy of a
small real corpus (the httpx Markdown docs by default) and three "versioned" documents whose every
sentence carries the marker ``[d<doc>v<version>]``. Then, for a bounded time:

* ``--clients`` concurrent readers loop over ``POST /api/search``, ``/api/query``, ``/api/chat`` (SSE,
  read to the ``done`` event) and ``/api/retrieve``, questions alternating between the corpus and the
  versioned documents;
* one writer uploads the next version of the three documents, deletes one every few rounds and
  reindexes everything every few rounds.

Each reader response is checked for mixed versions: a response holding chunks (or quoted answer
sentences) of two versions of one document counts in ``mixed_version_responses`` (must be 0). The
readers-only phase first (``--baseline-seconds``) is the baseline of the same run. Prints one JSON
object: requests, errors by status, mixed-version responses, p50/p95/p99 per route, throughput, the
writer's operations and the load average. The packaged model embeds unless ``--hash-embedder``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "markdown_docs"
SERVE = "from ragstream.cli import app; app()"
SERVE_WITH_HASH_EMBEDDER = (f"import sys; sys.path.insert(0, {str(REPO / 'tests')!r}); from support import hash_embedder; "
                            "hash_embedder.install_as_default(); " + SERVE)
STARTUP_SECONDS = 300.0
REQUEST_TIMEOUT = httpx.Timeout(300.0)
VERSIONED_DOCS = 3
MARKER = re.compile(r"\[d(\d+)v(\d+)\]")
DELETE_EVERY = 2
"""The writer deletes one versioned document every this many rounds."""
REINDEX_EVERY = 3
"""... and reindexes everything every this many rounds."""
READER_ROUTES = ("search", "query", "chat", "retrieve")
CORPUS_QUESTIONS = (
    "How do I set a timeout on a client?",
    "How do I send an async request?",
    "How do I stream a response body?",
    "How do I configure proxies?",
    "How are cookies persisted across requests?",
    "What authentication schemes are supported?",
)
VERSIONED_QUESTIONS = (
    "What does paragraph 2 of document 1 say about the weather in spring?",
    "paragraph document marker spring weather topic",
)
PERCENTILES = (50, 95, 99)


@dataclass
class Tally:
    """What one phase saw."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[str] = field(default_factory=Counter)
    mixed: int = 0
    checked: int = 0
    with_versioned: int = 0
    writer_ops: Counter[str] = field(default_factory=Counter)

    def summary(self, seconds: float) -> dict[str, Any]:
        requests = sum(len(values) for route, values in self.latencies.items() if route in READER_ROUTES)
        return {
            "seconds": round(seconds, 1),
            "reader_requests": requests,
            "throughput_rps": round(requests / seconds, 2) if seconds else 0.0,
            "statuses": dict(sorted(self.statuses.items())),
            "errors_by_status": {status: n for status, n in sorted(self.statuses.items()) if not status.startswith("2")},
            "mixed_version_responses": self.mixed,
            "responses_checked_for_versions": self.checked,
            "responses_holding_versioned_docs": self.with_versioned,
            "writer_ops": dict(self.writer_ops),
            "latency_ms": {route: _percentiles(values) for route, values in sorted(self.latencies.items())},
        }


def _percentiles(values: list[float]) -> dict[str, float]:
    ms = np.array(values) * 1000
    return {"n": len(values), **{f"p{p}": round(float(np.percentile(ms, p)), 1) for p in PERCENTILES}}


def versions(texts: Iterable[str]) -> dict[int, set[int]]:
    """Versioned document number -> the versions named in ``texts``."""
    found: dict[int, set[int]] = defaultdict(set)
    for text in texts:
        for doc, version in MARKER.findall(text):
            found[int(doc)].add(int(version))
    return found


def versioned_files(version: int) -> list[tuple[str, tuple[str, bytes]]]:
    """Version ``version`` of the versioned documents (their paragraph count varies by version)."""
    files = []
    for doc in range(VERSIONED_DOCS):
        tag = f"[d{doc}v{version}]"
        paragraphs = [f"Paragraph {p} of document {doc} {tag} talks about topic {doc * 10 + p} {tag}. "
                      f"It also says the weather in spring is mild {tag} and the marker repeats {tag}. " * 2
                      for p in range(6 + 2 * (version % 3))]
        files.append(("files", (f"versioned{doc}.txt", "\n\n".join(paragraphs).encode())))
    return files


def response_texts(route: str, body: Any) -> list[str]:
    """The chunk texts (or answer text) a reader response holds."""
    if route == "search":
        return [hit["chunk"]["text"] for hit in body["hits"]]
    if route == "retrieve":
        return [chunk["text"] for chunk in body["document_chunks"]]
    return [body]  # query / chat: the answer text, whose extractive sentences carry their markers


async def reader(client: httpx.AsyncClient, number: int, deadline: float, tally: Tally) -> None:
    step = number
    while time.monotonic() < deadline:
        route = READER_ROUTES[step % len(READER_ROUTES)]
        # every route asks both kinds of question: the set flips once per round of routes
        questions = VERSIONED_QUESTIONS if (step // len(READER_ROUTES)) % 2 else CORPUS_QUESTIONS
        question = questions[(step // (2 * len(READER_ROUTES))) % len(questions)]
        step += 1
        started = time.perf_counter()
        try:
            status, texts = await _call(client, route, question)
        except httpx.HTTPError as error:
            tally.statuses[f"transport:{type(error).__name__}"] += 1
            continue
        tally.latencies[route].append(time.perf_counter() - started)
        tally.statuses[str(status)] += 1
        if texts is not None:
            tally.checked += 1
            found = versions(texts)
            tally.with_versioned += bool(found)
            if any(len(seen) > 1 for seen in found.values()):
                tally.mixed += 1


async def _call(client: httpx.AsyncClient, route: str, question: str) -> tuple[int, list[str] | None]:
    if route == "chat":
        answer: list[str] = []
        event = ""
        async with client.stream("POST", "/api/chat", json={"message": question}) as response:
            if response.status_code != 200:
                await response.aread()
                return response.status_code, None
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line[len("event: "):]
                elif line.startswith("data: ") and event == "token":
                    answer.append(json.loads(line[len("data: "):])["token"])
                elif line.startswith("data: ") and event == "error":
                    return 599, None  # an error event mid-stream
        return 200, ["".join(answer)]
    path, key = {"search": ("/api/search", "query"), "query": ("/api/query", "query"),
                 "retrieve": ("/api/retrieve", "query")}[route]
    response = await client.post(path, json={key: question})
    if response.status_code != 200:
        return response.status_code, None
    body = response.json()
    return 200, response_texts(route, body["answer"] if route == "query" else body)


async def writer(client: httpx.AsyncClient, deadline: float, tally: Tally, first_version: int) -> None:
    """Round after round: upload the next version; every DELETE_EVERY-th round also delete one versioned
    document, every REINDEX_EVERY-th round reindex everything (the first rounds include both)."""
    version = first_version
    round_number = 0
    while time.monotonic() < deadline:
        version += 1
        round_number += 1
        await _write("upload", tally, client.post("/api/documents", files=versioned_files(version)))
        if round_number % DELETE_EVERY == 1 and time.monotonic() < deadline:
            docs = (await client.get("/api/documents")).json()
            victims = [d["document_id"] for d in docs if d["title"].startswith("versioned")]
            if victims:
                await _write("delete", tally, client.delete(f"/api/documents/{victims[0]}"))
        if round_number % REINDEX_EVERY == 2 and time.monotonic() < deadline:
            await _write("reindex", tally, client.post("/api/documents/reindex"))


async def _write(op: str, tally: Tally, call: Coroutine[Any, Any, httpx.Response]) -> None:
    started = time.perf_counter()
    try:
        response = await call
    except httpx.HTTPError as error:
        tally.statuses[f"writer:{op}:transport:{type(error).__name__}"] += 1
        return
    tally.latencies[f"writer_{op}"].append(time.perf_counter() - started)
    tally.writer_ops[f"{op}:{response.status_code}"] += 1


async def phase(url: str, clients: int, seconds: float, with_writer: bool, first_version: int) -> dict[str, Any]:
    tally = Tally()
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    async with httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT, limits=limits) as client:
        started = time.monotonic()
        deadline = started + seconds
        tasks = [reader(client, number, deadline, tally) for number in range(clients)]
        if with_writer:
            tasks.append(writer(client, deadline, tally, first_version))
        await asyncio.gather(*tasks)
        elapsed = time.monotonic() - started
    return {**tally.summary(elapsed), "load_average_after": [round(x, 2) for x in os.getloadavg()]}


async def warm_up(url: str) -> dict[str, Any]:
    """Every question once on the answer route, then once per reader route, one at a time, so the
    baseline measures the steady state (models loaded, passage and sentence vectors cached) rather
    than 50 clients paying for the same cold caches at once. Returns the statuses and the seconds."""
    started = time.perf_counter()
    statuses: Counter[str] = Counter()
    async with httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT) as client:
        for question in (*CORPUS_QUESTIONS, *VERSIONED_QUESTIONS):
            statuses[str((await _call(client, "query", question))[0])] += 1
        for route in READER_ROUTES:
            statuses[str((await _call(client, route, CORPUS_QUESTIONS[0]))[0])] += 1
    return {"statuses": dict(statuses), "seconds": round(time.perf_counter() - started, 1)}


def start_server(data_dir: Path, hash_embedder: bool, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSTREAM_")}
    env.update({"RAGSTREAM_DATA_DIR": str(data_dir), "RAGSTREAM_SERVER__LOG_LEVEL": "warning",
                "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)})
    if hash_embedder:
        env["RAGSTREAM_RERANKER__BACKEND"] = "none"
    return launch(SERVE_WITH_HASH_EMBEDDER if hash_embedder else SERVE, env, log)


def launch(code: str, env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``python -c code serve`` on a free loopback port (its output in ``log``); returns once /healthz answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-c", code, "serve", "--host", "127.0.0.1", "--port", str(port)],
                                   env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{log.read_text(errors='replace')}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200:
                return process, url
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    process.kill()
    raise RuntimeError("server did not start")


def seed(url: str, corpus: Path) -> dict[str, Any]:
    files = [("files", (path.name, path.read_bytes())) for path in sorted(corpus.rglob("*.md"))]
    started = time.perf_counter()
    response = httpx.post(f"{url}/api/documents", files=[*files, *versioned_files(0)], timeout=REQUEST_TIMEOUT)
    response.raise_for_status()
    if response.status_code == 202:  # a background job: wait for it
        job_id = response.json()["id"]
        while (job := httpx.get(f"{url}/api/jobs/{job_id}").json())["state"] not in ("succeeded", "failed"):
            time.sleep(0.5)
        if job["state"] != "succeeded":
            raise RuntimeError(f"seeding failed: {job}")
    count = len(httpx.get(f"{url}/api/documents").json())
    return {"documents": count, "files": len(files) + VERSIONED_DOCS, "seconds": round(time.perf_counter() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0, help="Readers + writer phase.")
    parser.add_argument("--baseline-seconds", type=float, default=20.0, help="Readers-only phase first (0: none).")
    parser.add_argument("--hash-embedder", action="store_true", help="Embed with the test hash embedder (fast).")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--keep", type=Path, default=None, help="Use (and keep) this data directory.")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ragstream-load-"))
    data_dir = args.keep or work / "data"
    corpus = work / "corpus"
    shutil.copytree(args.corpus, corpus)  # a copy: the bench never touches the shared data
    process, url = start_server(data_dir, args.hash_embedder, work / "server.log")
    try:
        result: dict[str, Any] = {
            "clients": args.clients, "embedder": "hash" if args.hash_embedder else "packaged model",
            "cpus": os.cpu_count(), "load_average_before": [round(x, 2) for x in os.getloadavg()],
            "seed": seed(url, corpus),
        }
        result["warm_up"] = asyncio.run(warm_up(url))
        if args.baseline_seconds > 0:
            result["baseline_readers_only"] = asyncio.run(phase(url, args.clients, args.baseline_seconds, False, 0))
        result["readers_and_writer"] = asyncio.run(phase(url, args.clients, args.seconds, True, 0))
        errors_500 = {k: v for k, v in result["readers_and_writer"]["statuses"].items() if k.startswith("5")}
        result["server_errors"] = errors_500
        print(json.dumps(result, indent=2))
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
