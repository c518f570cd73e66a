"""The pipeline invariants (docs/pipeline.md) and the N-caps, checked by the controller after every stage.

Which stage owns which field, which stages write a view and each view's cap come from the stage
registry (:mod:`ragstream.pipeline.stages`). Each check raises :class:`InvariantViolationError`
whose ``invariant`` names what broke: ``stage_order``, ``stage_writes``, ``stage_llm``,
``I1_unique_chunk_ids``, ``I1_single_corpus``, ``I2_views``, ``I3_final_selection``,
``I4_immutable_chunks``, ``I5_rendered_blocks`` or ``caps``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragstream.config import PipelineLimits
from ragstream.errors import InvariantViolationError
from ragstream.pipeline.stages import (
    BOOKKEEPING,
    HISTORY_ORDER,
    LOGS,
    RAW,
    STAGES,
    VIEW_STAGES,
    StageSpec,
    spec_of,
    view_parent,
    writers,
)
from ragstream.pipeline.super_prompt import SuperPrompt

FIELDS = tuple(SuperPrompt.model_fields)
CHUNKS_OWNER = writers("base_context_chunks")
"""The stage that fills ``base_context_chunks`` (Retrieval): nothing else adds, reorders or changes a chunk."""
SELECTION_OWNERS = writers("final_selection_ids")
"""The stages that set ``final_selection_ids`` (A3, then A4): it equals the view of the last of them that ran."""
S_CTX_OWNER = writers("S_CTX_MD")
"""The stage that writes S_CTX (A4), and only it."""
RENDERER = writers("System_MD")
"""The stage that renders the final blocks and the messages (Prompt_Builder)."""


def check_state(sp: SuperPrompt, limits: PipelineLimits) -> None:
    """Every invariant that a single SuperPrompt must satisfy."""
    history = sp.history_of_stages
    if list(history) != list(HISTORY_ORDER[: len(history)]):
        _fail("stage_order", f"history {history} is not a prefix of {list(HISTORY_ORDER)}")
    lifecycle = [stage for entry in history if (stage := spec_of(entry).sets_stage) is not None]
    if sp.stage != (lifecycle[-1] if lifecycle else RAW):
        _fail("stage_order", f"stage {sp.stage!r} does not match history {history}")
    ran: set[str] = set(history)
    ids = [chunk.chunk_id for chunk in sp.base_context_chunks]
    if len(ids) != len(set(ids)):
        _fail("I1_unique_chunk_ids", "base_context_chunks holds a chunk id twice")
    if ids and not _any_ran(CHUNKS_OWNER, ran):
        _fail("I1_single_corpus", f"base_context_chunks filled before {_names(CHUNKS_OWNER)} ran")
    _check_views(sp, ran, set(ids))
    _check_final_selection(sp, ran, set(ids))
    _check_blocks(sp, ran)
    _check_caps(sp, ran, limits)


def check_transition(before: SuperPrompt, after: SuperPrompt, spec: StageSpec) -> None:
    """What stage ``spec`` may change: one history entry appended, its report written, only the fields
    (and its own keys of the keyed fields) the registry declares, no LLM call unless it may; chunks
    neither changed nor added late."""
    if after.history_of_stages != [*before.history_of_stages, spec.entry]:
        _fail("stage_order", f"history must grow by exactly {spec.entry!r}: {before.history_of_stages} -> "
                             f"{after.history_of_stages}")
    check_writes(before, after, spec)
    report = after.stage_reports.get(spec.entry)
    if report is None:
        _fail("stage_writes", f"{spec.name} wrote no stage report")
    elif report.llm_calls and spec.llm_key is None:
        _fail("stage_llm", f"{spec.name} called the LLM, which the stage registry does not allow it")
    old, new = before.chunk_map(), after.chunk_map()
    changed = sorted(chunk_id for chunk_id, chunk in old.items() if new.get(chunk_id) != chunk)
    if changed:
        _fail("I4_immutable_chunks", f"chunks changed or removed: {changed[:3]}")
    if old and list(new) != list(old):
        _fail("I1_single_corpus", "a stage after Retrieval added or reordered base_context_chunks")


def check_writes(before: SuperPrompt, after: SuperPrompt, spec: StageSpec) -> None:
    """Stage ``spec`` changed only the fields it declares (its ``writes``, the bookkeeping and its logs),
    and of the keyed fields only its own keys: its view and scores, its report, its log keys."""
    allowed = spec.writes | BOOKKEEPING | ({LOGS} if spec.logs else set())
    undeclared = [name for name in FIELDS if name not in allowed and getattr(before, name) != getattr(after, name)]
    if undeclared:
        _fail("stage_writes", f"{spec.name} changed {undeclared}, which the stage registry does not declare")
    own_keys: dict[str, set[str]] = {
        "views_by_stage": {spec.entry} if spec.writes_view else set(),
        "scores_by_stage": {spec.entry} if spec.writes_scores else set(),
        "stage_reports": {spec.entry},
        LOGS: set(spec.logs),
    }
    for name, own in own_keys.items():
        foreign = sorted(_changed_keys(getattr(before, name), getattr(after, name)) - own)
        if foreign:
            _fail("stage_writes", f"{spec.name} changed {name}{foreign}, which the stage registry does not declare")


def _changed_keys(old: dict[str, Any], new: dict[str, Any]) -> set[str]:
    return {key for key in old.keys() | new.keys() if old.get(key) != new.get(key)}


def _check_views(sp: SuperPrompt, ran: set[str], base: set[str]) -> None:
    for stage, view in sp.views_by_stage.items():
        if stage not in VIEW_STAGES or stage not in ran:
            _fail("I2_views", f"view {stage!r} written, but it is not a view stage that ran")
        _unique_known("I2_views", f"views_by_stage[{stage!r}]", view, base)
        parent = view_parent(spec_of(stage))
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
    owners = [spec for spec in SELECTION_OWNERS if spec.entry in ran]
    if final and not owners:
        _fail("I3_final_selection", f"final_selection_ids set before {SELECTION_OWNERS[0].name} ran")
    if owners and final != sp.views_by_stage[owners[-1].entry]:
        _fail("I3_final_selection", f"final_selection_ids differs from views_by_stage[{owners[-1].entry!r}]")


def _check_blocks(sp: SuperPrompt, ran: set[str]) -> None:
    if _any_ran(S_CTX_OWNER, ran) != bool(sp.S_CTX_MD):
        _fail("I5_rendered_blocks", f"S_CTX_MD must be written by {_names(S_CTX_OWNER)}, and only by it")
    blocks = [sp.System_MD, sp.Prompt_MD, sp.S_CTX_MD, sp.Attachments_MD]
    if not _any_ran(RENDERER, ran):
        if sp.System_MD or sp.Prompt_MD or sp.Attachments_MD:
            _fail("I5_rendered_blocks", f"System_MD, Prompt_MD or Attachments_MD rendered before {_names(RENDERER)}")
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


def _check_caps(sp: SuperPrompt, ran: set[str], limits: PipelineLimits) -> None:
    """Each view within its stage's cap; the chunks within their owner's cap; once the last selection
    owner with a cap ran, the selection within it."""
    caps = {spec.entry: (spec.cap, _limit(limits, spec.cap)) for spec in STAGES if spec.cap is not None}
    for entry, (name, cap) in caps.items():
        view = sp.views_by_stage.get(entry, [])
        if len(view) > cap:
            _fail("caps", f"views_by_stage[{entry!r}] holds {len(view)} ids; the cap is {name}={cap}")
    for owner in CHUNKS_OWNER:
        name, cap = caps.get(owner.entry, ("", len(sp.base_context_chunks)))
        if len(sp.base_context_chunks) > cap:
            _fail("caps", f"base_context_chunks exceeds {name}={cap}")
    capped = [spec.entry for spec in SELECTION_OWNERS if spec.entry in caps and spec.entry in ran]
    if capped and len(sp.final_selection_ids) > caps[capped[-1]][1]:
        name, cap = caps[capped[-1]]
        _fail("caps", f"final_selection_ids exceeds {name}={cap}")


def _limit(limits: PipelineLimits, name: str) -> int:
    value: int = getattr(limits, name)
    return value


def _any_ran(specs: Sequence[StageSpec], ran: set[str]) -> bool:
    return any(spec.entry in ran for spec in specs)


def _names(specs: Sequence[StageSpec]) -> str:
    return " or ".join(spec.name for spec in specs)


def _unique_known(invariant: str, name: str, ids: Sequence[str], base: set[str]) -> None:
    if len(ids) != len(set(ids)):
        _fail(invariant, f"{name} holds an id twice")
    unknown = [chunk_id for chunk_id in ids if chunk_id not in base]
    if unknown:
        _fail(invariant, f"{name} holds ids not in base_context_chunks: {unknown[:3]}")


def _fail(invariant: str, message: str) -> None:
    raise InvariantViolationError(invariant, message)
