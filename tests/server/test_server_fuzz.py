"""schemathesis fuzzes every operation of the OpenAPI spec against a real server: no 5xx."""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from support.server_process import RunningServer, running_server

pytestmark = pytest.mark.slow  # fuzzing every operation against a real-model server

MAX_EXAMPLES = int(os.environ.get("RAGSTREAM_FUZZ_EXAMPLES", "15"))
"""Examples per operation; raise it locally for a deeper hunt (CI keeps the default)."""
SEED_DOC = ("seed.md", b"# Seed\n\nA small document so that searches and pipelines have something to find.")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("fuzz")) as running:
        httpx.post(f"{running.url}/api/documents", files={"files": SEED_DOC}, timeout=120).raise_for_status()
        yield running


def test_no_server_errors(server: RunningServer):
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def check(case: schemathesis.Case) -> None:
            response = case.call(base_url=server.url, timeout=120)
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: "
                                f"{response.text[:300]} (body {case.body!r:.200})")

        check()
    assert not failures, "\n".join(failures)
