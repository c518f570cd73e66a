"""The pipeline invariants (docs/pipeline.md) and the N-caps, checked by the controller after every stage.

Each check raises :class:`InvariantViolationError` whose ``invariant`` names what broke:
``stage_order``, ``I1_unique_chunk_ids``, ``I1_single_corpus``, ``I2_views``,
``I3_final_selection``, ``I4_immutable_chunks``, ``I5_rendered_blocks`` or ``caps``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragstream.config import PipelineLimits
from ragstream.errors import InvariantViolationError
from ragstream.pipeline.super_prompt import BUILT, VIEW_STAGES, HistoryEntry, SuperPrompt

HISTORY_ORDER: tuple[HistoryEntry, ...] = ("preprocessed", "a2", "retrieval", "reranked", "a3", "a4", "a5", BUILT)
VIEW_PARENTS = {"reranked": "retrieval", "a3": "reranked", "a4": "a3"}


def check_state(sp: SuperPrompt, limits: PipelineLimits) -> None:
    """Every invariant that a single SuperPrompt must satisfy."""
    history = sp.history_of_stages
    if list(history) != list(HISTORY_ORDER[: len(history)]):
        _fail("stage_order", f"history {history} is not a prefix of {list(HISTORY_ORDER)}")
    lifecycle = [entry for entry in history if entry != BUILT]
    if sp.stage != (lifecycle[-1] if lifecycle else "raw"):
        _fail("stage_order", f"stage {sp.stage!r} does not match history {history}")
    ran: set[str] = set(history)
    ids = [chunk.chunk_id for chunk in sp.base_context_chunks]
    if len(ids) != len(set(ids)):
        _fail("I1_unique_chunk_ids", "base_context_chunks holds a chunk id twice")
    if "retrieval" not in ran and ids:
        _fail("I1_single_corpus", "base_context_chunks filled before Retrieval ran")
    _check_views(sp, ran, set(ids))
    _check_final_selection(sp, ran, set(ids))
    _check_blocks(sp, ran)
    _check_caps(sp, limits)


def check_transition(before: SuperPrompt, after: SuperPrompt, entry: HistoryEntry) -> None:
    """What one stage may change: one history entry appended; chunks neither changed nor added late."""
    if after.history_of_stages != [*before.history_of_stages, entry]:
        _fail("stage_order", f"history must grow by exactly {entry!r}: {before.history_of_stages} -> "
                             f"{after.history_of_stages}")
    old, new = before.chunk_map(), after.chunk_map()
    changed = sorted(chunk_id for chunk_id, chunk in old.items() if new.get(chunk_id) != chunk)
    if changed:
        _fail("I4_immutable_chunks", f"chunks changed or removed: {changed[:3]}")
    if old and list(new) != list(old):
        _fail("I1_single_corpus", "a stage after Retrieval added or reordered base_context_chunks")


def _check_views(sp: SuperPrompt, ran: set[str], base: set[str]) -> None:
    for stage, view in sp.views_by_stage.items():
        if stage not in VIEW_STAGES or stage not in ran:
            _fail("I2_views", f"view {stage!r} written, but it is not a view stage that ran")
        _unique_known("I2_views", f"views_by_stage[{stage!r}]", view, base)
        parent = VIEW_PARENTS.get(stage)
        if parent is not None and not set(view) <= set(sp.views_by_stage.get(parent, [])):
            _fail("I2_views", f"views_by_stage[{stage!r}] holds ids not in views_by_stage[{parent!r}]")
    for stage, scores in sp.scores_by_stage.items():
        if len(scores) != len(sp.views_by_stage.get(stage, [])):
            _fail("I2_views", f"scores_by_stage[{stage!r}] does not match views_by_stage[{stage!r}]")
    missing = [stage for stage in VIEW_STAGES if stage in ran and stage not in sp.views_by_stage]
    if missing:
        _fail("I2_views", f"stages {missing} ran without writing their view")


def _check_final_selection(sp: SuperPrompt, ran: set[str], base: set[str]) -> None:
    final = sp.final_selection_ids
    _unique_known("I3_final_selection", "final_selection_ids", final, base)
    if "a3" not in ran and final:
        _fail("I3_final_selection", "final_selection_ids set before A3_NLI_Gate ran")
    owner = "a4" if "a4" in ran else "a3" if "a3" in ran else None
    if owner is not None and final != sp.views_by_stage[owner]:
        _fail("I3_final_selection", f"final_selection_ids differs from views_by_stage[{owner!r}]")


def _check_blocks(sp: SuperPrompt, ran: set[str]) -> None:
    if ("a4" in ran) != bool(sp.S_CTX_MD):
        _fail("I5_rendered_blocks", "S_CTX_MD must be written by A4_Condenser, and only by it")
    blocks = [sp.System_MD, sp.Prompt_MD, sp.S_CTX_MD, sp.Attachments_MD]
    if BUILT not in ran:
        if sp.System_MD or sp.Prompt_MD or sp.Attachments_MD:
            _fail("I5_rendered_blocks", "System_MD, Prompt_MD or Attachments_MD rendered before Prompt_Builder")
        return
    position = 0
    for block in blocks:
        found = sp.prompt_ready.find(block, position) if block else -1
        if found < 0:
            _fail("I5_rendered_blocks", "prompt_ready lacks System, Prompt, S_CTX or Attachments, or their order")
        position = found + len(block)
    _check_messages(sp)


def _check_messages(sp: SuperPrompt) -> None:
    """The model reads System_MD as the system message and the other blocks, in order, as the user
    turn; no attached document text is in the system message."""
    roles = [message.role for message in sp.messages]
    if roles != ["system", "user"] or sp.messages[0].content != sp.System_MD:
        _fail("I5_rendered_blocks", "messages must be System_MD (system) then the user turn")
    user, position = sp.messages[1].content, 0
    for block in (sp.Prompt_MD, sp.S_CTX_MD, sp.Attachments_MD):
        found = user.find(block, position)
        if found < 0:
            _fail("I5_rendered_blocks", "the user turn lacks Prompt, S_CTX or Attachments, or their order")
        position = found + len(block)
    leaked = [chunk.chunk_id for chunk in sp.chunks(sp.final_selection_ids) if chunk.text.strip() in sp.System_MD]
    if leaked:
        _fail("I5_rendered_blocks", f"attached document text is in the system message: {leaked[:3]}")


def _check_caps(sp: SuperPrompt, limits: PipelineLimits) -> None:
    caps = {"retrieval": limits.N1_RETR_MAX_CANDIDATES, "reranked": limits.N2_RERANK_TOP_K,
            "a4": limits.N3_FINAL_SELECTION_MAX}
    for stage, cap in caps.items():
        if len(sp.views_by_stage.get(stage, [])) > cap:
            _fail("caps", f"views_by_stage[{stage!r}] holds {len(sp.views_by_stage[stage])} ids; the cap is {cap}")
    if len(sp.base_context_chunks) > limits.N1_RETR_MAX_CANDIDATES:
        _fail("caps", f"base_context_chunks exceeds N1_RETR_MAX_CANDIDATES={limits.N1_RETR_MAX_CANDIDATES}")
    if "a4" in sp.views_by_stage and len(sp.final_selection_ids) > limits.N3_FINAL_SELECTION_MAX:
        _fail("caps", f"final_selection_ids exceeds N3_FINAL_SELECTION_MAX={limits.N3_FINAL_SELECTION_MAX}")


def _unique_known(invariant: str, name: str, ids: Sequence[str], base: set[str]) -> None:
    if len(ids) != len(set(ids)):
        _fail(invariant, f"{name} holds an id twice")
    unknown = [chunk_id for chunk_id in ids if chunk_id not in base]
    if unknown:
        _fail(invariant, f"{name} holds ids not in base_context_chunks: {unknown[:3]}")


def _fail(invariant: str, message: str) -> None:
    raise InvariantViolationError(invariant, message)
