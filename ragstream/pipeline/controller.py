"""The controller: run one stage (manual mode) or all of them (auto mode), checking order and
invariants after every stage. A failing stage raises its typed error and leaves the given
SuperPrompt unchanged (stages work on a copy: see :func:`working_copy`).

The stages, their order and their modules come from the stage registry
(:mod:`ragstream.pipeline.stages`). Each stage module has ``inputs(ctx)``, which takes from the
:class:`StageContext` only what that stage uses, and ``run(sp, inputs)``; the controller hands the
stage those inputs, never the context, and checks afterwards that it changed only what the registry
says it writes.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragstream.errors import StageOrderError, UnknownStageError
from ragstream.pipeline.context import StageContext
from ragstream.pipeline.invariants import check_state, check_transition
from ragstream.pipeline.stages import STAGE_NAMES, STAGES, HistoryEntry, StageSpec, find_stage
from ragstream.pipeline.super_prompt import SuperPrompt

MS = 1000.0
StageTimings = dict[str, float]
"""Milliseconds per stage (by history entry), filled as the stages run: kept out of the SuperPrompt, which two
runs of the same question must build byte for byte alike."""

__all__ = ["STAGE_NAMES", "STEPS", "StageTimings", "Step", "next_step", "resolve_step", "run_pipeline", "run_stage"]


@dataclass(frozen=True)
class Step:
    """One pipeline stage: its registry entry, and its module's ``inputs`` and ``run``."""

    spec: StageSpec
    inputs: Callable[[StageContext], Any]
    stage: Callable[[SuperPrompt, Any], SuperPrompt]

    @property
    def name(self) -> str:
        """The button name (``A0_PreProcessing``)."""
        return self.spec.name

    @property
    def entry(self) -> HistoryEntry:
        """Its history entry."""
        return self.spec.entry

    def run(self, sp: SuperPrompt, ctx: StageContext) -> SuperPrompt:
        """Run the stage on ``sp`` (changed in place and returned) with the inputs it takes from ``ctx``."""
        return self.stage(sp, self.inputs(ctx))


def _step(spec: StageSpec) -> Step:
    """The step of ``spec``, from its module ``ragstream.pipeline.<spec.module>``."""
    module = importlib.import_module(f"{__package__}.{spec.module}")
    if getattr(module, "SPEC", None) is not spec:
        raise ImportError(f"{module.__name__} is not the module of stage {spec.name} (its SPEC differs)")
    return Step(spec, module.inputs, module.run)


STEPS: tuple[Step, ...] = tuple(_step(spec) for spec in STAGES)


def resolve_step(name: str) -> Step:
    """The step called ``name`` (its name, prefix or history entry, case-insensitive); raises UnknownStageError."""
    spec = find_stage(name)
    if spec is None:
        raise UnknownStageError(f"unknown stage {name!r}; the stages are {', '.join(STAGE_NAMES)}")
    return STEPS[STAGES.index(spec)]


def next_step(sp: SuperPrompt) -> Step | None:
    """The stage that runs next, or ``None`` when all ran."""
    done = len(sp.history_of_stages)
    return STEPS[done] if done < len(STEPS) else None


def run_stage(sp: SuperPrompt, ctx: StageContext, stage: str | None = None,
              timings: StageTimings | None = None) -> SuperPrompt:
    """Manual mode: run the next stage, or ``stage`` when its predecessor is the last that ran
    (its wall time in milliseconds into ``timings`` when given).

    Returns a new SuperPrompt; ``sp`` itself is never changed.
    """
    check_state(sp, ctx.config.pipeline)
    expected = next_step(sp)
    step = resolve_step(stage) if stage is not None else expected
    if expected is None or step is None:
        raise StageOrderError(f"all {len(STEPS)} stages already ran; start a new prompt")
    if step is not expected:
        index = STEPS.index(step)
        needs = STEPS[index - 1].name if index else "a fresh SuperPrompt"
        raise StageOrderError(f"cannot run {step.name}: it needs {needs} to be the last stage run; "
                              f"the next stage is {expected.name}")
    started = time.perf_counter()
    after = step.run(working_copy(sp), ctx)
    if timings is not None:
        timings[step.entry] = round((time.perf_counter() - started) * MS, 1)
    check_transition(sp, after, step.spec)
    check_state(after, ctx.config.pipeline)
    return after


def working_copy(sp: SuperPrompt) -> SuperPrompt:
    """A copy a stage may change freely: every field deep-copied except the chunks, which are frozen
    models and shared (copying up to N1 chunks before each of the eight stages took a third of an
    extractive ``ask``). The transition check still refuses a chunk replaced, removed or added late."""
    chunks = sp.base_context_chunks
    copy = sp.model_copy(update={"base_context_chunks": []}).model_copy(deep=True)
    copy.base_context_chunks = list(chunks)
    return copy


def run_pipeline(sp: SuperPrompt, ctx: StageContext, until: str | None = None,
                 timings: StageTimings | None = None) -> SuperPrompt:
    """Auto mode: run the remaining stages in order, through ``until`` when given (their times into ``timings``)."""
    last = resolve_step(until) if until is not None else STEPS[-1]
    if STEPS.index(last) < len(sp.history_of_stages):
        raise StageOrderError(f"{last.name} already ran")
    while len(sp.history_of_stages) <= STEPS.index(last):
        sp = run_stage(sp, ctx, timings=timings)
    return sp
