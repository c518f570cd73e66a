"""Which document generations readers must not see right now."""

from __future__ import annotations

import threading
from collections.abc import Iterable


class Visibility:
    """A thread-safe set of hidden generations.

    A generation being written is hidden until the catalog switches to it; the generation it
    replaces is hidden from that moment until its points are deleted. Readers take a snapshot.
    """

    def __init__(self) -> None:
        self._hidden: set[int] = set()
        self._lock = threading.Lock()

    def hide(self, *generations: int | None) -> None:
        """Hide generations (None is ignored)."""
        with self._lock:
            self._hidden.update(g for g in generations if g is not None)

    def switch(self, show: Iterable[int], hide: Iterable[int | None]) -> None:
        """Atomically show new generations and hide the ones they replace."""
        with self._lock:
            self._hidden.difference_update(show)
            self._hidden.update(g for g in hide if g is not None)

    def show(self, *generations: int | None) -> None:
        """Stop hiding generations whose points are gone or live."""
        with self._lock:
            self._hidden.difference_update(generations)

    def snapshot(self) -> frozenset[int]:
        """The hidden generations at this instant."""
        with self._lock:
            return frozenset(self._hidden)
