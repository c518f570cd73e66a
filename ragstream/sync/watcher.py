"""``ragstream watch``: keep roots in step with the index while it runs.

File events come from watchfiles (inotify, FSEvents, ReadDirectoryChangesW). They are debounced
(``sync.debounce_ms``, at most ``sync.max_debounce_ms``), so a rename's delete and create, or an editor's
save-by-rename, land in one batch. A changed file is synced once its size and modification time have
held still for ``sync.stable_seconds`` (a file still being copied waits and is looked at again every
``sync.poll_seconds``), a deleted one once it stayed gone that long or beside a file that is ready (a
rename's two sides sync together); editors' temporary files never count. Each batch is one sync limited to the paths
that changed; a new folder or a changed ignore file makes it a full sync of that root, as does the start
and every ``sync.rescan_seconds``. While it runs, the watcher holds a lease on its roots in the catalog
(``sync.lease_seconds``, renewed every ``sync.heartbeat_seconds``), which the Documents page shows.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import watchfiles

from ragstream.config import SyncConfig
from ragstream.errors import RagstreamError
from ragstream.sync.files import under
from ragstream.sync.report import SyncReport
from ragstream.sync.syncer import Syncer, resolve_root

logger = logging.getLogger("ragstream.sync")
MS_PER_SECOND = 1000
_GONE = (-1, -1)
"""The (size, time) a pending path that does not exist is remembered with."""
ReportCallback = Callable[[SyncReport], None]


class Watcher:
    """Watches roots and syncs what changes, on a thread of its own (:meth:`start`, :meth:`stop`) or on the
    caller's (:meth:`run`)."""

    def __init__(self, paths: Iterable[str | Path], syncer: Syncer, config: SyncConfig, *,
                 ignore_files: Iterable[str] = (), on_report: ReportCallback | None = None) -> None:
        """``paths``: the roots (RootNotFoundError when one does not exist); ``ignore_files``: names whose change
        re-reads a root's rules (``ingest.ignore_files``); ``on_report``: called with each batch's report."""
        self.roots = list(dict.fromkeys(resolve_root(path) for path in paths))
        self._keys = [str(root) for root in self.roots]
        self._syncer = syncer
        self._config = config
        self._ignore_files = frozenset(ignore_files)
        self._on_report = on_report
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()
        """Set once the first full sync is done (events from then on are being watched)."""
        self.batches = 0
        """Syncs run so far."""
        self.error: BaseException | None = None
        """What ended the watch, if it ended on an error."""

    # -- life cycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Watch on a background thread."""
        self._thread = threading.Thread(target=self.run, name="ragstream-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching; waits for a sync in progress to finish (each document switch is atomic anyway)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def run(self) -> None:
        """Watch until :meth:`stop` (or Ctrl-C on the main thread): a full sync first, then a sync per batch."""
        pending: dict[str, tuple[int, int, float] | None] = {}
        full = set(self._keys)
        last_full = last_lease = float("-inf")
        retry_at = float("-inf")
        config = self._config
        try:
            for changes in watchfiles.watch(
                    *self.roots, watch_filter=self._counts, debounce=config.max_debounce_ms, step=config.debounce_ms,
                    stop_event=self._stop, rust_timeout=max(1, int(config.poll_seconds * MS_PER_SECOND)),
                    yield_on_timeout=True, raise_interrupt=False):
                for change, raw in changes:
                    self._note(change, raw, pending, full)
                now = time.monotonic()
                if config.rescan_seconds and now - last_full >= config.rescan_seconds:
                    full.update(self._keys)
                if now >= retry_at:
                    try:
                        if full:
                            self._sync([root for root in self.roots if str(root) in full], None)
                            pending = {path: seen for path, seen in pending.items() if self._root_of(path) not in full}
                            full.clear()
                            last_full = now
                            self.ready.set()
                        ready = self._settled(pending)
                        if ready:
                            self._sync([root for root in self.roots if any(under(path, str(root)) for path in ready)],
                                       ready)
                            for path in ready:
                                pending.pop(path, None)
                    except (RagstreamError, OSError) as error:  # the embedder or the disk: try again later
                        logger.warning("sync failed, retrying in %.0f s: %s", config.heartbeat_seconds, error)
                        retry_at = now + config.heartbeat_seconds
                if now - last_lease >= config.heartbeat_seconds:  # a root is registered by its first sync
                    self._syncer.lease(self._keys, time.time() + config.lease_seconds)
                    last_lease = now
        except KeyboardInterrupt:  # Ctrl-C while a sync ran on the main thread: stop as asked
            logger.info("watch interrupted")
        except BaseException as error:
            self.error = error
            logger.exception("the watcher stopped on an error")
            raise
        finally:
            self.ready.set()  # nobody waits forever on a watcher that ended
            try:
                self._syncer.lease(self._keys, None)
            except RagstreamError as error:
                logger.warning("could not drop the watcher's lease: %s", error)

    # -- events --------------------------------------------------------------------------------

    def _counts(self, change: watchfiles.Change, path: str) -> bool:
        """watchfiles' filter: events on temporary files and in the index's own folders never count."""
        return not self._syncer.ignores(path)

    def _note(self, change: watchfiles.Change, path: str, pending: dict[str, tuple[int, int, float] | None],
              full: set[str]) -> None:
        """File one event: a deletion (of a file or a folder) is looked at; a new folder or a changed ignore file
        makes its root due a full sync; a created or modified file that sync would take waits to settle."""
        root = self._root_of(path)
        if root is None:
            return
        if Path(path).name in self._ignore_files:
            full.add(root)
        elif change == watchfiles.Change.deleted:
            pending[path] = None
        elif os.path.isdir(path):
            if change == watchfiles.Change.added:
                full.add(root)
        elif self._syncer.takes(Path(root), Path(path)):
            pending[path] = None

    def _root_of(self, path: str) -> str | None:
        """The innermost root holding ``path``."""
        holding = [key for key in self._keys if under(path, key)]
        return max(holding, key=len) if holding else None

    def _settled(self, pending: dict[str, tuple[int, int, float] | None]) -> set[str]:
        """The pending paths ready to sync: a file whose size and time held for ``sync.stable_seconds`` (or were
        last changed that long ago when first seen), and a path gone for that long (an editor that deletes and
        writes again keeps its document) or gone while another path is ready (a rename's two sides sync together).
        The others are remembered as seen now."""
        stable = self._config.stable_seconds
        ready: set[str] = set()
        missing: list[str] = []
        now = time.monotonic()
        for path, seen in list(pending.items()):
            try:
                status = os.stat(path)
            except OSError:
                missing.append(path)
                if seen is None or seen[:2] != _GONE:
                    pending[path] = (*_GONE, now)
                    if stable > 0:
                        continue
                elif now - seen[2] < stable:
                    continue
                ready.add(path)
                continue
            if stat.S_ISDIR(status.st_mode):
                pending.pop(path)
                continue
            mark = (status.st_size, status.st_mtime_ns)
            if seen is not None and seen[:2] == mark:
                if now - seen[2] >= stable:
                    ready.add(path)
            elif seen is None and time.time() - status.st_mtime >= stable:
                ready.add(path)
            else:
                pending[path] = (*mark, now)
        if ready:
            ready.update(missing)
        return ready

    def _sync(self, roots: Sequence[Path], changed: set[str] | None) -> None:
        report = self._syncer.sync(roots, changed=changed)
        self.batches += 1
        if self._on_report is not None:
            self._on_report(report)
        elif report.failures or report.changes or changed is None:
            logger.info("%s", report.summary())
