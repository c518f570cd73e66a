"""``ragstream serve --llm-model PATH``: the server answers with a local GGUF model it runs in a child process, and
takes that process with it when it stops (slow: a real model)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from support.index_fixtures import SAMPLES
from support.required import packaged_model, require_xllamacpp
from support.server_process import running_server

from ragstream.providers.gguf_models import smollm2_gguf_path
from ragstream.providers.local_llm import CHILD_MODULE

pytestmark = pytest.mark.slow
TIMEOUT = 600.0
WAIT_SECONDS = 60.0


def _model_children(pid: int) -> list[int]:
    """The local model servers among the children of process ``pid``."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        for child in (task / "children").read_text().split():
            try:
                if CHILD_MODULE in Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(child))
            except OSError:
                pass
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except OSError:
        return True
    return state == "Z"


def test_serve_answers_with_a_local_model_and_stops_it_on_exit(tmp_path: Path):
    require_xllamacpp()
    model = packaged_model(smollm2_gguf_path)
    with running_server(tmp_path, hash_embedder=True, args=["--llm-model", str(model)],
                        LLM__CONTEXT_WINDOW="2048", LLM__THREADS="1") as server:
        assert server.process is not None
        children = _model_children(server.process.pid)
        assert len(children) == 1, "serve starts the model server at start-up"
        with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
            files = [("files", (name, (SAMPLES / name).read_bytes(), "text/markdown"))
                     for name in ("httpx-timeouts.md", "httpx-async.md")]
            assert client.post("/api/documents", files=files).status_code == 201
            answer = client.post("/api/query", json={"query": "How do I set a timeout for connecting?"}).json()
    assert answer["metadata"]["mode"] == "llm", answer["metadata"].get("degraded_reason")
    assert answer["metadata"]["model"] == model.name and answer["sentences"]
    ends = time.monotonic() + WAIT_SECONDS
    while not _gone(children[0]):
        assert time.monotonic() < ends, "the model server outlived ragstream serve"
        time.sleep(0.2)
