"""A4_Condenser: the token-budgeted selection and the authoritative S_CTX block (docs/pipeline.md).

Selection: walk ``final_selection_ids`` in A3 order, skip conversation pairs (they have their own
block), and keep each chunk whose attachment plus its S_CTX facts still fit the one context budget
(:func:`context_budget`, counted in the answering model's tokens), up to ``N3`` chunks. What fits
here is exactly what the answering model reads. Condensation: the LLM Writer summarises facts,
constraints and open issues citing ``[n]``; it must not take more room than the deterministic facts
it replaces, nor name anything the attachments and the prompt do not (:mod:`grounding`); the
fallback quotes, for each selected chunk, the prose sentences closest to the question (best cosine
to its query vectors), every fact cited ``[n]`` and the facts ordered best first, so the answering
model meets the strongest evidence of every attachment first, not only attachment [1]'s (without
the embedder, or with ``agents.a4.focus = "leading"``: each chunk's leading sentences). S_CTX
quotes documents, so it sits in a fence its text cannot close, like every attachment.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ragstream.agents.prompts import A4_PROMPT, A4Output
from ragstream.config import A4CondenserSettings, AnswerConfig, LLMConfig, PipelineLimits
from ragstream.documents.prose import CODE_BLOCK, prose_sentences, sentence_key
from ragstream.errors import EmbeddingFailureError, NoRelevantContextError
from ragstream.models import Chunk
from ragstream.pipeline.agent_call import StageAgent, stage_agent
from ragstream.pipeline.context import EmbedderSource, StageContext, TokenCounter
from ragstream.pipeline.conversation import CONVERSATION_SOURCE
from ragstream.pipeline.coverage import cover_files
from ragstream.pipeline.grounding import ungrounded, vocabulary
from ragstream.pipeline.render import attachment_md, conversation_md, fenced, preview, prompt_md, provenance, query_text
from ragstream.pipeline.stages import A4_CONDENSER as SPEC
from ragstream.pipeline.stages import RERANKER
from ragstream.pipeline.super_prompt import SuperPrompt
from ragstream.providers.embedders.base import scoring_vectors

S_CTX_HEADING = "## S_CTX"
FACTS_HEADING = "### Facts"
CODE_ONLY = "(code or data only; see attachment)"
ELLIPSIS = "…"
_LETTER = re.compile(r"[^\W\d_]")
BM25_ONLY = "bm25"

SentenceScorer = Callable[[list[str]], np.ndarray]
"""Scores sentences against the question (higher = closer)."""


@dataclass(frozen=True)
class Inputs:
    """What A4 uses: its settings (``agents.a4``), its agent, the embedder, the token counter, and the
    ``pipeline``, ``answer`` and ``llm`` sections (the one context budget)."""

    settings: A4CondenserSettings
    agent: StageAgent
    embedder: EmbedderSource
    count_tokens: TokenCounter
    limits: PipelineLimits
    answer: AnswerConfig
    llm: LLMConfig


def inputs(ctx: StageContext) -> Inputs:
    """A4's inputs, taken from the pipeline's context."""
    config = ctx.config
    return Inputs(config.agents.a4, stage_agent(ctx, SPEC), ctx.embedder, ctx.count_tokens, config.pipeline,
                  config.answer, config.llm)


def run(sp: SuperPrompt, deps: Inputs) -> SuperPrompt:
    """Write ``S_CTX_MD``, the budgeted ``final_selection_ids`` and ``views_by_stage["a4"]``."""
    settings, count_tokens = deps.settings, deps.count_tokens
    budget = context_budget(sp, deps)
    candidates = _covering([c for c in sp.chunks(sp.final_selection_ids) if c.metadata.source != CONVERSATION_SOURCE],
                           sp, deps.limits.coverage_margin)
    selected, facts, used, over_budget = _select(candidates, budget, deps, _sentence_scorer(sp, deps))
    if not selected:
        raise NoRelevantContextError(
            f"none of the {len(candidates)} selected document chunks fits the context budget of {budget} tokens")

    deterministic = "\n".join([FACTS_HEADING, *facts])
    payload = {"prompt_md": query_text(sp.body)[: settings.field_chars], "passages": _passages(selected, settings)}
    output, record = deps.agent.call(A4_PROMPT, payload)
    condensed = output.s_ctx_md.strip() if isinstance(output, A4Output) else ""
    invented = ungrounded(condensed, vocabulary([*sp.body.values(), sp.selected_text, *(c.text for c in selected)]))
    if condensed and invented:
        record.fall_back(f"the LLM condensation names what no attachment says: {', '.join(invented[:5])}")
        condensed = ""
    if condensed and count_tokens(condensed) > count_tokens(deterministic):
        record.fall_back("the LLM condensation is longer than the room the budget leaves for S_CTX")
        condensed = ""
    if isinstance(output, A4Output) and not condensed and record.mode == "llm":
        record.fall_back("the LLM returned an empty condensation")

    sp.S_CTX_MD = f"{S_CTX_HEADING}\n\n{fenced(f'{condensed or deterministic}{chr(10) * 2}{_sources(selected)}')}"
    sp.final_selection_ids = [chunk.chunk_id for chunk in selected]
    sp.views_by_stage[SPEC.entry] = [chunk.chunk_id for chunk in selected]
    sp.extras["a4"] = {**record.log(), "context_budget_tokens": budget, "tokens_used": used,
                       "skipped_over_budget": over_budget}
    record.report(sp, SPEC.entry)
    sp.advance(SPEC.entry)
    sp.prompt_ready = preview(sp)
    return sp


def _covering(candidates: list[Chunk], sp: SuperPrompt, margin: float) -> list[Chunk]:
    """The candidates with a chunk of a document not yet selected first among comparable ReRanker scores
    (``pipeline.coverage_margin``, :mod:`coverage`); as they are when a candidate has no ReRanker score."""
    scored = dict(zip(sp.views_by_stage.get(RERANKER.entry, []), sp.scores_by_stage.get(RERANKER.entry, []), strict=False))
    if margin <= 0 or any(c.chunk_id not in scored for c in candidates):
        return candidates
    return cover_files(candidates, [scored[c.chunk_id] for c in candidates], lambda c: c.metadata.document_id, margin)


def context_budget(sp: SuperPrompt, deps: Inputs) -> int:
    """Tokens the attachments and S_CTX may take: ``answer.context_tokens``, and with an LLM no more
    than its context window leaves after the answer (``llm.max_tokens``), the prompt, the recent
    conversation and ``answer.prompt_reserve_tokens`` for the system block."""
    budget = deps.answer.context_tokens
    if deps.llm.enabled:
        max_pairs = deps.limits.N4_RECENT_CONV_MAX_PAIRS
        pairs = sp.recentConversation[-max_pairs:] if max_pairs > 0 else []
        rest = deps.count_tokens(prompt_md(sp.body)) + (deps.count_tokens(conversation_md(pairs)) if pairs else 0)
        room = deps.agent.context_window - deps.llm.max_tokens - deps.answer.prompt_reserve_tokens - rest
        budget = min(budget, room)
    return max(0, budget)


def _sentence_scorer(sp: SuperPrompt, deps: Inputs) -> SentenceScorer | None:
    """Cosine of sentences to the question's query vectors (the ones Retrieval computed, from the
    embedder's memory); ``None`` for leading-sentence facts, or when retrieval ran on BM25 only."""
    if deps.settings.focus != "question" or not sp.query_pieces or sp.retrieval_mode == BM25_ONLY:
        return None
    try:
        embedder = deps.embedder()
        queries = np.atleast_2d(embedder.embed_queries(sp.query_pieces))
    except EmbeddingFailureError:
        return None

    def score(sentences: list[str]) -> np.ndarray:
        return (scoring_vectors(embedder, sentences) @ queries.T).max(axis=1)
    return score


