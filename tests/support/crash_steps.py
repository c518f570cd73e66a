"""Where the crash tests stop an ingest, written once for the SIGKILLed child (``crash_child.py``) and the
in-process replays (``test_crash_safety.py``, ``test_store_contract.py``). Not a test module.

An ingest's write steps, in order (``ragstream/ingestion.py``, docs/consistency.md): the catalog allocates the
new generations with their intents (``begin_versions``), the store writes each document's points (``upsert``)
and flushes them (``flush``), one catalog transaction switches the documents to the new generations
(``commit_documents``), then the old generations' points are deleted (``delete_generation``, ``flush``) and
the intents cleared (``clear_intents``).

The three crash points stop it between those steps: ``mid_upsert`` (half of a document's points written and
flushed), ``before_commit`` (every point written, the catalog not switched) and ``before_old_delete`` (the
catalog switched, the old points still there). ``install_crash`` and ``announce_steps`` patch the classes of
the store and of the catalog's roles (versions, documents) an index opened, with ``patch``: plain ``setattr``
in the child (it dies anyway), pytest's ``monkeypatch.setattr`` in process (undone after the test).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NoReturn

CRASH_POINTS = ("mid_upsert", "before_commit", "before_old_delete")
STORE_STEPS = ("upsert", "flush", "delete_generation")
VERSIONS_STEPS = ("begin_versions", "clear_intents")
DOCUMENTS_STEPS = ("commit_documents",)
COMMIT_STEP = "commit_documents"

Patch = Callable[[Any, str, Any], None]


def install_crash(store_type: type, documents_type: type, crash_point: str, crash: Callable[[str], NoReturn],
                  patch: Patch = setattr) -> None:
    """Make an ingest through these classes stop at ``crash_point``: ``crash(crash_point)`` runs there (the
    child SIGKILLs itself, an in-process test raises)."""
    if crash_point == "mid_upsert":
        original = store_type.upsert

        def upsert_half(self: Any, chunks: list[Any], vectors: Any, generation: int) -> None:
            half = max(1, len(chunks) // 2)
            original(self, chunks[:half], vectors[:half], generation)
            self.flush()
            crash(crash_point)

        patch(store_type, "upsert", upsert_half)
    elif crash_point in ("before_commit", "before_old_delete"):
        owner, name = (documents_type, COMMIT_STEP) if crash_point == "before_commit" else (store_type, "delete_generation")
        patch(owner, name, lambda self, *args, **kwargs: crash(crash_point))
    else:
        raise ValueError(f"unknown crash point {crash_point!r}: one of {', '.join(CRASH_POINTS)}")


def announce_steps(store_type: type, versions_type: type, documents_type: type, announce: Callable[[str], None],
                   patch: Patch = setattr) -> None:
    """Call ``announce(step)`` as each write step begins, before it touches anything."""
    for owner, steps in ((store_type, STORE_STEPS), (versions_type, VERSIONS_STEPS), (documents_type, DOCUMENTS_STEPS)):
        for step in steps:
            patch(owner, step, _announced(getattr(owner, step), step, announce))


def _announced(method: Callable[..., Any], step: str, announce: Callable[[str], None]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        announce(step)
        return method(self, *args, **kwargs)

    return wrapper
