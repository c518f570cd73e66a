"""The answer without an LLM: the context sentences closest to the question, each cited ``[n]``."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ragstream.providers.embedders.base import Embedder
from ragstream.answer.models import DocumentChunk

_CODE_BLOCK = re.compile(r"(```|~~~).*?(\1|$)", re.DOTALL)
_HEADING_LINE = re.compile(r"^\s*#.*$", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_MARKER_LIKE = re.compile(r"\[[^\]\n]*\]")


def sentences(text: str, min_chars: int) -> list[str]:
    """The prose sentences of a chunk: code blocks and headings removed, bracketed text dropped."""
    prose = " ".join(_HEADING_LINE.sub(" ", _CODE_BLOCK.sub(" ", text)).split())
    cleaned = (" ".join(_MARKER_LIKE.sub("", s).split()) for s in _SENTENCE_END.split(prose))
    return [s for s in cleaned if len(s) >= min_chars]


def extractive_answer(question: str, chunks: Sequence[DocumentChunk], embedder: Embedder, *,
                      label: str, max_sentences: int, min_chars: int) -> str:
    """``label`` then the ``max_sentences`` sentences most similar to the question, best first.

    Each sentence carries the marker of its chunk's place in ``chunks`` (1-based). Bracketed text is
    removed from quotes so no quote can carry a marker that is not its own.
    """
    candidates = [(number, sentence) for number, chunk in enumerate(chunks, start=1)
                  for sentence in sentences(chunk.text, min_chars)]
    if not candidates:
        candidates = [(number, " ".join(_MARKER_LIKE.sub("", chunk.text).split())) for number, chunk in enumerate(chunks, start=1)]
    question_vector = embedder.embed_queries([question])[0]
    scores = embedder.embed_documents([sentence for _, sentence in candidates]) @ question_vector
    best = np.argsort(-scores, kind="stable")[:max_sentences]
    lines = [f"- {candidates[i][1]} [{candidates[i][0]}]" for i in best]
    return "\n".join([label, "", *lines])
