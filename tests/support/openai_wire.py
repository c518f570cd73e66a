"""What a fake OpenAI-compatible server writes on the wire: a chat completion as JSON, or streamed as SSE chunks
(not a test module; shared by tests/support/recording_llm.py and busy_llm.py)."""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any


def completion(model: str, text: str) -> dict[str, Any]:
    """A non-streamed chat completion answering ``text``."""
    return {"id": "x", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any],
              headers: dict[str, str] | None = None) -> None:
    """Answer ``payload`` as JSON with ``status`` and extra ``headers``."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


def stream_words(handler: BaseHTTPRequestHandler, model: str, text: str, word_seconds: float = 0.0) -> None:
    """Stream ``text`` word by word as chat.completion.chunk events (a pause of ``word_seconds`` before each), then
    the stop chunk and ``[DONE]``; the connection closes after."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Connection", "close")
    handler.end_headers()
    words = text.split(" ")
    for index, word in enumerate(words):
        if word_seconds:
            time.sleep(word_seconds)
        delta = word if index == len(words) - 1 else word + " "
        handler.wfile.write(_event(model, {"content": delta}, None))
        handler.wfile.flush()
    handler.wfile.write(_event(model, {}, "stop") + b"data: [DONE]\n\n")
    handler.wfile.flush()
    handler.close_connection = True


def _event(model: str, delta: dict[str, str], finish_reason: str | None) -> bytes:
    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": model,
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()
