"""Prompt_Builder: render the final blocks, ``prompt_ready`` and the chat messages (docs/pipeline.md). No
LLM.

System_MD (role, meta-fields, the answer rules, A5's hard rules, the instructions of the collections the
question is scoped to) is the system message; it holds no document text. The user turn is Prompt_MD,
S_CTX_MD (A4's, unedited), Attachments_MD (raw excerpts of ``final_selection_ids`` numbered from 1, each
in its own fence, written best first or, with ``answer.attachment_order = "best_last"``, best last), the
last ``N4`` conversation pairs, then the closing instruction. Attachment ``[n]`` is
``final_selection_ids[n-1]`` in either order: the one numbering citations resolve against. The lifecycle
stage stays ``a5``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragstream.config import AnswerConfig, PipelineLimits
from ragstream.pipeline.context import StageContext, TokenCounter
from ragstream.pipeline.render import (
    attachments_md,
    collection_md,
    conversation_md,
    prompt_md,
    ranking_scores,
    system_md,
)
from ragstream.pipeline.stages import PROMPT_BUILDER as SPEC
from ragstream.pipeline.super_prompt import PromptMessage, SuperPrompt

BLOCK_SEPARATOR = "\n\n"
TASK_PLACEHOLDER = "{task}"
"""Replaced in ``answer.closing_instruction`` by the task, so small models read the question last."""


@dataclass(frozen=True)
class Inputs:
    """What Prompt_Builder uses: the ``answer`` section, the ``pipeline`` section (``N4``) and the token counter."""

    answer: AnswerConfig
    limits: PipelineLimits
    count_tokens: TokenCounter


def inputs(ctx: StageContext) -> Inputs:
    """Prompt_Builder's inputs, taken from the pipeline's context."""
    return Inputs(ctx.config.answer, ctx.config.pipeline, ctx.count_tokens)


def run(sp: SuperPrompt, deps: Inputs) -> SuperPrompt:
    """Fill System_MD, Prompt_MD, Attachments_MD, ``prompt_ready``, ``messages`` and ``prompt_tokens``."""
    answer = deps.answer
    max_pairs = deps.limits.N4_RECENT_CONV_MAX_PAIRS
    pairs = sp.recentConversation[-max_pairs:] if max_pairs > 0 else []
    sp.System_MD = system_md(sp.body, sp.hard_rules, answer.system_rules)
    if sp.collection_instructions:
        sp.System_MD = BLOCK_SEPARATOR.join([sp.System_MD, collection_md(sp.collection_instructions)])
    sp.Prompt_MD = prompt_md(sp.body, selected_text=sp.selected_text)
    sp.Attachments_MD = attachments_md(sp.chunks(sp.final_selection_ids), best_last=answer.attachment_order == "best_last",
                                       scores=ranking_scores(sp))
    user_blocks = [sp.Prompt_MD, sp.S_CTX_MD, sp.Attachments_MD]
    if pairs:
        user_blocks.append(conversation_md(pairs))
    if answer.closing_instruction:
        user_blocks.append(answer.closing_instruction.replace(TASK_PLACEHOLDER, " ".join(sp.body.get("task", "").split())))
    user = BLOCK_SEPARATOR.join(block for block in user_blocks if block)
    sp.messages = [PromptMessage(role="system", content=sp.System_MD), PromptMessage(role="user", content=user)]
    sp.prompt_ready = BLOCK_SEPARATOR.join([sp.System_MD, user])
    sp.prompt_tokens = sum(deps.count_tokens(message.content) for message in sp.messages)
    sp.extras["prompt_builder"] = {"attachments": len(sp.final_selection_ids), "conversation_pairs": len(pairs),
                                   "conversation_pairs_dropped": len(sp.recentConversation) - len(pairs)}
    sp.report(SPEC.entry, "function")
    sp.advance(SPEC.entry)
    return sp
