"""Conversation turn pairs as transient, immutable ``Chunk`` objects (ids derived from content)."""

from __future__ import annotations

import hashlib

from ragstream.models import Chunk, ChunkMetadata
from ragstream.pipeline.super_prompt import ConversationPair

CONVERSATION_SOURCE = "conversation"
CONVERSATION_TITLE = "Recent conversation"
CONVERSATION_MIME = "text/plain"
ID_PREFIX = "conv-"
ID_HEX_CHARS = 16


def pair_text(pair: ConversationPair) -> str:
    """The text of one pair as it is embedded and attached."""
    return f"User: {pair.user}" + (f"\nAssistant: {pair.assistant}" if pair.assistant else "")


def conversation_chunks(pairs: list[ConversationPair]) -> list[Chunk]:
    """One chunk per pair, oldest first; identical pairs share one id (the first is kept)."""
    chunks: dict[str, Chunk] = {}
    for index, pair in enumerate(pairs):
        text = pair_text(pair)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        chunk_id = ID_PREFIX + digest[:ID_HEX_CHARS]
        if chunk_id in chunks:
            continue
        chunks[chunk_id] = Chunk(chunk_id=chunk_id, text=text, metadata=ChunkMetadata(
            document_id=CONVERSATION_SOURCE, source=CONVERSATION_SOURCE, title=CONVERSATION_TITLE,
            section=f"turn {index + 1}", chunk_index=index, word_count=len(text.split()),
            has_code="```" in text, has_equations=False, checksum=digest, content_hash=digest,
            mime=CONVERSATION_MIME, created_at="",
        ))
    return list(chunks.values())
