"""What every route shares: the index, the write lock, upload storage and held SuperPrompts."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

from fastapi import Request

from ragstream.api import Ragstream
from ragstream.config import ServerConfig
from ragstream.pipeline.super_prompt import SuperPrompt
from ragstream.server.errors import PipelineNotFoundError
from ragstream.server.uploads import UploadStore


class PromptSessions:
    """SuperPrompts by id and owner, the ``capacity`` most recently used; thread-safe. Another user's
    SuperPrompt is as unknown to a caller as one never created."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._items: OrderedDict[str, tuple[str, SuperPrompt]] = OrderedDict()
        self._lock = threading.Lock()

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
        """Store (or replace) ``owner``'s ``prompt_id``."""
        with self._lock:
            self._items[prompt_id] = (owner, sp)
            self._items.move_to_end(prompt_id)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)


@dataclass
class ServerState:
    """Shared by all requests. Writes to the index (ingest, delete, reindex) hold ``write_lock``."""

    rs: Ragstream
    config: ServerConfig
    uploads: UploadStore
    prompts: PromptSessions
    write_lock: threading.Lock = field(default_factory=threading.Lock)


def get_state(request: Request) -> ServerState:
    """FastAPI dependency: the app's ServerState."""
    return request.app.state.ragstream
