"""A real OpenAI-compatible HTTP server on 127.0.0.1 that records every request (not a test module).

It answers chat completions, streamed (SSE) or not, with a fixed reply, so tests can read exactly
which messages ragstream sent and count the requests. ``hang=True`` accepts requests and never
answers (a hung endpoint): a real model cannot be made to hang on demand. ``word_seconds`` paces a
streamed reply (a pause before each word), so a client can leave mid-answer; ``disconnects`` counts the
streams whose reader hung up before the last word.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.loopback import LoopbackServer

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
                        self._stream(text)
                    else:
                        self._json({"id": "x", "object": "chat.completion", "created": int(time.time()), "model": MODEL,
                                    "choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant", "content": text}}],
                                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
                except (BrokenPipeError, ConnectionResetError):
                    outer.disconnects += 1

            def _json(self, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, text: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                words = text.split(" ")
                for index, word in enumerate(words):
                    if outer.word_seconds:
                        time.sleep(outer.word_seconds)
                    delta = word if index == len(words) - 1 else word + " "
                    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": MODEL,
                             "choices": [{"index": 0, "delta": {"content": delta}, "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                end = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": MODEL,
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)
