"""Token counts for the answering model: its own tokenizer when one is configured, else an estimate.

The estimate is ``ceil(characters / llm.chars_per_token)``. The default 3.5 characters per token
is conservative for English prose and code under the BPE tokenizers of current chat models
(GPT-4-class and Qwen/Llama tokenizers average about 4), so budgets computed with it do not overflow.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from pathlib import Path

from ragstream.config import LLMConfig
from ragstream.errors import ConfigError

TokenCounter = Callable[[str], int]


def estimate_counter(chars_per_token: float) -> TokenCounter:
    """The documented estimate: characters divided by ``chars_per_token``, rounded up."""

    def count(text: str) -> int:
        return math.ceil(len(text) / chars_per_token)

    return count


def make_token_counter(config: LLMConfig) -> TokenCounter:
    """The answering model's tokenizer (``llm.tokenizer``: a tokenizer.json or a model folder), else the estimate."""
    if not config.tokenizer:
        return estimate_counter(config.chars_per_token)
    path = Path(config.tokenizer)
    file = path / "tokenizer.json" if path.is_dir() else path
    if not file.is_file():
        raise ConfigError(f"llm.tokenizer: no tokenizer.json at {path}")
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(file))
    lock = threading.Lock()  # one tokenizer serves every request thread

    def count(text: str) -> int:
        with lock:
            return len(tokenizer.encode(text, add_special_tokens=False).ids)

    return count
