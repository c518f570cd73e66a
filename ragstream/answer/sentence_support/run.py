"""The support check of one answer, sentence by sentence as it streams in, or all at once.

:meth:`SupportRun.feed` takes the answer text so far and returns the verdicts of the sentences that
just completed; :meth:`SupportRun.finish` takes the whole text and returns the verdicts not yet
given (a sentence whose text changed after its verdict, which the splitting rules make rare, is
checked again). :attr:`SupportRun.verdicts` then holds one verdict per sentence, in order.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragstream.answer.models import DocumentChunk, SentenceSupport
from ragstream.answer.sentence_support.checker import SupportChecker
from ragstream.answer.sentence_support.judge import judge, judge_candidates
from ragstream.answer.sentence_support.sentences import AnswerSentence, complete_sentences, split_answer
from ragstream.config import SupportConfig
from ragstream.providers.deadline import Deadline

if TYPE_CHECKING:
    from ragstream.providers.llm_client import LLMClient

_WORD = re.compile(r"[^\W_]")
EXTRACTIVE = "extractive"
NO_RESULTS = "no_results"
LLM = "llm"
VERDICTS = ("supported", "unsupported", "uncertain")


class SupportRun:
    """Verdicts of one answer's sentences; ``checker`` is built on first use (only answers with sentences pay)."""

    def __init__(self, checker: Callable[[], SupportChecker]) -> None:
        self._make_checker = checker
        self._checker: SupportChecker | None = None
        self._given: dict[int, SentenceSupport] = {}
        self._seen: dict[int, AnswerSentence] = {}
        self._settled = 0  # characters of the streamed text whose sentences all had their verdict
        self._settled_count = 0
        self._fed = 0
        self.verdicts: list[SentenceSupport] = []

    @property
    def checker(self) -> SupportChecker:
        """The checker (built now if it was not yet)."""
        if self._checker is None:
            self._checker = self._make_checker()
        return self._checker

    @property
    def errors(self) -> list[str]:
        """Why a similarity signal was left out, if one was."""
        return self._checker.errors if self._checker is not None else []

    def feed(self, partial: str, mode: str) -> list[SentenceSupport]:
        """Verdicts of the sentences of ``partial`` (the text so far) that are complete and had none yet.

        Only the text after the last complete sentence is read again, and only once new text holds a
        letter or digit (a sentence completes when the next one begins)."""
        new_text, self._fed = partial[self._fed :], len(partial)
        if not _WORD.search(new_text):
            return []
        complete = [dataclasses.replace(s, index=s.index + self._settled_count, start=s.start + self._settled,
                                        end=s.end + self._settled)
                    for s in complete_sentences(partial[self._settled :])]
        if not complete:
            return []
        self._settled, self._settled_count = complete[-1].end, complete[-1].index + 1
        return self._check(complete, mode)

    def finish(self, text: str, mode: str) -> list[SentenceSupport]:
        """Verdicts of every sentence of the whole ``text`` that had none (or whose text changed); sets :attr:`verdicts`."""
        if mode == NO_RESULTS:
            self.verdicts = []
            return []
        sentences = split_answer(text)
        fresh = [s for s in sentences if self._seen.get(s.index) != s]
        new = self._check(fresh, mode)
        self.verdicts = [self._given[s.index] for s in sentences if s.index in self._given]
        return new

    def revise(self, revised: list[SentenceSupport]) -> None:
        """Replace the verdicts of the same sentences (the LLM judge's)."""
        by_index = {verdict.index: verdict for verdict in revised}
        self.verdicts = [by_index.get(verdict.index, verdict) for verdict in self.verdicts]

    def _check(self, sentences: list[AnswerSentence], mode: str) -> list[SentenceSupport]:
        if not sentences or mode == NO_RESULTS:
            return []
        checker = self.checker
        verdicts = checker.extractive(sentences) if mode == EXTRACTIVE else checker.check(sentences)
        for sentence in sentences:
            self._seen[sentence.index] = sentence
            self._given.pop(sentence.index, None)
        for verdict in verdicts:
            self._given[verdict.index] = verdict
        return verdicts


@dataclass
class SupportOutcome:
    """What finishing an answer's check produced: verdicts to send, LLM judge calls made, notes for the metadata."""

    sent: list[SentenceSupport] = field(default_factory=list)
    judge_calls: int = 0
    notes: list[str] = field(default_factory=list)


def finish_support(run: SupportRun, text: str, mode: str, config: SupportConfig, *, llm: LLMClient | None,
                   chunks: Sequence[DocumentChunk], deadline: Deadline) -> SupportOutcome:
    """Verdicts for the sentences of the whole ``text`` that had none, then (``config.llm_judge``, an LLM answer)
    the judge's revisions in one call bounded by ``deadline``."""
    outcome = SupportOutcome(sent=run.finish(text, mode))
    asked = judge_candidates(run.verdicts, config) if config.llm_judge and mode == LLM else []
    if asked and llm is not None:
        outcome.judge_calls += 1
        revised, failure = judge(llm, asked, chunks, config, deadline)
        run.revise(revised)
        outcome.sent += revised
        if failure:
            outcome.notes.append(failure)
    outcome.notes += [note for note in run.errors if note not in outcome.notes]
    return outcome


def support_summary(sentences: Sequence[SentenceSupport], outcome: SupportOutcome | None) -> dict[str, Any] | None:
    """``metadata.support``: how many sentences got each verdict, the judge's calls, what the check could not use
    (None when the check is off)."""
    if outcome is None:
        return None
    counts = {verdict: sum(s.verdict == verdict for s in sentences) for verdict in VERDICTS}
    return {**counts, "judge_calls": outcome.judge_calls, "notes": outcome.notes}