def _select(chunks: list[Chunk], budget: int, deps: Inputs,
            scorer: SentenceScorer | None) -> tuple[list[Chunk], list[str], int, list[str]]:
    """Greedy in order: every chunk whose attachment and fact lines still fit, at most ``N3``.
    With a scorer the facts come out best first across chunks (ties keep attachment order)."""
    selected: list[Chunk] = []
    facts: list[tuple[float, str]] = []
    stated: set[str] = set()
    skipped: list[str] = []
    used = 0
    per_document: Counter[str] = Counter()
    settings, count_tokens = deps.settings, deps.count_tokens
    per_document_max = deps.limits.N3_PER_DOCUMENT_MAX
    for chunk in chunks:
        if len(selected) == deps.limits.N3_FINAL_SELECTION_MAX:
            break
        if per_document_max and per_document[chunk.metadata.document_id] >= per_document_max:
            continue  # that document has its attachments: the next one's chunk takes the place
        number = len(selected) + 1
        lines = _fact_lines(chunk, number, settings, scorer, stated)
        # any score costs what 0.0 costs (the header writes it to a fixed number of decimals)
        cost = count_tokens(attachment_md(number, chunk, 0.0)) + count_tokens("\n".join(line for _, _, line in lines))
        if used + cost > budget:
            skipped.append(chunk.chunk_id)
            continue
        selected.append(chunk)
        per_document[chunk.metadata.document_id] += 1
        facts.extend((score, line) for score, _, line in lines)
        stated.update(key for _, key, _ in lines)
        used += cost
    if scorer is not None:
        facts.sort(key=lambda fact: -fact[0])  # stable: equal scores keep attachment order
    return selected, [line for _, line in facts], used, skipped


