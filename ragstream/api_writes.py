"""The facade's writes (ragstream/writes/): :class:`Ragstream` takes the upload service from :class:`WritesFacade`;
``ingest``, ``ingest_bytes``, ``sync``, ``forget_root`` and ``watcher`` (api.py) go through the same
:class:`WriteService`. Every write names its :class:`Writer` (the local admin by default: the CLI, a script);
the service checks that writer's right to write where they write.

The names the shells need of the write path are re-exported here, by what they are."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ragstream.config import RagstreamConfig, ServerConfig
from ragstream.models import LOCAL_ADMIN as LOCAL_ADMIN
from ragstream.models import DocumentRecord
from ragstream.models import Writer as Writer
from ragstream.writes.jobs import FileWork as FileWork
from ragstream.writes.jobs import JobRunner as JobRunner
from ragstream.writes.jobs import combined_error as combined_error
from ragstream.writes.service import WriteService
from ragstream.writes.service import WriteTarget as WriteTarget
from ragstream.writes.upload_service import UploadService as UploadService
from ragstream.writes.upload_store import UploadStore as UploadStore
from ragstream.writes.upload_store import too_large as too_large
from ragstream.writes.upload_store import user_folder as user_folder
from ragstream.writes.uploads import DocumentLocks as DocumentLocks
from ragstream.writes.uploads import public_record as public_record
from ragstream.writes.uploads import stored_upload as stored_upload

if TYPE_CHECKING:
    from ragstream.store.catalog_base import Catalog


def single_process_reason(config: RagstreamConfig) -> str | None:
    """Why the configured index cannot be served (or written) by several processes at once (None: it can)."""
    from ragstream.store.factory import single_process_reason as reason  # the backends load only when asked

    return reason(config)


class WritesFacade:
    """Uploads, as a server takes them, over the one write path."""

    config: RagstreamConfig
    catalog: Catalog
    writes: WriteService
    document: Callable[..., DocumentRecord]
    duplicates: Callable[..., list[DocumentRecord]]
    documents: Callable[..., list[DocumentRecord]]

    def upload_service(self, server: ServerConfig | None = None) -> UploadService:
        """Uploads over this index as ``server`` (default: this config's) takes them: their store, document
        locks, intake and background jobs (started with ``start_jobs``)."""
        server = server or self.config.server
        return UploadService(self.config, server, self.writes, self.catalog.jobs,
                             shared=single_process_reason(self.config) is None, find_document=self.document,
                             duplicates=lambda checksum, user: self.duplicates(checksum, user=user),
                             live_documents=self.documents)

    def files_to_ingest(self, paths: Iterable[str | Path]) -> list[Path]:
        """The files an ingest of ``paths`` reads (by ``ingest.include``/``exclude`` and the ignore files)."""
        from ragstream.documents.selection import select_files  # the parsers load only when asked

        return select_files(paths, self.config.ingest).files

    def upload_owner(self, writer: Writer, *, shared: bool) -> str | None:
        """The owner of ``writer``'s upload (None: ``shared``, an admin's alone: PermissionDeniedError)."""
        return self.writes.upload_owner(writer, shared=shared)

    def upload_target(self, writer: Writer, owner: str | None, collection: str | None) -> WriteTarget:
        """Where ``writer``'s upload of ``owner``'s lands: into ``collection`` (a name ``writer`` may edit;
        CollectionNotFoundError for one they may not read, PermissionDeniedError for one they only read)."""
        return self.writes.upload_target(writer, owner, collection)
