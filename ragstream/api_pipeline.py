"""The facade's SuperPrompt pipeline (docs/pipeline.md): :class:`Ragstream` takes these methods from
:class:`PipelineFacade`, which keeps them out of ``api.py``: start a SuperPrompt, run its stages one by one
(manual mode) or all (auto mode), then answer it from exactly the messages Prompt_Builder rendered."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from ragstream.api_collections import CollectionsFacade
from ragstream.config import RagstreamConfig
from ragstream.errors import InvalidQueryError, PromptNotBuiltError, check_unicode
from ragstream.models import WHOLE_INDEX, LazyScope, Scope
from ragstream.pipeline.stages import RERANKER as RERANKER
from ragstream.pipeline.stages import STAGE_NAMES as STAGE_NAMES
from ragstream.pipeline.stages import STAGES as STAGES
from ragstream.pipeline.stages import StageSpec
from ragstream.pipeline.stages import describe as describe_stage
from ragstream.pipeline.super_prompt import ConversationPair, SuperPrompt
from ragstream.providers.deadline import Deadline
from ragstream.store.base import Snapshot

if TYPE_CHECKING:
    from ragstream.answer.models import StreamEvent
    from ragstream.answer.service import AnswerService
    from ragstream.pipeline.context import StageContext

# The stages as the stage-by-stage UI and the CLI show them (pipeline/stages.py), and what runs next.
__all__ = ["RERANKER", "STAGES", "STAGE_NAMES", "PipelineFacade", "describe_stage", "next_stage"]


def next_stage(sp: SuperPrompt) -> StageSpec | None:
    """The stage that runs next on ``sp`` (the pipeline controller's next step), or None when all ran."""
    from ragstream.pipeline.controller import next_step  # the agents load only when a pipeline runs

    step = next_step(sp)
    return None if step is None else step.spec


class PipelineFacade(CollectionsFacade):
    """The SuperPrompt pipeline: new prompt, run a stage, run all, answer the built prompt."""

    config: RagstreamConfig
    snapshot: Callable[[], AbstractContextManager[Snapshot]]
    stage_context: Callable[[], StageContext]
    answers: Callable[[], AnswerService]

    def new_prompt(self, text: str, conversation: Iterable[ConversationPair | tuple[str, str]] | None = None,
                   selected_text: str | None = None, *, scope: Scope = WHOLE_INDEX) -> SuperPrompt:
        """A fresh SuperPrompt (stage ``raw``) for ``text``, earlier (user, assistant) turn pairs and the text the
        user selected. Raises InvalidUnicodeError for text that is not valid Unicode, InvalidQueryError for a
        selected text over ``answer.max_selected_text_chars``. The collections ``scope`` names are checked for its
        reader now (CollectionNotFoundError) and kept in the prompt (``sp.collections``: its runs read them)."""
        pairs = [p if isinstance(p, ConversationPair) else ConversationPair(user=p[0], assistant=p[1])
                 for p in conversation or []]
        for value in (text, selected_text or "", *(part for pair in pairs for part in (pair.user, pair.assistant))):
            check_unicode(value, "the prompt")
        limit = self.config.answer.max_selected_text_chars
        if selected_text and len(selected_text) > limit:
            raise InvalidQueryError(f"selected_text is {len(selected_text)} characters; the limit is {limit}")
        sp = SuperPrompt(user_text=text, recentConversation=pairs, selected_text=selected_text or "")
        if scope.collections:
            self._resolve(scope)
            sp.collections = list(scope.collections)
        return sp

    def run_stage(self, sp: SuperPrompt, stage: str | None = None, *, scope: Scope = WHOLE_INDEX) -> SuperPrompt:
        """Manual mode: run the next pipeline stage (or ``stage``, when its predecessor ran last); its searches see
        the documents ``scope``'s user may see in its collections (else in those ``sp`` names), whose instructions
        the prompt takes."""
        from ragstream.pipeline import controller

        with self.snapshot() as snapshot:
            return controller.run_stage(*self._turn(sp, snapshot, scope), stage)

    def run_pipeline(self, text_or_sp: str | SuperPrompt, until: str | None = None, *,
                     scope: Scope = WHOLE_INDEX) -> SuperPrompt:
        """Auto mode: run every remaining stage (through ``until``) on a prompt text or a SuperPrompt;
        its searches see the documents of ``scope``, as :meth:`run_stage`."""
        from ragstream.pipeline import controller

        sp = self.new_prompt(text_or_sp) if isinstance(text_or_sp, str) else text_or_sp
        with self.snapshot() as snapshot:
            return controller.run_pipeline(*self._turn(sp, snapshot, scope), until)

    def stream_prompt_answer(self, sp: SuperPrompt, *, scope: Scope = WHOLE_INDEX) -> Iterator[StreamEvent]:
        """The Answer step after Prompt_Builder: the answering model reads ``sp.messages`` exactly as rendered
        (without an LLM, the extractive answer reads the same attachments); the events of
        :meth:`~ragstream.api.Ragstream.stream_answer`, in a new conversation. PromptNotBuiltError before
        Prompt_Builder ran; the SuperPrompt is not changed. ``scope`` labels the cited documents."""
        from ragstream.pipeline import controller
        from ragstream.pipeline.invariants import check_state

        if controller.next_step(sp) is not None or not sp.messages:
            step = controller.next_step(sp)
            raise PromptNotBuiltError(f"the Answer step needs Prompt_Builder to have run; "
                                      f"the next stage is {step.name if step else 'none'}")
        check_state(sp, self.config.pipeline)
        lazy = self._lazy(scope)
        built = controller.working_copy(sp)
        return _resolved_first(lazy, self._labelled_events(self.answers().stream_answer(
            built.user_text, None, built.selected_text, lazy, built=built), lazy))

    def _turn(self, sp: SuperPrompt, snapshot: Snapshot, scope: Scope) -> tuple[SuperPrompt, StageContext]:
        """``sp`` with its scope's instructions; the stage context of one question (deadline, snapshot, user, scope)."""
        resolved = self._scoped_prompt(sp, scope)
        return sp, self.stage_context().for_turn(Deadline(self.config.answer.deadline_seconds), snapshot, scope.user,
                                                 resolved.collections)


def _resolved_first(scope: LazyScope, events: Iterator[StreamEvent]) -> Iterator[StreamEvent]:
    """``events`` once ``scope`` is resolved: a built prompt runs no pipeline, so there is no retried attempt to
    resolve it in; an unreadable collection or a store down is the stream's first error (over HTTP a 404 or 503
    before anything is sent), never one at the first citation."""
    scope.resolved()
    yield from events
