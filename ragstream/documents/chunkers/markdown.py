"""Markdown-aware chunking: sections by heading, then windows of whole blocks.

Every heading starts a section whose header path is the titles from the top heading down.
A section that fits ``chunk_size`` characters is one piece; a larger one is packed from its
blocks (paragraphs, lists, whole fenced code blocks) with ``chunk_overlap`` characters of
trailing whole blocks repeated, and every piece repeats the section's heading line(s) so it
carries its context. Code fences are never cut, except a single fence larger than
``chunk_size`` on its own: that one is cut between lines and each part is re-fenced.
A heading with no body of its own is carried into the next section's piece.
"""

from __future__ import annotations

from ragstream.config import ChunkingConfig
from ragstream.documents.chunkers.blocks import fit_block, pack
from ragstream.documents.chunkers.tokens import TokenCounter
from ragstream.documents.markdown_structure import (
    HeadingStack,
    Section,
    join_lines,
    scan_lines,
    split_blocks,
    split_sections,
)
from ragstream.models import TextPiece

_DEEPEST_HEADING = 6
_BLOCK_SEPARATOR = "\n\n"


def chunk_markdown(text: str, config: ChunkingConfig, count_tokens: TokenCounter,
                   stack: HeadingStack = ()) -> list[TextPiece]:
    """Split Markdown at every ATX heading and window oversized sections by blocks.

    Sizes are in characters; ``count_tokens`` is unused. ``stack``: the headings in force where the text starts
    (the text before its first heading stands under them).
    """
    del count_tokens
    pieces: list[TextPiece] = []
    pending_headings: list[str] = []
    sections = split_sections(scan_lines(text), _DEEPEST_HEADING, stack)
    for position, section in enumerate(sections):
        body = join_lines(section.body)
        heading_lines = pending_headings + ([section.heading.text.strip()] if section.heading else [])
        if not body and position < len(sections) - 1:
            pending_headings = heading_lines
            continue
        pending_headings = []
        pieces.extend(_section_pieces(section, heading_lines, body, config))
    return pieces


def _section_pieces(section: Section, heading_lines: list[str], body: str, config: ChunkingConfig) -> list[TextPiece]:
    """The pieces of one section, each starting with ``heading_lines``."""
    prefix = "\n".join(heading_lines)
    whole = _join(prefix, body)
    if len(whole) <= config.chunk_size:
        return [TextPiece(text=whole, header_path=section.header_path)]
    budget = config.chunk_size - len(prefix) - len(_BLOCK_SEPARATOR)
    if budget <= 0:
        budget = config.chunk_size
    units = [unit for block in split_blocks(section.body) for unit in fit_block(block, budget, len)]
    return [
        TextPiece(text=_join(prefix, part), header_path=section.header_path)
        for part in pack(units, budget, len, separator=_BLOCK_SEPARATOR, overlap=config.chunk_overlap)
    ]


def _join(prefix: str, body: str) -> str:
    return _BLOCK_SEPARATOR.join(part for part in (prefix, body) if part)
