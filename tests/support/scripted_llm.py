"""A real HTTP server that answers chat requests with a scripted sequence of statuses (not a test module)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.loopback import LoopbackServer


def completion_body(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


class ScriptedServer(LoopbackServer):
    """A real HTTP server on 127.0.0.1 answering chat requests with a scripted status sequence.

    A real provider cannot be made to answer 429 or 500 on demand, so the retry policy is tested
    against this server: the full HTTP path (SDK, httpx, sockets) runs, only the answers are scripted.
    The last status of ``script`` repeats forever. ``reply`` is the text of 200 answers;
    ``refuse_json_mode`` answers 400 to requests that carry ``response_format``.
    """

    def __init__(self, script: list[int], *, reply: str = "hello", refuse_json_mode: bool = False, delay: float = 0.0):
        self.script = list(script)
        self.reply = reply
        self.refuse_json_mode = refuse_json_mode
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with outer._lock:
                    outer.requests.append(body)
                    status = outer.script.pop(0) if len(outer.script) > 1 else outer.script[0]
                if outer.delay:
                    time.sleep(outer.delay)
                if outer.refuse_json_mode and "response_format" in body:
                    status = 400
                payload = completion_body(outer.reply) if status == 200 else {
                    "error": {"message": f"scripted {status}", "type": "scripted", "code": status}
                }
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out first
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)
