"""A3_NLI_Gate: keep or drop reranked candidates (docs/pipeline.md).

Always, deterministically: cap the working set (``agents.a3.max_candidates``), drop empty chunks
and near-duplicates of better-ranked ones (embedding cosine >= ``duplicate_cosine``). Then the
LLM Chooser decides keep/drop per candidate (relevance, duplicates, contradictions). Without an
LLM, or when its answer is unusable, the fallback drops off-topic chunks (cosine to the prompt
below ``offtopic_cosine``; the cosine is the best over the query pieces, whose vectors Retrieval
already computed) and records that the contradiction check was skipped. Without the embedder the
vector checks are skipped and the report says so. Chunks are never changed; only ids survive or not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ragstream.agents.prompts import A3_PROMPT, A3Output
from ragstream.config import A3GateSettings
from ragstream.errors import EmbeddingFailureError, NoRelevantContextError
from ragstream.models import Chunk
from ragstream.pipeline.agent_call import StageAgent, stage_agent
from ragstream.pipeline.context import EmbedderSource, StageContext
from ragstream.pipeline.query_pieces import search_body
from ragstream.pipeline.render import provenance, query_text
from ragstream.pipeline.stages import A3_NLI_GATE as SPEC
from ragstream.pipeline.stages import RERANKER
from ragstream.pipeline.super_prompt import SuperPrompt

KEEP = "keep"
DROP_EMPTY = "drop_empty"
DROP_DUPLICATE = "drop_duplicate"
DROP_IRRELEVANT = "drop_irrelevant"
DROP_CONFLICT = "drop_conflict"
TAG_DECISIONS = {"duplicate": DROP_DUPLICATE, "conflicting": DROP_CONFLICT}
"""LLM drop tags with their own decision; any other tag drops as irrelevant."""
SKIPPED_WITHOUT_LLM = {"contradiction": "needs the LLM (or a local NLI cross-encoder, none is packaged)"}


@dataclass(frozen=True)
class Inputs:
    """What A3 uses: its settings (``agents.a3``), its agent and the embedder."""

    settings: A3GateSettings
    agent: StageAgent
    embedder: EmbedderSource


def inputs(ctx: StageContext) -> Inputs:
    """A3's inputs, taken from the pipeline's context."""
    return Inputs(ctx.config.agents.a3, stage_agent(ctx, SPEC), ctx.embedder)


def run(sp: SuperPrompt, deps: Inputs) -> SuperPrompt:
    """Write ``views_by_stage["a3"]``, the initial ``final_selection_ids`` and ``chunk_decisions``."""
    settings = deps.settings
    working = sp.chunks(sp.views_by_stage[RERANKER.entry][: settings.max_candidates])
    decisions: dict[str, str] = {}
    candidates = [c for c in working if not _is_empty(c, settings.min_chunk_chars, decisions)]
    vectors, no_vectors = _vectors(deps.embedder, candidates, sp.query_pieces or [query_text(search_body(sp))])
    if vectors is not None:
        candidates, passage_vectors = _drop_duplicates(candidates, vectors[0], settings.duplicate_cosine, decisions)
    if not candidates:
        raise NoRelevantContextError(f"A3 dropped all {len(working)} candidates: {_counts(decisions)}")

    query = query_text(search_body(sp))
    payload = {"prompt_md": query[: settings.field_chars], "candidates": _numbered(candidates, settings.snippet_chars)}
    output, record = deps.agent.call(A3_PROMPT, payload)
    kept: list[Chunk] = []
    if isinstance(output, A3Output):
        kept, record.details["clamped"] = _apply_llm(output, candidates, decisions)
        record.details["checks_run"] = ["empty", "duplicate", "llm_relevance", "llm_duplicate", "llm_contradiction"]
        if not kept:
            record.fall_back("the LLM dropped every candidate")
    if not kept and vectors is not None:
        best = (passage_vectors @ vectors[1].T).max(axis=1)
        kept = [c for c, cosine in zip(candidates, best.tolist(), strict=True)
                if _on_topic(c, cosine, settings.offtopic_cosine, decisions)]
        record.details["checks_run"] = ["empty", "duplicate", "off_topic"]
        record.details["checks_skipped"] = SKIPPED_WITHOUT_LLM
    elif not kept:
        kept = list(candidates)
        decisions.update((c.chunk_id, KEEP) for c in kept)
        record.details["checks_run"] = ["empty"]
        record.details["checks_skipped"] = {"duplicate": no_vectors, "off_topic": no_vectors, **SKIPPED_WITHOUT_LLM}
    if not kept:
        raise NoRelevantContextError(f"A3 dropped all {len(working)} candidates: {_counts(decisions)}")

    sp.views_by_stage[SPEC.entry] = [c.chunk_id for c in kept]
    sp.final_selection_ids = [c.chunk_id for c in kept]
    sp.chunk_decisions = {c.chunk_id: decisions[c.chunk_id] for c in working}
    sp.extras["a3"] = {**record.log(), "working_set": len(working), "counts": _counts(decisions)}
    record.report(sp, SPEC.entry)
    if no_vectors and not record.llm_attempted and record.mode != "llm":
        sp.report(SPEC.entry, record.mode, fallback=True, reason=no_vectors)
    sp.advance(SPEC.entry)
    return sp


def _vectors(source: EmbedderSource, chunks: list[Chunk],
             pieces: list[str]) -> tuple[tuple[np.ndarray, np.ndarray] | None, str | None]:
    """``((passage vectors, piece vectors), None)``, or ``(None, why)`` without the embedder."""
    try:
        embedder = source()
        return (embedder.embed_documents([c.text for c in chunks]), embedder.embed_queries(pieces)), None
    except EmbeddingFailureError as error:
        return None, f"embedder unavailable, duplicate and off-topic checks skipped: {error.message}"


def _is_empty(chunk: Chunk, min_chars: int, decisions: dict[str, str]) -> bool:
    if len(chunk.text.strip()) < min_chars:
        decisions[chunk.chunk_id] = DROP_EMPTY
        return True
    return False


def _drop_duplicates(
    chunks: list[Chunk], vectors: np.ndarray, threshold: float, decisions: dict[str, str]
) -> tuple[list[Chunk], np.ndarray]:
    """Keep a chunk unless it is a near-duplicate of a better-ranked kept one."""
    keep: list[int] = []
    for index in range(len(chunks)):
        if keep and float(np.max(vectors[keep] @ vectors[index])) >= threshold:
            decisions[chunks[index].chunk_id] = DROP_DUPLICATE
        else:
            keep.append(index)
    return [chunks[i] for i in keep], vectors[keep]


def _numbered(chunks: list[Chunk], snippet_chars: int) -> str:
    return "\n\n".join(f"[{n}] ({provenance(c)}) {' '.join(c.text.split())[:snippet_chars]}"
                       for n, c in enumerate(chunks, start=1))


def _apply_llm(output: A3Output, chunks: list[Chunk], decisions: dict[str, str]) -> tuple[list[Chunk], int]:
    """Kept chunks per the LLM; unknown or missing answers clamp to the default (keep)."""
    answers = {d.index: d for d in output.decisions if 1 <= d.index <= len(chunks)}
    kept: list[Chunk] = []
    clamped = 0
    for number, chunk in enumerate(chunks, start=1):
        answer = answers.get(number)
        decision, ok = A3_PROMPT.clamp("decision", answer.decision if answer else None)
        tag, tag_ok = A3_PROMPT.clamp("tag", answer.tag if answer else None)
        clamped += (not ok) + (not tag_ok)
        if decision == KEEP:
            decisions[chunk.chunk_id] = KEEP
            kept.append(chunk)
        else:
            decisions[chunk.chunk_id] = TAG_DECISIONS.get(tag, DROP_IRRELEVANT)
    return kept, clamped


def _on_topic(chunk: Chunk, cosine: float, threshold: float, decisions: dict[str, str]) -> bool:
    on_topic = cosine >= threshold
    decisions[chunk.chunk_id] = KEEP if on_topic else DROP_IRRELEVANT
    return on_topic


def _counts(decisions: dict[str, str]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for decision in decisions.values():
        counts[decision] = counts.get(decision, 0) + 1
    return dict(sorted(counts.items()))
