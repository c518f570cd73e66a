"""Prompt_Builder: render the final blocks and ``prompt_ready`` (seed 000 section 5.8). No LLM.

Order: System_MD, Prompt_MD, S_CTX_MD (A4's, unedited), Attachments_MD (raw excerpts of
``final_selection_ids`` in provenance fences), then the last ``N4`` conversation pairs. The
lifecycle stage stays ``a5``.
"""

from __future__ import annotations

from ragstream.pipeline.context import StageContext
from ragstream.pipeline.render import attachments_md, conversation_md, hard_rules, prompt_md, system_md
from ragstream.pipeline.super_prompt import BUILT, SuperPrompt

BLOCK_SEPARATOR = "\n\n"


def run(sp: SuperPrompt, ctx: StageContext) -> SuperPrompt:
    """Fill System_MD, Prompt_MD, Attachments_MD and ``prompt_ready``."""
    max_pairs = ctx.config.pipeline.N4_RECENT_CONV_MAX_PAIRS
    pairs = sp.recentConversation[-max_pairs:] if max_pairs > 0 else []
    sp.System_MD = system_md(sp.body, hard_rules(sp))
    sp.Prompt_MD = prompt_md(sp.body)
    sp.Attachments_MD = attachments_md(sp.chunks(sp.final_selection_ids))
    blocks = [sp.System_MD, sp.Prompt_MD, sp.S_CTX_MD, sp.Attachments_MD]
    if pairs:
        blocks.append(conversation_md(pairs))
    sp.prompt_ready = BLOCK_SEPARATOR.join(blocks)
    sp.extras["prompt_builder"] = {"attachments": len(sp.final_selection_ids), "conversation_pairs": len(pairs),
                                   "conversation_pairs_dropped": len(sp.recentConversation) - len(pairs)}
    sp.advance(BUILT)
    return sp
