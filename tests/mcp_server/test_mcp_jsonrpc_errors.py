"""Every MCP request that carries an id gets a JSON-RPC response, over both transports (issue 30.9): a lone
surrogate in a string, params sent as a string, a 5,000-digit integer and a JSON-RPC batch used to leave a
stdio client waiting forever. Raw JSON-RPC lines to a real ``ragstream mcp`` child process, raw POSTs to ``/mcp``
of a real ``ragstream serve``: the SDK's client cannot send these messages.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.mcp_client import CLI, HASH_EMBEDDER
from support.server_process import FAST_SETTINGS, RunningServer, running_server, server_env

REPLY_WAIT_SECONDS = 60.0  # a bound on waiting for a reply that must come, not a performance assertion
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
BIG = "7" * 5000
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def search(request_id: Any, arguments: str) -> str:
    """A tools/call of search, its arguments written as raw JSON text."""
    return (f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "method": "tools/call", '
            f'"params": {{"name": "search", "arguments": {arguments}}}}}')


# (raw message, the id its answer must carry, the JSON-RPC error code, the ragstream reason in data)
HOSTILE = {
    "lone surrogate": (search(11, '{"query": "\\ud800 timeout"}'), 11, INVALID_PARAMS, "invalid_unicode"),
    "params as a string": ('{"jsonrpc": "2.0", "id": 12, "method": "tools/list", "params": "all"}', 12, INVALID_PARAMS,
                           "invalid_params"),
    "5,000-digit integer": (search(13, f'{{"query": "timeout", "top_k": {BIG}}}'), 13, INVALID_PARAMS,
                            "json_number_too_large"),
    "5,000-digit id": (f'{{"jsonrpc": "2.0", "id": {BIG}, "method": "tools/list"}}', None, INVALID_REQUEST,
                       "invalid_request"),
    "string id with a surrogate in the method": ('{"jsonrpc": "2.0", "id": "s-14", "method": "tools/\\udfff"}', "s-14",
                                                 INVALID_REQUEST, "invalid_unicode"),
    "no method": ('{"jsonrpc": "2.0", "id": 15}', 15, INVALID_REQUEST, "invalid_request"),
    "an id that is a boolean": ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', None, INVALID_REQUEST,
                                "invalid_request"),
    "a float too large": (search(18, '{"query": "x", "top_k": 1e400}'), 18, INVALID_PARAMS, "invalid_number"),
    "not JSON": ('{"jsonrpc": "2.0", "id": 16, "method": ', None, PARSE_ERROR, "parse_error"),
    "deep params": (search(17, '{"query": "x", "filters": ' + "[" * 200 + "]" * 200 + "}"), 17, INVALID_PARAMS,
                    "json_too_deep"),
}
BATCH = ('[{"jsonrpc": "2.0", "id": 21, "method": "tools/list"}, {"jsonrpc": "2.0", "method": "notifications/x"}, '
         '{"jsonrpc": "2.0", "id": "b-22", "method": "ping"}]')


def check(answer: dict[str, Any], request_id: Any, code: int, reason: str) -> None:
    assert answer["jsonrpc"] == "2.0" and answer["id"] == request_id, answer
    assert answer["error"]["code"] == code and answer["error"]["data"]["code"] == reason, answer


class StdioClient:
    """``ragstream mcp`` as a child process, spoken to line by line."""

    def __init__(self, data_dir: Path, errlog: Path) -> None:
        self._err = errlog.open("wb")
        self.process = subprocess.Popen([sys.executable, "-c", HASH_EMBEDDER + CLI, "mcp"],
                                        env=server_env(data_dir, **FAST_SETTINGS), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self._err)
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.process.stdin.flush()

    def receive(self, wait: float = REPLY_WAIT_SECONDS) -> dict[str, Any]:
        return json.loads(self._lines.get(timeout=wait))

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(REPLY_WAIT_SECONDS)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self._err.close()


@pytest.fixture(scope="module")
def stdio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioClient]:
    tmp = tmp_path_factory.mktemp("mcp-jsonrpc")
    client = StdioClient(tmp / "data", tmp / "stderr.log")
    try:
        client.send(json.dumps(INITIALIZE))
        assert client.receive()["result"]["serverInfo"]["name"] == "ragstream"
        client.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        yield client
    finally:
        client.close()


@pytest.mark.parametrize("case", list(HOSTILE))
def test_every_request_with_an_id_is_answered_over_stdio(stdio: StdioClient, case: str):
    raw, request_id, code, reason = HOSTILE[case]
    stdio.send(raw)
    check(stdio.receive(), request_id, code, reason)
    stdio.send('{"jsonrpc": "2.0", "id": 99, "method": "ping"}')  # the server goes on
    assert stdio.receive() == {"jsonrpc": "2.0", "id": 99, "result": {}}


def test_a_batch_over_stdio_gets_one_error_per_request(stdio: StdioClient):
    stdio.send(BATCH)
    answers = [stdio.receive(), stdio.receive()]
    for answer, request_id in zip(answers, (21, "b-22"), strict=True):
        check(answer, request_id, INVALID_REQUEST, "batch_not_supported")
    stdio.send('{"jsonrpc": "2.0", "method": "notifications/\\ud800"}')  # a bad notification: never answered
    stdio.send("")
    stdio.send('{"jsonrpc": "2.0", "id": 98, "method": "tools/list"}')
    answer = stdio.receive()  # the next line answers the request: nothing answered the notification or the blank line
    assert answer["id"] == 98 and {tool["name"] for tool in answer["result"]["tools"]} >= {"search", "ask"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("mcp-jsonrpc-http"), hash_embedder=True) as running:
        yield running


def post(server: RunningServer, raw: str | bytes) -> httpx.Response:
    body = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    return httpx.post(f"{server.url}/mcp", content=body, headers=MCP_HEADERS, timeout=REPLY_WAIT_SECONDS)


@pytest.mark.parametrize("case", list(HOSTILE))
def test_every_request_with_an_id_is_answered_over_http(server: RunningServer, case: str):
    raw, request_id, code, reason = HOSTILE[case]
    response = post(server, raw)
    assert response.status_code == 400, response.text
    check(response.json(), request_id, code, reason)


def test_a_batch_over_http_gets_an_array_of_errors(server: RunningServer):
    response = post(server, BATCH)
    assert response.status_code == 400, response.text
    answers = response.json()
    assert isinstance(answers, list) and len(answers) == 2
    for answer, request_id in zip(answers, (21, "b-22"), strict=True):
        check(answer, request_id, INVALID_REQUEST, "batch_not_supported")
    not_utf8 = post(server, b'{"jsonrpc": "2.0", "id": 31, "method": "\xff"}')
    assert not_utf8.status_code == 400 and not_utf8.json()["error"]["code"] == PARSE_ERROR
    assert post(server, json.dumps(INITIALIZE)).status_code == 200  # a good request is the SDK's as before
