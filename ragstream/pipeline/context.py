"""``StageContext``: everything the pipeline's stages may use besides the SuperPrompt, as small protocols.

Stages hold no state and never see the ``Ragstream`` facade. ``api.py`` builds the context once and
``for_turn`` gives each question its own deadline and the catalog snapshot all of its searches read.
No stage receives the context itself: each stage module's ``inputs(ctx)`` takes from it the config
sections and the dependencies that stage uses (a search bound to the question's snapshot and user,
the embedder, the reranker, its own LLM agent, the prompt schema, the token counter), and the
controller hands the stage only those. See docs/pipeline.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ragstream.agents.factory import AgentFactory
from ragstream.config import RagstreamConfig
from ragstream.models import SearchMode, SearchResult
from ragstream.pipeline.prompt_schema import PromptSchema
from ragstream.providers.deadline import Deadline
from ragstream.providers.embedders.base import Embedder
from ragstream.providers.rerankers.base import Reranker
from ragstream.store.base import Filters, Snapshot


class Search(Protocol):
    """The index's search (hybrid, dense or BM25; ``Searcher.search``) over the document versions committed at
    ``snapshot`` (or at the call, without one), among the documents ``user`` may see (its own and
    the shared ones; every document when None), in the collections (ids, a resolved scope's) ``collections``."""

    def __call__(
        self,
        query: str,
        *,
        mode: SearchMode | None = None,
        top_k: int | None = None,
        filters: Filters | None = None,
        score_threshold: float | None = None,
        query_vector: np.ndarray | None = None,
        snapshot: Snapshot | None = None,
        user: str | None = None,
        collections: Sequence[str] | None = None,
    ) -> SearchResult: ...


class StageSearch(Protocol):
    """The index's search as a stage sees it: over the question's snapshot, among its user's documents."""

    def __call__(self, query: str, *, mode: SearchMode | None = None, top_k: int | None = None,
                 query_vector: np.ndarray | None = None) -> SearchResult: ...


@dataclass(frozen=True)
class ScopedSearch:
    """``search`` bound to one question's snapshot and user (a :class:`StageSearch`)."""

    search: Search
    snapshot: Snapshot | None
    user: str | None
    collections: Sequence[str] | None = None

    def __call__(self, query: str, *, mode: SearchMode | None = None, top_k: int | None = None,
                 query_vector: np.ndarray | None = None) -> SearchResult:
        """The search over the bound snapshot and user's documents."""
        return self.search(query, mode=mode, top_k=top_k, query_vector=query_vector, snapshot=self.snapshot,
                           user=self.user, collections=self.collections)


EmbedderSource = Callable[[], Embedder]
"""Returns the embedder; raises ``EmbeddingFailureError`` when it is unavailable."""

TokenCounter = Callable[[str], int]
"""Tokens of a text for the answering model (its tokenizer, or the documented estimate)."""


@dataclass(frozen=True)
class StageContext:
    """Everything the stages may use; each stage's ``inputs(ctx)`` takes only what that stage uses."""

    config: RagstreamConfig
    search: Search
    embedder: EmbedderSource
    reranker: Reranker | None
    reranker_unavailable: str | None
    agents: AgentFactory
    schema: PromptSchema
    count_tokens: TokenCounter
    deadline: Deadline = dataclasses.field(default_factory=Deadline.unbounded)
    snapshot: Snapshot | None = None
    """The catalog snapshot every search of the question reads (one version of each document)."""
    user: str | None = None
    """Whose question it is: every search sees only that user's and the shared documents (all when None)."""
    collections: tuple[str, ...] | None = None
    """The collections (ids) the question is scoped to: every search sees only their documents (None: no scope)."""

    def for_turn(self, deadline: Deadline, snapshot: Snapshot | None = None, user: str | None = None,
                 collections: Sequence[str] | None = None) -> StageContext:
        """This context with the deadline of one question, the snapshot its searches read, its user and scope."""
        return dataclasses.replace(self, deadline=deadline, snapshot=snapshot, user=user,
                                   collections=None if collections is None else tuple(collections))

    def scoped_search(self) -> StageSearch:
        """The search over this question's snapshot, among its user's documents."""
        return ScopedSearch(self.search, self.snapshot, self.user, self.collections)
