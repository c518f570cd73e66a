"""What one read may see (docs/collections.md): who asks, with their rights, and which collections.

A :class:`Scope` is built once at each surface's edge (an HTTP route, /v1, /ws/chat, an MCP tool, the CLI, a
script) from the caller and the collection names as the caller gave them, and carried unchanged into the facade.
There, and only there, it becomes a :class:`ResolvedScope` (collection ids for the store filter, their names for
labels, their instructions for the answering model): an answer resolves it inside its retried attempt
(:class:`LazyScope`), so a store down while reading the collections is answered without retrieval on every surface.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True)
class Scope:
    """Who reads (``user``: None for the CLI or a script, which read every document; ``admin``: an admin key, which
    reads every collection) and which collections (``collections``: names as the caller gave them, each checked for
    the reader when resolved; None or none: every collection the reader may read)."""

    user: str | None = None
    collections: Sequence[str] | None = None
    admin: bool = False

    def __post_init__(self) -> None:
        if self.collections is not None:  # a tuple: a Scope is a value (hashable, never changed by its holder)
            object.__setattr__(self, "collections", tuple(self.collections))

    def names(self) -> list[str] | None:
        """The collection names to resolve (None: every collection the reader may read)."""
        return list(self.collections) if self.collections else None


WHOLE_INDEX = Scope()
"""No user and no collections: every document (the CLI and scripts, as before users and collections)."""


class ResolvedScope(BaseModel):
    """A :class:`Scope` resolved against the catalog: what one read may see besides its user's documents (the
    collections it is limited to) and their instructions for the answering model (docs/collections.md)."""

    model_config = ConfigDict(frozen=True)

    collections: tuple[str, ...] | None = Field(None, description="Collection ids every search is limited to "
                                                "(None: no limit beyond the user's own visibility).")
    instructions: tuple[str, ...] = Field((), description="'name: text' of each scoped collection with instructions.")
    names: tuple[tuple[str, str], ...] | None = Field(None, description="(id, name) of each collection the read "
                                                      "may see, its sources' labels (None: every collection).")


class LazyScope:
    """One read's :class:`Scope` with how to resolve it, resolved when first asked and then reused: an answer asks
    inside its attempt (a store down then is retried, then answered without retrieval) and again for its labels."""

    def __init__(self, scope: Scope, resolve: Callable[[Scope], ResolvedScope]) -> None:
        self.scope = scope
        self._resolve = resolve
        self._resolved: ResolvedScope | None = None
        self._lock = threading.Lock()

    @property
    def user(self) -> str | None:
        """Whose read it is."""
        return self.scope.user

    def resolved(self) -> ResolvedScope:
        """The resolved scope (read from the catalog on the first call only; a failed read is tried again)."""
        with self._lock:
            if self._resolved is None:
                self._resolved = self._resolve(self.scope)
            return self._resolved
