"""Issue 25.6: the llama.cpp test fixture reports a server that died, with its exit signal and log tail.

A llama.cpp server that crashes (built for instructions the CPU lacks, it died by SIGILL on its first chat
request) left every test after it failing with "Connection refused", which hid the cause. A real llama.cpp
cannot be made to execute an illegal instruction on this machine, so the fixture here runs a stand-in server process (a
stdlib HTTP server that answers ``GET /v1/models`` and kills itself with SIGILL on a chat request) through
the fixture's ``command`` seam, in an inner pytest run whose report is checked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parents[1]
INNER_TIMEOUT_SECONDS = 300

FAKE_SERVER = '''
import os, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

print("fake llama: model loaded, serving", flush=True)


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"object": "list", "data": [{"id": "fake"}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        print("fake llama: first chat request, executing an illegal instruction", flush=True)
        os.kill(os.getpid(), signal.SIGILL)

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
'''

INNER_CONFTEST = '''
import sys
from pathlib import Path

sys.path.insert(0, {tests!r})
from support.llm_server import llama_server_fixture, llama_servers_alive  # noqa: E402,F401

FAKE = Path(__file__).with_name("fake_llama.py")
fake_server = llama_server_fixture("fake_server", lambda request: FAKE,
                                   command=lambda model, port: [sys.executable, str(model), str(port)])
'''

INNER_TESTS = '''
import httpx


def test_the_chat_request_that_kills_it(fake_server):
    httpx.post(fake_server + "/chat/completions", json={{"messages": []}}, timeout=30)


def test_a_later_test(fake_server):
    assert httpx.get(fake_server + "/models", timeout=30).status_code == 200
'''


def test_a_server_killed_by_a_signal_is_reported_with_the_signal_and_its_log(tmp_path: Path):
    (tmp_path / "fake_llama.py").write_text(FAKE_SERVER)
    (tmp_path / "conftest.py").write_text(textwrap.dedent(INNER_CONFTEST.format(tests=str(TESTS_DIR))))
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(INNER_TESTS.format()))
    env = {key: value for key, value in os.environ.items() if key != "RAGSTREAM_REQUIRE_LLAMA"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", str(tmp_path)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=INNER_TIMEOUT_SECONDS)
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert output.count("killed by signal SIGILL") >= 2, output  # the test it died in, and the one after
    assert "fake llama: first chat request, executing an illegal instruction" in output  # its log tail
    assert "ERROR at teardown of test_the_chat_request_that_kills_it" in output, output
    later = output.split("ERROR at setup of test_a_later_test", 1)
    assert len(later) == 2, output  # failed at setup, before it could try to connect
    assert "Connection refused" not in later[1].split("short test summary")[0], output
