"""A4_Condenser: token-budgeted selection and the authoritative S_CTX block (seed 000 section 5.6).

Selection (both paths): walk ``final_selection_ids`` in A3 order and keep each chunk whose text
still fits ``agents.a4.token_budget`` (embedder tokens), up to ``N3`` chunks. Condensation: the
LLM Writer summarises facts, constraints and open issues citing ``[n]``; the deterministic
fallback quotes the leading prose sentences of each selected chunk, cited the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ragstream.agents.prompts import A4_PROMPT, A4Output
from ragstream.config import A4CondenserSettings
from ragstream.documents.prose import CODE_BLOCK, prose_sentences
from ragstream.errors import NoRelevantContextError
from ragstream.models import Chunk
from ragstream.pipeline.agent_call import call_agent, fallback
from ragstream.pipeline.context import StageContext
from ragstream.pipeline.render import preview, provenance, query_text
from ragstream.pipeline.super_prompt import SuperPrompt

S_CTX_HEADING = "## S_CTX"
FACTS_HEADING = "### Facts"
CODE_ONLY = "(code or data only; see attachment)"
ELLIPSIS = "…"
_LETTER = re.compile(r"[^\W\d_]")


def run(sp: SuperPrompt, ctx: StageContext) -> SuperPrompt:
    """Write ``S_CTX_MD``, the budgeted ``final_selection_ids`` and ``views_by_stage["a4"]``."""
    settings = ctx.config.agents.a4
    count_tokens = ctx.rs.embedder().count_tokens
    selected, used, over_budget = _select(sp.chunks(sp.final_selection_ids), settings.token_budget,
                                          ctx.config.pipeline.N3_FINAL_SELECTION_MAX, count_tokens)
    if not selected:
        raise NoRelevantContextError(
            f"none of the {len(sp.final_selection_ids)} selected chunks fits agents.a4.token_budget={settings.token_budget}")

    payload = {"prompt_md": query_text(sp.body)[: settings.field_chars], "passages": _passages(selected, settings)}
    output, record = call_agent(ctx, "a4", A4_PROMPT, payload)
    condensed = output.s_ctx_md.strip() if isinstance(output, A4Output) else ""
    if isinstance(output, A4Output) and count_tokens(condensed) > settings.token_budget:
        record, condensed = fallback(record, "the LLM condensation exceeds agents.a4.token_budget"), ""
    if not condensed:
        condensed = _extractive(selected, settings)

    sp.S_CTX_MD = f"{S_CTX_HEADING}\n\n{condensed}\n\n{_sources(selected)}"
    sp.final_selection_ids = [chunk.chunk_id for chunk in selected]
    sp.views_by_stage["a4"] = list(sp.final_selection_ids)
    sp.extras["a4"] = {**record, "token_budget": settings.token_budget, "tokens_used": used,
                       "skipped_over_budget": over_budget}
    sp.advance("a4")
    sp.prompt_ready = preview(sp)
    return sp


def _select(chunks: list[Chunk], budget: int, max_chunks: int, count_tokens: Callable[[str], int]) -> tuple[list[Chunk], int, list[str]]:
    """Greedy in order: every chunk that still fits, at most ``max_chunks``."""
    selected: list[Chunk] = []
    skipped: list[str] = []
    used = 0
    for chunk in chunks:
        if len(selected) == max_chunks:
            break
        tokens = count_tokens(chunk.text)
        if used + tokens > budget:
            skipped.append(chunk.chunk_id)
            continue
        selected.append(chunk)
        used += tokens
    return selected, used, skipped


def _passages(chunks: list[Chunk], settings: A4CondenserSettings) -> str:
    return "\n\n".join(f"[{n}] ({provenance(c)})\n{c.text[: settings.snippet_chars]}"
                       for n, c in enumerate(chunks, start=1))


def _extractive(chunks: list[Chunk], settings: A4CondenserSettings) -> str:
    """The leading prose sentences of each chunk, as cited bullets."""
    lines = [FACTS_HEADING]
    for number, chunk in enumerate(chunks, start=1):
        sentences = _prose_sentences(chunk.text)[: settings.sentences_per_chunk] or [CODE_ONLY]
        lines += [f"- {_cut(sentence, settings.sentence_max_chars)} [{number}]" for sentence in sentences]
    return "\n".join(lines)


def _prose_sentences(text: str) -> list[str]:
    return [s for s in prose_sentences(CODE_BLOCK.sub(" ", text)) if _LETTER.search(s)]


def _cut(sentence: str, max_chars: int) -> str:
    return sentence if len(sentence) <= max_chars else sentence[:max_chars].rstrip() + ELLIPSIS


def _sources(chunks: list[Chunk]) -> str:
    return "Sources:\n" + "\n".join(f"[{n}] {provenance(c)}" for n, c in enumerate(chunks, start=1))
