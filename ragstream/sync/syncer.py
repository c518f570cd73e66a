"""Make the index match folders: new and changed files are ingested, renamed files re-linked by content
hash without re-embedding, documents whose files are gone (or now excluded) removed with their chunks.

Each document a sync writes belongs to its *root* (the folder or file given, resolved; a catalog column), and
is shared with every user, like the CLI's ingest. A sync of a root only ever removes documents of that root
that are shared: a user's document, or one another root that holds the file keeps in step, is left alone. A
shared document ingested without a root (``ragstream ingest``) whose source lies under the root is the root's
too, whoever ingested it: adopted when its file is taken, removed when the file is gone or no longer taken
(editors' temporary files and the index's own folders aside: sync never touches those).
A symlink in a root is followed only as ``ingest.follow_symlinks`` allows, checked again when the file is read.
A root that does not exist is reported (``root_not_found``) and nothing of it is removed: an unmounted disk
does not empty the index.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePath

from ragstream.config import RagstreamConfig
from ragstream.documents.loaders import default_document_id
from ragstream.documents.selection import FileSelector
from ragstream.errors import DocumentError, RootNotFoundError
from ragstream.ingestion import Ingestor, ProgressCallback
from ragstream.models import DocumentRecord, FileFailure, LoadedDocument, SkippedFile
from ragstream.store.catalog_base import DocumentRegistry, SyncRoots
from ragstream.sync.files import FileDigests, TemporaryFiles, under
from ragstream.sync.report import RenamedFile, SyncReport

logger = logging.getLogger("ragstream.sync")
TEMPORARY = "temporary"


@dataclass
class _Plan:
    """What one root's sync will do, decided before anything is written."""

    present: dict[str, Path] = field(default_factory=dict)
    """Files of the root (among those looked at) that exist and are taken: resolved source -> path."""
    load: dict[str, Path] = field(default_factory=dict)
    """New or changed files to ingest."""
    new: dict[str, tuple[Path, str]] = field(default_factory=dict)
    """Files with no document yet: source -> (path, sha256), before renames are matched."""
    adopt: list[DocumentRecord] = field(default_factory=list)
    moves: list[tuple[DocumentRecord, str]] = field(default_factory=list)
    gone: list[DocumentRecord] = field(default_factory=list)


def resolve_root(path: str | Path) -> Path:
    """A root as the catalog keeps it: the absolute path with symlinks resolved. Raises RootNotFoundError."""
    resolved = Path(path).expanduser().resolve()
    if not resolved.exists():
        raise RootNotFoundError(f"{resolved} does not exist (nothing of it was removed from the index)")
    return resolved


