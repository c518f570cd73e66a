"""The "split only when needed" chunking (``chunking.strategy = "split_when_needed"``).

A text within ``max_chunk_tokens`` is one piece. A larger one is cut at
``split_header_level`` headings (H2); a section still too large is cut at
``fallback_header_level`` headings (H3), each sub-piece repeating its section's heading
line; a part still too large is packed from whole paragraphs (a paragraph is cut only when
it alone exceeds the limit). There is no overlap.
"""

from __future__ import annotations

from ragstream.config import ChunkingConfig
from ragstream.documents.chunkers.blocks import fit_block, pack
from ragstream.documents.chunkers.tokens import TokenCounter
from ragstream.documents.markdown_structure import (
    HeadingStack,
    Line,
    Section,
    join_lines,
    scan_lines,
    split_blocks,
    split_sections,
)
from ragstream.models import TextPiece

_BLOCK_SEPARATOR = "\n\n"


def chunk_split_when_needed(text: str, config: ChunkingConfig, count_tokens: TokenCounter,
                            stack: HeadingStack = ()) -> list[TextPiece]:
    """Keep ``text`` whole when it fits ``max_chunk_tokens``, else split by H2, H3, paragraphs.

    ``stack``: the headings in force where the text starts (a whole text keeps their path).
    """
    text = text.strip()
    if not text:
        return []
    limit = config.max_chunk_tokens
    if count_tokens(text) <= limit:
        return [TextPiece(text=text, header_path=tuple(title for _, title in stack))]
    pieces: list[TextPiece] = []
    for section in split_sections(scan_lines(text), config.split_header_level, stack):
        if count_tokens(section.text) <= limit:
            pieces.append(TextPiece(text=section.text, header_path=section.header_path))
        elif config.fallback_header_level > config.split_header_level:
            pieces.extend(_split_subsections(section, config, count_tokens))
        else:
            headings = _heading_lines(section)
            pieces.extend(_pack_paragraphs(headings, section.body, section.header_path, limit, count_tokens))
    return pieces


def _split_subsections(section: Section, config: ChunkingConfig, count_tokens: TokenCounter) -> list[TextPiece]:
    """Cut an oversized section at fallback-level headings, repeating the section heading."""
    limit = config.max_chunk_tokens
    outer = _heading_lines(section)
    pieces: list[TextPiece] = []
    for sub in split_sections(section.body, config.fallback_header_level, section.stack):
        headings = outer + _heading_lines(sub)
        text = _join(headings, join_lines(sub.body))
        if count_tokens(text) <= limit:
            pieces.append(TextPiece(text=text, header_path=sub.header_path))
        else:
            pieces.extend(_pack_paragraphs(headings, sub.body, sub.header_path, limit, count_tokens))
    return pieces


def _pack_paragraphs(
    headings: list[str], body: list[Line], header_path: tuple[str, ...], limit: int, count_tokens: TokenCounter
) -> list[TextPiece]:
    """Pack whole paragraphs under ``limit`` tokens, each piece starting with ``headings``."""
    prefix_cost = (count_tokens("\n".join(headings)) + count_tokens(_BLOCK_SEPARATOR)) if headings else 0
    budget = max(limit - prefix_cost, 1)
    units = [unit for block in split_blocks(body) for unit in fit_block(block, budget, count_tokens)]
    return [
        TextPiece(text=_join(headings, part), header_path=header_path)
        for part in pack(units, budget, count_tokens, separator=_BLOCK_SEPARATOR)
    ]


def _heading_lines(section: Section) -> list[str]:
    return [section.heading.text.strip()] if section.heading else []


def _join(headings: list[str], body: str) -> str:
    return _BLOCK_SEPARATOR.join(part for part in ("\n".join(headings), body) if part)
