"""What a sync did: the files it added, changed, renamed and removed, and what it could not do."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from ragstream.models import FileFailure, IngestReport, SkippedFile


class RenamedFile(BaseModel):
    """A file that moved: its document follows it (new source and id) without re-embedding."""

    source: str = Field(description="Where the file is now.")
    previous_source: str = Field(description="Where it was.")
    document_id: str = Field(description="The document's id now (ids follow the source).")
    previous_document_id: str
    chunks: int = Field(description="Chunks moved with their stored vectors (none embedded again).")


class SyncReport(BaseModel):
    """The outcome of ``ragstream sync`` (or of one batch of ``ragstream watch``)."""

    roots: list[str] = Field(default_factory=list, description="The roots synced (absolute paths).")
    added: list[str] = Field(default_factory=list, description="Files ingested as new documents.")
    changed: list[str] = Field(default_factory=list, description="Files whose document was replaced by a new version.")
    renamed: list[RenamedFile] = Field(default_factory=list, description="Files moved within the roots (content unchanged).")
    removed: list[str] = Field(
        default_factory=list, description="Sources whose documents were removed with their chunks: the file is gone, "
        "or is now excluded (ingest.exclude, an ignore file, ingest.include).")
    unchanged: int = Field(0, description="Files whose document already matched.")
    adopted: list[str] = Field(
        default_factory=list, description="Unchanged files whose document was ingested before without a root (or "
        "under a root that no longer holds the file) and now belongs to this one.")
    failures: list[FileFailure] = Field(default_factory=list, description="Files (or roots) that could not be synced.")
    skipped_files: list[SkippedFile] = Field(
        default_factory=list, description="Files and folders a full sync did not take, and why.")
    warnings: list[str] = Field(default_factory=list)
    reindexed: list[str] = Field(
        default_factory=list, description="Documents indexed under other chunking or embedding settings, re-chunked "
        "and re-embedded from their stored text (ingest.reindex_stale).")
    chunks_written: int = Field(0, description="Chunks written by ingests (renames move theirs without embedding).")
    embedding_count: int = Field(0, description="Texts sent to the embedder (cache misses).")
    embedding_cache_hits: int = 0
    duration_seconds: float = 0.0

    @property
    def changes(self) -> int:
        """How many documents the sync added, replaced, moved or removed."""
        return len(self.added) + len(self.changed) + len(self.renamed) + len(self.removed)

    def summary(self) -> str:
        """One line: ``synced 1 root: 2 added, 1 changed, 1 renamed, 3 removed, 40 unchanged, 0 failed; ...``."""
        roots = f"{len(self.roots)} root{'' if len(self.roots) == 1 else 's'}"
        adopted = f", {len(self.adopted)} adopted" if self.adopted else ""
        return (f"synced {roots}: {len(self.added)} added, {len(self.changed)} changed, {len(self.renamed)} renamed, "
                f"{len(self.removed)} removed, {self.unchanged} unchanged{adopted}, {len(self.failures)} failed; "
                f"{self.chunks_written} chunks written, {self.embedding_count} embedded, {self.duration_seconds:.1f} s")

    def counts(self, failures_kept: int) -> dict[str, int | list[dict[str, str]]]:
        """The counts a root's registry row keeps of its last sync (what the Documents page shows), with its
        first ``failures_kept`` failures."""
        return {"added": len(self.added), "changed": len(self.changed), "renamed": len(self.renamed),
                "removed": len(self.removed), "unchanged": self.unchanged, "adopted": len(self.adopted),
                "failed": len(self.failures),
                "failures": [{"source": f.source, "code": f.code, "message": f.message} for f in self.failures[:failures_kept]]}

    @classmethod
    def of_reindex(cls, report: IngestReport) -> SyncReport:
        """The re-embedding of stale documents as a part of a sync's report."""
        return cls(reindexed=report.reindexed, failures=report.failures, warnings=report.warnings,
                   chunks_written=report.chunks_written, embedding_count=report.embedding_count,
                   embedding_cache_hits=report.embedding_cache_hits)

    def merge(self, others: Iterable[SyncReport]) -> SyncReport:
        """This report with ``others`` added to it (one report for several roots)."""
        merged = self.model_copy(deep=True)
        for other in others:
            for name in ("roots", "added", "changed", "renamed", "removed", "adopted", "failures", "skipped_files", "warnings",
                         "reindexed"):
                getattr(merged, name).extend(getattr(other, name))
            merged.unchanged += other.unchanged
            merged.chunks_written += other.chunks_written
            merged.embedding_count += other.embedding_count
            merged.embedding_cache_hits += other.embedding_cache_hits
        return merged
