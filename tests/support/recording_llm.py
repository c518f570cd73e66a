"""A real OpenAI-compatible HTTP server on 127.0.0.1 that records every request (not a test module).

It answers chat completions, streamed (SSE) or not, with a fixed reply, so tests can read exactly
which messages ragstream sent and count the requests. ``hang=True`` accepts requests and never
answers (a hung endpoint): a real model cannot be made to hang on demand. ``word_seconds`` paces a
streamed reply (a pause before each word), so a client can leave mid-answer; ``disconnects`` counts the
streams whose reader hung up before the last word.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.loopback import LoopbackServer
from support.openai_wire import completion, send_json, stream_words

MODEL = "recorder"


class RecordingLLM(LoopbackServer):
    """Records request bodies; replies ``reply``, or ``respond(body)`` when given (or hangs). Use as a context
    manager."""

    def __init__(self, reply: str = "Timeouts are set on the client [1].", *, hang: bool = False,
                 word_seconds: float = 0.0, respond: Callable[[dict[str, Any]], str] | None = None) -> None:
        self.reply = reply
        self.hang = hang
        self.respond = respond
        self.word_seconds = word_seconds
        self.requests: list[dict[str, Any]] = []
        self.disconnects = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                outer.requests.append(body)
                if outer.hang:
                    outer.release.wait()
                    return
                text = outer.respond(body) if outer.respond is not None else outer.reply
                try:
                    if body.get("stream"):
                        stream_words(self, MODEL, text, outer.word_seconds)
                    else:
                        send_json(self, 200, completion(MODEL, text))
                except (BrokenPipeError, ConnectionResetError):
                    outer.disconnects += 1

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)