class Syncer:
    """Keeps the index in step with roots; one sync at a time per index handle (thread-safe)."""

    def __init__(self, config: RagstreamConfig, documents: DocumentRegistry, roots: SyncRoots, ingestor: Ingestor) -> None:
        self._config = config
        self._documents = documents
        self._roots = roots
        self._ingestor = ingestor
        self._selector = FileSelector(config.ingest)
        self._temporary = TemporaryFiles(config.sync.temporary_files)
        self._digests = FileDigests(config.sync.hash_block_bytes, config.limits.max_file_bytes,
                                    config.ingest.follow_symlinks)
        self._own = [str(Path(folder).expanduser().resolve()) for folder in (config.data_dir, config.server.upload_dir)
                     if folder is not None]
        """The index's own folders (data, uploads): never synced, even inside a root."""
        self._lock = threading.Lock()

    def sync(self, paths: Iterable[str | Path], *, changed: Iterable[str | Path] | None = None,
             progress: ProgressCallback | None = None) -> SyncReport:
        """Sync each root in ``paths`` (folders or files); with ``changed`` (absolute paths a watcher saw
        change), only those paths and what was under them. A root that does not exist is a failure of the report."""
        started = time.perf_counter()
        looked_at = None if changed is None else {str(Path(path)) for path in changed}
        parts: list[SyncReport] = []
        with self._lock:
            for path in paths:
                try:
                    root = resolve_root(path)
                except RootNotFoundError as error:
                    source = str(Path(path).expanduser().absolute())
                    parts.append(SyncReport(roots=[source], failures=[_failure(source, error)]))
                    continue
                part = self._sync_root(root, looked_at, progress)
                self._roots.record_sync(str(root), datetime.now(UTC).isoformat(timespec="milliseconds"),
                                        json.dumps(part.counts(self._config.sync.failures_kept)))
                parts.append(part)
            if self._config.ingest.reindex_stale:  # when no file changed, no ingest ran to do it
                parts.append(SyncReport.of_reindex(self._ingestor.reindex_stale(progress=progress)))
        report = SyncReport().merge(parts)
        report.duration_seconds = time.perf_counter() - started
        return report

    def ignores(self, path: str | Path) -> bool:
        """Whether sync never takes ``path``, wherever it is: an editor's or a download's temporary file, or a file
        of the index's own folders (its data directory, its uploads)."""
        return self._temporary.match(path) or any(under(str(path), folder) for folder in self._own)

    def takes(self, root: Path, path: Path) -> bool:
        """Whether a sync of ``root`` takes the file ``path`` (ingest's selection rules, minus temporary files)."""
        return not self.ignores(path) and self._selector.skip_reason(root, path) is None

    def lease(self, roots: list[str], until: float | None) -> None:
        """A watcher's lease on ``roots`` until ``until`` (seconds since the epoch; None drops it)."""
        self._roots.watch_roots(roots, until)

    def forget(self, path: str | Path) -> SyncReport:
        """Remove every document of the root ``path`` (which may no longer exist) and unregister it; raises
        RootNotFoundError when no sync registered it and no document belongs to it."""
        started = time.perf_counter()
        key = str(Path(path).expanduser().resolve())
        with self._lock:
            records = self._documents.documents_in_root(key)
            if not records and key not in {root.root for root in self._roots.roots()}:
                raise RootNotFoundError(f"{key} is not a synced root")
            report = SyncReport(roots=[key])
            self._remove(records, key, report)
            self._roots.forget_root(key)
        report.duration_seconds = time.perf_counter() - started
        return report

    # -- one root ------------------------------------------------------------------------------

    def _sync_root(self, root: Path, changed: set[str] | None, progress: ProgressCallback | None) -> SyncReport:
        key = str(root)
        report = SyncReport(roots=[key])
        plan = _Plan(present=self._files(root, changed, report))
        known = {record.source: record for record in self._documents.documents_in_root(key)}
        for record in self._documents.unrooted_documents_under(key):  # ingested without a root: adopted or removed
            if not self.ignores(record.source):
                known.setdefault(record.source, record)
        self._classify(key, plan, changed, report)
        plan.gone = [record for source, record in known.items()
                     if source not in plan.present and _looked_at(source, changed)]
        self._match_renames(plan)
        if plan.adopt:
            self._documents.set_root([record.document_id for record in plan.adopt], key)
            report.adopted.extend(record.source for record in plan.adopt)
        for old, source in self._move(plan.moves, key, report):  # those that could not be moved
            plan.load[source] = plan.present[source]
            plan.gone.append(old)
        if plan.load:
            self._ingest(plan, key, report, progress)
        self._remove(plan.gone, key, report)
        if changed is None:
            self._digests.prune(root, plan.present)
        return report

    def _files(self, root: Path, changed: set[str] | None, report: SyncReport) -> dict[str, Path]:
        """The files of ``root`` a sync takes (all of them, or those among ``changed``): resolved source -> path."""
        if changed is None:
            selection = self._selector.select([root])
            report.skipped_files.extend(selection.skipped)
            candidates = selection.files
        else:
            candidates = [Path(path) for path in sorted(changed) if under(path, str(root)) and Path(path).is_file()
                          and self._selector.skip_reason(root, Path(path)) is None]
        files: dict[str, Path] = {}
        for path in candidates:
            if self._temporary.match(path):
                if changed is None:
                    report.skipped_files.append(SkippedFile(source=str(path), reason=TEMPORARY))
            elif not self.ignores(path):
                files[os.path.realpath(path)] = path
        return files

    def _classify(self, key: str, plan: _Plan, changed: set[str] | None, report: SyncReport) -> None:
        """Sort the root's files into unchanged, adopted, new and changed, by content hash."""
        current = self._config.index_fingerprints()
        for source, path in list(plan.present.items()):
            existing = self._documents.get(default_document_id(source))
            if existing is not None and existing.owner is not None:
                report.warnings.append(f"{source}: user {existing.owner!r}'s document; sync leaves it alone")
                continue
            if existing is not None and existing.root not in (None, key) and under(source, existing.root):
                report.warnings.append(f"{source}: kept in step with the root {existing.root}, which also holds it")
                continue
            try:
                digest = self._digests.digest(Path(source), root=key, fresh=changed is not None)
            except FileNotFoundError:  # gone since the walk: its document goes too
                del plan.present[source]
                continue
            except OSError as error:
                report.failures.append(_failure(source, DocumentError(f"{source}: cannot read file: {error.strerror or error}")))
                continue
            except DocumentError as error:  # swapped for a FIFO or a link out of the root since the walk
                report.failures.append(_failure(source, error))
                continue
            if existing is None:
                if digest is None:
                    plan.load[source] = path
                else:
                    plan.new[source] = (path, digest)
            elif existing.checksum == digest and existing.fingerprint in current:
                if existing.root == key:
                    report.unchanged += 1
                else:
                    plan.adopt.append(existing)
            else:
                plan.load[source] = path

    def _match_renames(self, plan: _Plan) -> None:
        """Pair each new file with a gone document of the same content (and index settings): a move."""
        current = self._config.index_fingerprints()
        by_checksum: dict[str, list[DocumentRecord]] = {}
        for record in plan.gone:
            if record.fingerprint in current:
                by_checksum.setdefault(record.checksum, []).append(record)
        moved: set[str] = set()
        for source, (path, digest) in plan.new.items():
            candidates = by_checksum.get(digest)
            if candidates:
                old = candidates.pop(0)
                plan.moves.append((old, source))
                moved.add(old.document_id)
            else:
                plan.load[source] = path
        plan.gone = [record for record in plan.gone if record.document_id not in moved]

    # -- writes --------------------------------------------------------------------------------

    def _move(self, moves: list[tuple[DocumentRecord, str]], key: str,
              report: SyncReport) -> list[tuple[DocumentRecord, str]]:
        """Re-link each gone document to the file now at its new source; the moves that could not be made
        (the caller ingests those files instead)."""
        docs: list[tuple[DocumentRecord, LoadedDocument]] = []
        failed: list[tuple[DocumentRecord, str]] = []
        for old, source in moves:
            stored = self._documents.stored_document(old.document_id)
            if stored is None:
                failed.append((old, source))
            else:
                docs.append((old, _moved(stored, source, key)))
        for (old, doc), chunks in zip(docs, self._ingestor.relink(docs), strict=True):
            if chunks is None:
                failed.append((old, doc.source))
            else:
                report.renamed.append(RenamedFile(source=doc.source, previous_source=old.source, document_id=doc.document_id,
                                                  previous_document_id=old.document_id, chunks=chunks))
        return failed

    def _ingest(self, plan: _Plan, key: str, report: SyncReport, progress: ProgressCallback | None) -> None:
        outcomes: dict[str, str] = {}

        def track(outcome: str, source: str) -> None:
            outcomes[source] = outcome
            if progress:
                progress(outcome, source)

        existed = {source for source in plan.load if source not in plan.new}
        ingest = self._ingestor.ingest_paths(list(plan.load.values()), root=key, progress=track)
        for source in plan.load:
            if outcomes.get(source) == "processed":
                (report.changed if source in existed else report.added).append(source)
            elif outcomes.get(source) == "skipped":
                report.unchanged += 1
        report.failures.extend(ingest.failures)
        report.warnings.extend(ingest.warnings)
        report.reindexed.extend(ingest.reindexed)
        report.chunks_written += ingest.chunks_written
        report.embedding_count += ingest.embedding_count
        report.embedding_cache_hits += ingest.embedding_cache_hits

    def _remove(self, gone: list[DocumentRecord], key: str, report: SyncReport) -> None:
        """Remove the documents of ``key`` (or ingested without a root under it) whose files are gone, unless
        meanwhile they left the root, got an owner or a new version; in one switch."""
        current = [record for record in (self._documents.get(old.document_id) for old in gone)
                   if record is not None and record.owner is None
                   and (record.root == key or (record.root is None and under(record.source, key)))]
        report.removed.extend(record.source for record in self._ingestor.delete_many(current))


def _looked_at(source: str, changed: set[str] | None) -> bool:
    """Whether a sync limited to ``changed`` paths looks at ``source`` (it, or a folder above it, changed)."""
    if changed is None or source in changed:
        return True
    return any(str(parent) in changed for parent in PurePath(source).parents)


def _moved(stored: LoadedDocument, source: str, root: str) -> LoadedDocument:
    """The stored document as the file at ``source``: its id follows the source, and a title that was the old file
    name becomes the new one (what loading the file would give: the content is the same)."""
    title = PurePath(source).stem if stored.title == PurePath(stored.source).stem else stored.title
    return stored.model_copy(update={"document_id": default_document_id(source), "source": source, "title": title,
                                     "root": root, "owner": None})


def _failure(source: str, error: DocumentError | RootNotFoundError) -> FileFailure:
    return FileFailure(source=source, error_type=type(error).__name__, code=error.code, message=error.message)
