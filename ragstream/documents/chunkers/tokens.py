"""The default token counter: a tokenizer-free, deliberately high estimate."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

TokenCounter = Callable[[str], int]

# Letter runs, up to three digits, a line break with its indentation, or any other single
# non-space character (punctuation, non-ASCII letters): each at least one token.
_PIECE = re.compile(r"[A-Za-z]+|\d{1,3}|\n\s*|\S")
# BPE vocabularies average about four characters per token of English; counting every
# four letters as a token over-counts common words, which is the safe direction.
_LETTERS_PER_TOKEN = 4


def approximate_token_count(text: str) -> int:
    """Estimate how many tokens ``text`` has, erring high.

    Words cost one token per four letters (rounded up), digits one per three, and every
    punctuation mark, non-ASCII character and line break one each. Real BPE tokenizers
    (e.g. cl100k) give fewer tokens for ordinary prose, so a limit checked against this
    estimate holds for them too.
    """
    total = 0
    for piece in _PIECE.findall(text):
        if piece[0].isascii() and piece[0].isalpha():
            total += math.ceil(len(piece) / _LETTERS_PER_TOKEN)
        else:
            total += 1
    return total
