"""What every route shares: the index, document locks, upload storage, background jobs and held SuperPrompts."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass

from fastapi import Request

from ragstream.api import Ragstream
from ragstream.api_types import SuperPrompt
from ragstream.api_writes import DocumentLocks, JobRunner, UploadService, UploadStore
from ragstream.config import ServerConfig
from ragstream.server.errors import PipelineNotFoundError
from ragstream.server.root_syncs import RootSyncs


class PromptSessions:
    """SuperPrompts by id and owner, the most recently used within ``capacity`` items and ``max_bytes`` (their
    size as JSON); the least recently used are dropped first. Thread-safe. Another user's SuperPrompt is as
    unknown to a caller as one never created."""

    def __init__(self, capacity: int, max_bytes: int) -> None:
        self._capacity = capacity
        self._max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[str, SuperPrompt]] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> tuple[int, int]:
        """(SuperPrompts held, their bytes)."""
        with self._lock:
            return len(self._items), self._bytes

    def add(self, sp: SuperPrompt, owner: str) -> str:
        """Hold ``owner``'s ``sp`` under a new id (dropping the least recently used past capacity)."""
        prompt_id = uuid.uuid4().hex
        self.put(prompt_id, sp, owner)
        return prompt_id

    def get(self, prompt_id: str, owner: str) -> SuperPrompt:
        """``owner``'s SuperPrompt held as ``prompt_id``; raises PipelineNotFoundError."""
        with self._lock:
            item = self._items.get(prompt_id)
            if item is None or item[0] != owner:
                raise PipelineNotFoundError(f"no SuperPrompt with id {prompt_id!r}")
            self._items.move_to_end(prompt_id)
            return item[1]

    def put(self, prompt_id: str, sp: SuperPrompt, owner: str) -> None:
        """Store (or replace) ``owner``'s ``prompt_id``; the newest one is kept even when it alone passes
        ``max_bytes``."""
        size = len(sp.model_dump_json().encode("utf-8"))
        with self._lock:
            self._bytes += size - self._sizes.get(prompt_id, 0)
            self._items[prompt_id] = (owner, sp)
            self._sizes[prompt_id] = size
            self._items.move_to_end(prompt_id)
            while len(self._items) > 1 and (len(self._items) > self._capacity or self._bytes > self._max_bytes):
                dropped, _ = self._items.popitem(last=False)
                self._bytes -= self._sizes.pop(dropped)


@dataclass
class ServerState:
    """Shared by all requests. An upload or delete holds its document's lock in ``documents``; the index's
    own commit lock serialises only the short switch of each written batch (work per request stays bounded)."""

    rs: Ragstream
    config: ServerConfig
    uploads: UploadStore
    prompts: PromptSessions
    jobs: JobRunner
    root_syncs: RootSyncs
    documents: DocumentLocks
    intake: UploadService
    """The uploads' write path (ragstream/writes/): ``uploads``, ``jobs`` and ``documents`` are its parts."""


def get_state(request: Request) -> ServerState:
    """FastAPI dependency: the app's ServerState."""
    return request.app.state.ragstream
