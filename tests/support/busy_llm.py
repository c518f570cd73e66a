"""A real OpenAI-compatible HTTP server that is busy on demand: it holds its answers until the test opens
its gate, and answers scripted requests 429 with a Retry-After (not a test module).

A real provider cannot be made slow or rate-limited on demand, so the waiting line in front of the
answering model (``llm.max_concurrent``, ``llm.queue_*``) is tested against this server: the full HTTP path
(SDK, httpx, sockets) runs, only when and what it answers is scripted. ``in_flight_max`` counts the most
requests it ever held at once (how many answers the line let through together).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.loopback import LoopbackServer
from support.openai_wire import completion, send_json, stream_words

MODEL = "busy"
HOLD_SECONDS = 120.0
"""Longest a held answer waits for the gate (the server's shutdown opens it too)."""


class BusyLLM(LoopbackServer):
    """Replies ``reply`` (streamed or not) once ``gate`` is set (set from the start with ``held=False``).

    ``rate_limited``: for the first requests, in order, a Retry-After in seconds (the request is answered 429
    with it at once, without waiting for the gate) or None (answered as usual).
    """

    def __init__(self, reply: str = "Operatives move up to six inches in the movement phase [1].", *,
                 held: bool = True, rate_limited: tuple[float | None, ...] = ()) -> None:
        self.reply = reply
        self.gate = threading.Event()
        if not held:
            self.gate.set()
        self.rate_limited = list(rate_limited)
        self.requests = 0
        self.answered = 0
        self.refused = 0
        self.in_flight = 0
        self.in_flight_max = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with outer._lock:
                    outer.requests += 1
                    retry_after = outer.rate_limited.pop(0) if outer.rate_limited else None
                    if retry_after is None:
                        outer.in_flight += 1
                        outer.in_flight_max = max(outer.in_flight_max, outer.in_flight)
                if retry_after is not None:
                    with outer._lock:
                        outer.refused += 1
                    send_json(self, 429, {"error": {"message": "rate limited", "type": "rate_limit", "code": 429}},
                              {"Retry-After": f"{retry_after:g}"})
                    return
                try:
                    if not outer.gate.is_set():
                        outer.gate.wait(HOLD_SECONDS)
                    if body.get("stream"):
                        stream_words(self, MODEL, outer.reply)
                    else:
                        send_json(self, 200, completion(MODEL, outer.reply))
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with outer._lock:
                        outer.in_flight -= 1
                        outer.answered += 1

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)

    def __exit__(self, *exc: object) -> None:
        self.gate.set()
        super().__exit__(*exc)
