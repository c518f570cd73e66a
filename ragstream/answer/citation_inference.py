"""Citations an LLM answer left out: each sentence that cites no attachment is matched to the attachment that
holds the sentence closest to it (``citations.infer_min_cosine``), as docs/answers.md describes.

Sentences are compared with the attachments' sentences (the extractive answer's quotes), not with whole
attachments: a sentence copied or paraphrased from one finding of a long attachment matches that finding,
however much else the attachment says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise

import numpy as np

from ragstream.answer.citations import CitationTracker, uncited_sentences
from ragstream.answer.extractive import quotes
from ragstream.answer.models import Citation, DocumentChunk
from ragstream.config import AnswerConfig
from ragstream.errors import EmbeddingFailureError
from ragstream.providers.embedders.base import Embedder, scoring_vectors


def infer_citations(text: str, chunks: Sequence[DocumentChunk], tracker: CitationTracker,
                    embedder_source: Callable[[], Embedder], config: AnswerConfig) -> list[Citation]:
    """For each sentence of ``text`` that cites none of ``chunks`` (the attachments): the attachment holding the
    sentence closest to it (cosine at least ``citations.infer_min_cosine``), in answer order, recorded on
    ``tracker``. None when inference is off, there are no attachments, or the embedder fails."""
    threshold = config.citations.infer_min_cosine
    if threshold is None or not chunks:
        return []
    sentences = uncited_sentences(text, tracker.resolver, config.citations, config.extractive_min_sentence_chars)
    if not sentences:
        return []
    spans = [[quote.sentence for quote in quotes(chunk.text, config.extractive_min_sentence_chars,
                                                 config.extractive_max_example_chars)] or [chunk.text]
             for chunk in chunks]
    try:
        embedder = embedder_source()
        similarity = embedder.embed_queries(sentences) @ scoring_vectors(embedder, [s for span in spans for s in span]).T
    except EmbeddingFailureError:
        return []
    bounds = np.cumsum([0, *(len(span) for span in spans)]).tolist()
    per_attachment = np.stack([similarity[:, start:end].max(axis=1) for start, end in pairwise(bounds)], axis=1)
    inferred: list[Citation] = []
    for row in per_attachment:
        best = int(np.argmax(row))
        citation = tracker.infer(best) if float(row[best]) >= threshold else None
        if citation is not None:
            inferred.append(citation)
    return inferred
