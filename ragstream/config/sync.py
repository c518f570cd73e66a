"""``sync``: folder sync and watch (docs/cli.md)."""

from __future__ import annotations

from pydantic import Field, model_validator

from ragstream.config.base import ConfigSection

DEFAULT_TEMPORARY_FILES = (".#*", "*~", "*.swp", "*.swo", "*.swx", "4913", "~$*", ".~lock.*#", "*.tmp", "*.part",
                           "*.crdownload")
"""Editors' lock, swap and backup files and partial downloads: Emacs ``.#x`` and ``x~``, Vim's swap files and
its ``4913`` write probe, Office's ``~$x`` owner files, LibreOffice's ``.~lock.x#``, browsers' partial downloads."""


class SyncConfig(ConfigSection):
    """Folder sync and watch: ``ragstream sync``, ``ragstream watch`` and ``ragstream serve --watch`` (docs/cli.md)."""

    temporary_files: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TEMPORARY_FILES),
        description="Files sync and watch never take (on top of ingest.include/exclude and ignore files), as "
        ".gitignore-style globs: editors' lock, swap and backup files and partial downloads.")
    debounce_ms: int = Field(
        1000, ge=1, description="watch: changes are gathered until none has arrived for this long (milliseconds), "
        "then synced together (a rename's delete and create land in one batch).")
    max_debounce_ms: int = Field(
        10_000, ge=1, description="watch: a batch of changes is synced after at most this long (milliseconds), "
        "even while changes keep arriving.")
    stable_seconds: float = Field(
        1.0, ge=0, description="watch: a changed file is synced once its size and modification time have stayed "
        "the same for this long (seconds); a file still being written waits, and is looked at again.")
    poll_seconds: float = Field(
        0.5, gt=0, description="watch: how often (seconds) files waiting to settle are looked at again and a stop "
        "request is noticed.")
    rescan_seconds: float = Field(
        3600.0, ge=0, description="watch: a full sync of every watched root this often (seconds), catching changes "
        "whose file events were lost (0: only when the watcher starts). Unchanged files are not read again.")
    heartbeat_seconds: float = Field(
        10.0, gt=0, description="watch: how often (seconds) the watcher renews its lease on its roots.")
    lease_seconds: float = Field(
        30.0, gt=0, description="watch: a root shows as watched until this long (seconds) after its watcher last "
        "renewed the lease (a watcher that died stops showing after it).")
    hash_block_bytes: int = Field(
        1024 * 1024, ge=1, description="Read size (bytes) when hashing a file to see whether it changed.")
    failures_kept: int = Field(
        5, ge=0, description="Failures of a root's last sync its registry keeps for the Documents page (the sync's "
        "own report lists them all).")
    watch_port: int = Field(
        0, ge=0, le=65535, description="`ragstream watch` on an index one process holds (the embedded store) "
        "serves the index's API on this loopback port, so other commands reach it (0: a free port).")

    @model_validator(mode="after")
    def _heartbeat_within_lease(self) -> SyncConfig:
        if self.heartbeat_seconds >= self.lease_seconds:
            raise ValueError("sync.heartbeat_seconds must be less than lease_seconds, or watched roots show as "
                             "unwatched between renewals")
        if self.max_debounce_ms < self.debounce_ms:
            raise ValueError("sync.max_debounce_ms must be at least debounce_ms")
        return self
