"""Character windows with overlap (``chunking.strategy = "window"``): the simplest strategy, blind to structure."""

from __future__ import annotations

import re

from ragstream.config import ChunkingConfig
from ragstream.documents.chunkers.tokens import TokenCounter
from ragstream.documents.markdown_structure import HeadingStack
from ragstream.models import TextPiece

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
# Cut points, best first: after a paragraph break, after a sentence end, at a space.
_BOUNDARIES = (re.compile(r"\n\n"), re.compile(r"[.!?][\"')\]]*\s"), re.compile(r"\s"))


def normalize_whitespace(text: str) -> str:
    """Collapse every whitespace run to one space, except paragraph breaks (kept as a blank line)."""
    paragraphs = (" ".join(paragraph.split()) for paragraph in _PARAGRAPH_BREAK.split(text))
    return "\n\n".join(paragraph for paragraph in paragraphs if paragraph)


def chunk_window(text: str, config: ChunkingConfig, count_tokens: TokenCounter,
                 stack: HeadingStack = ()) -> list[TextPiece]:
    """Slide a ``chunk_size`` window with ``chunk_overlap`` over the normalised text.

    Each window ends at the best boundary in its second half (paragraph, else sentence,
    else word) and the next starts ``chunk_overlap`` characters before that end, moved
    forward to a word start. ``count_tokens`` and ``stack`` are unused: windows are measured in characters and
    blind to headings.
    """
    del count_tokens, stack
    text = normalize_whitespace(text)
    pieces: list[TextPiece] = []
    start = 0
    while start < len(text):
        end = _cut(text, start, config.chunk_size, config.chunk_overlap)
        pieces.append(TextPiece(text=text[start:end].strip()))
        if end >= len(text):
            break
        start = _next_start(text, start, end, config.chunk_overlap)
    return [piece for piece in pieces if piece.text]


def _cut(text: str, start: int, size: int, overlap: int) -> int:
    """Where the window beginning at ``start`` ends."""
    limit = start + size
    if limit >= len(text):
        return len(text)
    earliest = start + max(size // 2, overlap + 1)
    for boundary in _BOUNDARIES:
        ends = [match.end() for match in boundary.finditer(text, earliest, limit + 1)]
        if ends:
            return ends[-1]
    return limit


def _next_start(text: str, start: int, end: int, overlap: int) -> int:
    """Back up ``overlap`` characters from ``end``, then forward to the next word start."""
    candidate = max(end - overlap, start + 1)
    if candidate > 0 and not text[candidate - 1].isspace():
        space = text.find(" ", candidate, end)
        newline = text.find("\n", candidate, end)
        breaks = [position for position in (space, newline) if position != -1]
        if breaks:
            candidate = min(breaks) + 1
    return candidate
