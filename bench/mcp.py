"""MCP latency overhead: the same queries through the facade, MCP over stdio and MCP over HTTP (issue 23).

Usage: python bench/mcp.py [--repeat 5] [--top-k 5] [--hash-embedder] [--corpus DIR] [--keep DIR]

Ingests the corpus (the bundled samples by default) once, then copies the index three times so that four
readers can hold it at once: the facade in this process (the baseline), ``ragstream mcp`` as a subprocess
(stdio), and ``ragstream serve`` (its HTTP API as a second reference, and MCP at ``/mcp``). Every query
then runs through each of them in turn (the order rotating), so the timings of one query are paired
and share the machine's load. Each transport answers every query once before timing starts (models
loaded, query vectors and retrievals cached alike everywhere), so what differs is the transport.

Operations: ``search`` (hybrid, top_k) and ``ask`` (the streamed answer read to its end: the facade's
``stream_answer``, MCP's ``ask``, the HTTP API's ``POST /api/chat``); answers are extractive (no LLM),
so the overhead is measured against the smallest answer time. Prints one JSON object: p50/p95/p99/mean per
transport and operation; the paired overhead (median of the per-query differences in ms, and the ratio of
the p50s) of each transport over the facade, and of MCP over HTTP over the plain HTTP API; and the load
average before and after. The packaged model embeds unless
``--hash-embedder``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import launch

from ragstream import Ragstream, load_config

if TYPE_CHECKING:
    from mcp import ClientSession

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent

SAMPLES = REPO / "ragstream" / "samples" / "docs"
CLI = "from ragstream.cli import app; app()"
HASH_EMBEDDER = (f"import sys; sys.path.insert(0, {str(REPO / 'tests')!r}); from support import hash_embedder; "
                 "hash_embedder.install_as_default(); ")
STARTUP_SECONDS = 300.0
TIMEOUT_SECONDS = 300.0
QUESTIONS = (
    "How do I set a timeout on a request?",
    "How do I disable timeouts on a client?",
    "What is a pool timeout?",
    "How do I send an async request?",
    "How do I stream a response body?",
    "Which exception is raised when a request times out?",
    "How do I send JSON in a POST request?",
    "How do I read the response status code?",
    "What do the proposed rules in the Federal Register change?",
    "How do I follow redirects?",
)
OPERATIONS = ("search", "ask")
TRANSPORTS = ("direct", "mcp_stdio", "http_api", "mcp_http")
PAIRS = (("mcp_stdio", "direct"), ("http_api", "direct"), ("mcp_http", "direct"), ("mcp_http", "http_api"))
"""(transport, baseline): each overhead is the median of the per-query differences and the ratio of the p50s."""
PERCENTILES = (50, 95, 99)
Call = Callable[[str, str], Awaitable[None]]


def settings_env(data_dir: Path, hash_embedder: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSTREAM_")}
    env.update({"RAGSTREAM_DATA_DIR": str(data_dir), "RAGSTREAM_SERVER__LOG_LEVEL": "warning", "HF_HUB_OFFLINE": "1",
                "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))})
    if hash_embedder:
        env["RAGSTREAM_RERANKER__BACKEND"] = "none"
    return env


def sdk_on_path() -> None:
    """This file is bench/mcp.py: drop its folder from the import path, so ``import mcp`` finds the MCP SDK; add the
    tests' folder for the hash embedder."""
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != BENCH]
    sys.path.append(str(REPO / "tests"))


def open_direct(data_dir: Path, hash_embedder: bool) -> Ragstream:
    if hash_embedder:
        from hash_embedder import HashEmbedder

        return Ragstream(load_config(data_dir=data_dir, reranker={"backend": "none"}), embedder=HashEmbedder())
    return Ragstream(load_config(data_dir=data_dir))


def start_server(data_dir: Path, hash_embedder: bool, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    return launch((HASH_EMBEDDER if hash_embedder else "") + CLI, settings_env(data_dir, hash_embedder), log)


def summary(values: list[float]) -> dict[str, float]:
    found = {f"p{p}": round(float(np.percentile(values, p)), 2) for p in PERCENTILES}
    return {**found, "mean": round(statistics.fmean(values), 2), "n": len(values)}


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


async def checked(session: ClientSession, tool: str, arguments: dict[str, Any]) -> None:
    result = await session.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.structured_content}")


