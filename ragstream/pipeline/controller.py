"""The controller: run one stage (manual mode) or all of them (auto mode), checking order and
invariants after every stage. A failing stage raises its typed error and leaves the given
SuperPrompt unchanged (stages work on a deep copy)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ragstream.errors import StageOrderError, UnknownStageError
from ragstream.pipeline import (
    a0_preprocessing,
    a2_prompt_shaper,
    a3_nli_gate,
    a4_condenser,
    a5_format_enforcer,
    prompt_builder,
    reranker,
    retrieval,
)
from ragstream.pipeline.context import StageContext
from ragstream.pipeline.invariants import check_state, check_transition
from ragstream.pipeline.super_prompt import BUILT, HistoryEntry, SuperPrompt


@dataclass(frozen=True)
class Step:
    """One pipeline stage: its button name, its history entry and its function."""

    name: str
    entry: HistoryEntry
    run: Callable[[SuperPrompt, StageContext], SuperPrompt]

    def aliases(self) -> set[str]:
        """Names that select this step: the full name, its prefix (``a0``, ``reranker``) and its entry."""
        return {self.name.casefold(), self.name.split("_")[0].casefold(), self.entry}


STEPS: tuple[Step, ...] = (
    Step("A0_PreProcessing", "preprocessed", a0_preprocessing.run),
    Step("A2_PromptShaper", "a2", a2_prompt_shaper.run),
    Step("Retrieval", "retrieval", retrieval.run),
    Step("ReRanker", "reranked", reranker.run),
    Step("A3_NLI_Gate", "a3", a3_nli_gate.run),
    Step("A4_Condenser", "a4", a4_condenser.run),
    Step("A5_Format_Enforcer", "a5", a5_format_enforcer.run),
    Step("Prompt_Builder", BUILT, prompt_builder.run),
)
STEP_NAMES = tuple(step.name for step in STEPS)


def resolve_step(name: str) -> Step:
    """The step called ``name`` (case-insensitive); raises UnknownStageError."""
    wanted = name.strip().casefold()
    for step in STEPS:
        if wanted in step.aliases():
            return step
    raise UnknownStageError(f"unknown stage {name!r}; the stages are {', '.join(STEP_NAMES)}")


def next_step(sp: SuperPrompt) -> Step | None:
    """The stage that runs next, or ``None`` when all eight ran."""
    done = len(sp.history_of_stages)
    return STEPS[done] if done < len(STEPS) else None


def run_stage(sp: SuperPrompt, ctx: StageContext, stage: str | None = None) -> SuperPrompt:
    """Manual mode: run the next stage, or ``stage`` when its predecessor is the last that ran.

    Returns a new SuperPrompt; ``sp`` itself is never changed.
    """
    check_state(sp, ctx.config.pipeline)
    expected = next_step(sp)
    step = resolve_step(stage) if stage is not None else expected
    if expected is None or step is None:
        raise StageOrderError("all eight stages already ran; start a new prompt")
    if step is not expected:
        index = STEPS.index(step)
        needs = STEPS[index - 1].name if index else "a fresh SuperPrompt"
        raise StageOrderError(f"cannot run {step.name}: it needs {needs} to be the last stage run; "
                              f"the next stage is {expected.name}")
    after = step.run(sp.model_copy(deep=True), ctx)
    check_transition(sp, after, step.entry)
    check_state(after, ctx.config.pipeline)
    return after


def run_pipeline(sp: SuperPrompt, ctx: StageContext, until: str | None = None) -> SuperPrompt:
    """Auto mode: run the remaining stages in order, through ``until`` when given."""
    last = resolve_step(until) if until is not None else STEPS[-1]
    if STEPS.index(last) < len(sp.history_of_stages):
        raise StageOrderError(f"{last.name} already ran")
    while len(sp.history_of_stages) <= STEPS.index(last):
        sp = run_stage(sp, ctx)
    return sp
