"""API key enforcement depends on where the server is bound (issue 5, security).

The servers embed with the hash embedder: no route here depends on the model.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.server_process import STARTUP_SECONDS, RunningServer, free_port, running_server, serve_command, server_env

KEY = "test-key-0123456789"
ALL_INTERFACES = "0.0.0.0"


@pytest.fixture(scope="module")
def exposed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """Bound to every interface (not loopback), so the key is required; reached here over loopback."""
    with running_server(tmp_path_factory.mktemp("exposed"), host=ALL_INTERFACES, hash_embedder=True,
                        SERVER__API_KEY=KEY) as server:
        yield server


def test_non_loopback_without_key_refuses_to_start(tmp_path: Path):
    result = subprocess.run(serve_command(ALL_INTERFACES, free_port(), hash_embedder=True), env=server_env(tmp_path / "data"),
                            capture_output=True, text=True, timeout=STARTUP_SECONDS)
    assert result.returncode == 2
    assert "needs an API key" in result.stderr and "RAGSTREAM_SERVER__API_KEY" in result.stderr


def test_key_required_on_every_route_but_healthz(exposed: RunningServer):
    with httpx.Client(base_url=exposed.url) as client:
        assert client.get("/healthz").status_code == 200
        for method, path in (("GET", "/api/documents"), ("POST", "/api/search"), ("GET", "/metrics"),
                             ("GET", "/openapi.json"), ("POST", "/api/documents"), ("POST", "/v1/chat/completions")):
            response = client.request(method, path)
            assert response.status_code == 401, (method, path)
            assert response.json()["error"]["code"] == "unauthorized"
            assert response.json()["request_id"] == response.headers["x-request-id"]
            assert response.headers["www-authenticate"] == "Bearer"
        assert client.get("/api/documents", headers={"X-API-Key": "wrong"}).status_code == 401
        assert client.get("/api/documents", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get("/api/documents", headers={"X-API-Key": KEY}).status_code == 200
        assert client.get("/api/documents", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
        assert client.get("/metrics", headers={"X-API-Key": KEY}).status_code == 200


def test_ui_shell_loads_without_key(exposed: RunningServer):
    """The static UI holds no data; it asks for the key and sends it on every API call."""
    with httpx.Client(base_url=exposed.url) as client:
        assert client.get("/ui/documents.html").status_code == 200
        assert client.get("/ui/api.js").status_code == 200
