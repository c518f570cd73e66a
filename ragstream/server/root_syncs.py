"""Syncs of registered roots that an admin asked for over HTTP (``POST /api/roots/sync``), run one at a time
on a thread of their own, so the request returns at once and its work stays bounded."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ragstream.api_types import SyncReport
from ragstream.errors import RagstreamError

logger = logging.getLogger("ragstream.server")
SyncRoot = Callable[[str], SyncReport]


class RootSyncs:
    """A queue of roots to sync (a root already queued or running is not queued twice) and its worker thread."""

    def __init__(self, sync: SyncRoot) -> None:
        self._sync = sync
        self._queue: list[str] = []
        self._running: str | None = None
        self._stopping = False
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, root: str) -> bool:
        """Queue a sync of ``root``; False when one is already queued (a running one does not count: the files
        may have changed since it looked)."""
        with self._wake:
            if root in self._queue:
                return False
            self._queue.append(root)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="ragstream-root-sync", daemon=True)
                self._thread.start()
            self._wake.notify()
            return True

    def busy(self, root: str) -> bool:
        """Whether a sync of ``root`` is queued or running here."""
        with self._wake:
            return root == self._running or root in self._queue

    def shutdown(self) -> None:
        """Drop the queue and wait for a running sync to end."""
        with self._wake:
            self._stopping = True
            self._queue.clear()
            self._wake.notify()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _loop(self) -> None:
        while True:
            with self._wake:
                while not self._queue and not self._stopping:
                    self._wake.wait()
                if self._stopping:
                    return
                root = self._running = self._queue.pop(0)
            try:
                logger.info("%s", self._sync(root).summary())
            except RagstreamError as error:
                logger.warning("the sync of %s failed: %s", root, error)
            except Exception:  # a bug: logged, and the next queued root still runs
                logger.exception("the sync of %s failed", root)
            finally:
                with self._wake:
                    self._running = None
