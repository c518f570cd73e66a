"""Read a model's context window from an endpoint's "prompt too long" error."""

from __future__ import annotations

import re

_PATTERNS = (
    re.compile(r"context window of (\d+)", re.IGNORECASE),                # llama-cpp-python
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),        # OpenAI, vLLM
    re.compile(r"context (?:size|length) (?:of |is |\()?(\d+)", re.IGNORECASE),   # llama.cpp server
    re.compile(r"n_ctx(?:_slot)?\s*[=:]\s*(\d+)", re.IGNORECASE),
)


def window_from_error(message: str) -> int | None:
    """The context window an error message names, or ``None``."""
    for pattern in _PATTERNS:
        match = pattern.search(message)
        if match:
            return int(match.group(1))
    return None