def _passages(chunks: list[Chunk], settings: A4CondenserSettings) -> str:
    return "\n\n".join(f"[{n}] ({provenance(c)})\n{c.text[: settings.snippet_chars]}"
                       for n, c in enumerate(chunks, start=1))


def _fact_lines(chunk: Chunk, number: int, settings: A4CondenserSettings, scorer: SentenceScorer | None,
                stated: set[str]) -> list[tuple[float, str, str]]:
    """Up to ``sentences_per_chunk`` prose sentences of a chunk as cited bullets (score, sentence key, line):
    the ones closest to the question (kept in text order) with a scorer, else the leading ones. A sentence
    an earlier attachment already states (overlapping chunks repeat text) is not stated again."""
    prose = _prose_sentences(chunk.text)
    if not prose:
        return [(float("-inf"), "", f"- {CODE_ONLY} [{number}]")]
    keyed = [(sentence, key) for sentence in prose if (key := sentence_key(sentence)) not in stated]
    if not keyed:
        return []
    sentences = [sentence for sentence, _ in keyed]
    if scorer is None:
        scores = [0.0] * len(sentences)
        chosen = list(range(min(len(sentences), settings.sentences_per_chunk)))
    else:
        scores = [float(value) for value in scorer(sentences)]
        best = np.argsort(-np.asarray(scores), kind="stable")[: settings.sentences_per_chunk]
        chosen = sorted(int(i) for i in best)
    return [(scores[i], keyed[i][1], f"- {_cut(sentences[i], settings.sentence_max_chars)} [{number}]") for i in chosen]


def _prose_sentences(text: str) -> list[str]:
    return [s for s in prose_sentences(CODE_BLOCK.sub(" ", text)) if _LETTER.search(s)]


def _cut(sentence: str, max_chars: int) -> str:
    return sentence if len(sentence) <= max_chars else sentence[:max_chars].rstrip() + ELLIPSIS


def _sources(chunks: list[Chunk]) -> str:
    return "Sources:\n" + "\n".join(f"[{n}] {provenance(c)}" for n, c in enumerate(chunks, start=1))