def transports(rs: Ragstream, stdio: ClientSession, http_mcp: ClientSession, api: httpx.AsyncClient,
               top_k: int) -> dict[str, Call]:
    """One caller per transport: ``call(operation, question)`` runs it to the end (a failure raises)."""
    async def direct(operation: str, question: str) -> None:
        if operation == "search":
            rs.search(question, top_k=top_k)
        else:
            list(rs.stream_answer(question))

    def over_mcp(session: ClientSession) -> Call:
        async def call(operation: str, question: str) -> None:
            if operation == "search":
                await checked(session, "search", {"query": question, "top_k": top_k})
            else:
                await checked(session, "ask", {"question": question})
        return call

    async def http_api(operation: str, question: str) -> None:
        if operation == "search":
            (await api.post("/api/search", json={"query": question, "top_k": top_k})).raise_for_status()
            return
        async with api.stream("POST", "/api/chat", json={"message": question}) as response:
            response.raise_for_status()
            async for _ in response.aiter_lines():
                pass

    return {"direct": direct, "mcp_stdio": over_mcp(stdio), "http_api": http_api, "mcp_http": over_mcp(http_mcp)}


async def measure(calls: dict[str, Call], repeat: int) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Warm every transport on every question, then time ``repeat`` passes in a rotating order."""
    for call in calls.values():
        for question in QUESTIONS:
            for operation in OPERATIONS:
                await call(operation, question)
    timings: dict[tuple[str, str], list[float]] = defaultdict(list)
    turn = 0
    for _ in range(repeat):
        for question in QUESTIONS:
            for operation in OPERATIONS:
                order = TRANSPORTS[turn % len(TRANSPORTS):] + TRANSPORTS[:turn % len(TRANSPORTS)]
                turn += 1
                for name in order:
                    started = time.perf_counter()
                    await calls[name](operation, question)
                    timings[(name, operation)].append((time.perf_counter() - started) * 1000)
    results = {name: {operation: summary(timings[(name, operation)]) for operation in OPERATIONS} for name in TRANSPORTS}
    overhead: dict[str, list[float]] = {}
    for name, baseline in PAIRS:
        for operation in OPERATIONS:
            overhead[f"{name}-{baseline}.{operation}"] = [
                a - b for a, b in zip(timings[(name, operation)], timings[(baseline, operation)], strict=True)]
    return results, overhead


async def run(data_dirs: dict[str, Path], hash_embedder: bool, repeat: int, top_k: int, work: Path) -> dict[str, Any]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client

    rs = open_direct(data_dirs["direct"], hash_embedder)
    process, url = start_server(data_dirs["serve"], hash_embedder, work / "serve.log")
    try:
        async with AsyncExitStack() as stack:
            code = (HASH_EMBEDDER if hash_embedder else "") + CLI
            params = StdioServerParameters(command=sys.executable, args=["-c", code, "mcp"],
                                           env=settings_env(data_dirs["stdio"], hash_embedder))
            errlog = stack.enter_context((work / "mcp-stdio.log").open("w"))
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            stdio = await stack.enter_async_context(ClientSession(read, write))
            await stdio.initialize()
            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=TIMEOUT_SECONDS))
            read, write = await stack.enter_async_context(streamable_http_client(f"{url}/mcp", http_client=http))
            http_mcp = await stack.enter_async_context(ClientSession(read, write))
            await http_mcp.initialize()
            api = await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=TIMEOUT_SECONDS))
            results, paired = await measure(transports(rs, stdio, http_mcp, api, top_k), repeat)
    finally:
        process.terminate()
        process.wait(60)
        rs.close()
    overhead = {}
    for key, values in paired.items():
        pair, operation = key.split(".")
        name, baseline = pair.split("-")
        overhead[key] = {"median_ms": round(statistics.median(values), 2),
                         "ratio_p50": round(results[name][operation]["p50"] / results[baseline][operation]["p50"], 2)}
    return {"results_ms": results, "overhead": overhead}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="Timed passes over the questions.")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--hash-embedder", action="store_true", help="Embed with the tests' hash embedder (quick).")
    parser.add_argument("--corpus", type=Path, default=SAMPLES, help="Folder to ingest (default: the bundled samples).")
    parser.add_argument("--keep", type=Path, help="Keep the indexes and logs in this folder.")
    args = parser.parse_args()
    sdk_on_path()
    work = args.keep or Path(tempfile.mkdtemp(prefix="ragstream-bench-mcp-"))
    work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"corpus": str(args.corpus), "embedder": "hash" if args.hash_embedder else "packaged",
                              "questions": len(QUESTIONS), "repeat": args.repeat, "top_k": args.top_k,
                              "cpus": os.cpu_count(), "load_average_before": load_average()}
    try:
        source = work / "index"
        with open_direct(source, args.hash_embedder) as rs:
            ingest = rs.ingest([args.corpus])
        report["documents"], report["chunks"] = ingest.documents_processed, ingest.chunks_written
        data_dirs = {name: work / f"index-{name}" for name in ("direct", "stdio", "serve")}
        for target in data_dirs.values():
            shutil.copytree(source, target, dirs_exist_ok=True)
        report.update(anyio.run(run, data_dirs, args.hash_embedder, args.repeat, args.top_k, work))
    finally:
        report["load_average_after"] = load_average()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
