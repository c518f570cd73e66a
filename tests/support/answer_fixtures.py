"""Shared helpers of the answer-path tests (not a test module)."""

from __future__ import annotations

from typing import Any

from support.index_fixtures import SAMPLES

SEED_003_METADATA = {"source": "HTTPX documentation", "doc_type": "core-rules", "last_update_date": "2024-05-01"}
REQUIRED_KEYS = ["source", "doc_type", "last_update_date"]
NO_AGENT_LLM: dict[str, Any] = {}  # agent stages are deterministic unless listed in pipeline.llm_stages
MARKDOWN_SAMPLES = sorted(SAMPLES.glob("httpx-*.md"))


def llm_overrides(base_url: str, **llm: Any) -> dict[str, Any]:
    """Config overrides: the LLM at ``base_url`` for generation only (pipeline agents deterministic)."""
    return {"llm": {"base_url": base_url, "retry_base_seconds": 0.01, "retry_max_seconds": 0.05, **llm},
            "agents": NO_AGENT_LLM}
