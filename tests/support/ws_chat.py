"""A real WebSocket client of ``/ws/chat`` for the server tests (not a test module)."""

from __future__ import annotations

import json
from typing import Any

from support.server_process import RunningServer

WS_SECONDS = 180.0
"""How long the client waits to connect and for each message (a first answer loads the answer path)."""


def ws_chat(server: RunningServer, key: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``{"event", "data"}`` message of one /ws/chat answer to ``body`` sent with ``key``, until the server
    closes."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    url = server.url.replace("http://", "ws://") + "/ws/chat"
    events: list[dict[str, Any]] = []
    with connect(url, additional_headers={"Authorization": f"Bearer {key}"}, open_timeout=WS_SECONDS) as ws:
        ws.send(json.dumps(body))
        try:
            while True:
                events.append(json.loads(ws.recv(timeout=WS_SECONDS)))
        except ConnectionClosed:
            return events
