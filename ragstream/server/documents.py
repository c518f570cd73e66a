"""Documents: upload (multipart ``files``), list, get, chunks, delete, reindex."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any, BinaryIO, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import UploadFile

from ragstream.api_runtime import current_request_id, metrics
from ragstream.api_writes import Writer, WriteTarget, combined_error, public_record, stored_upload, too_large
from ragstream.errors import InvalidQueryError, InvalidUnicodeError, PermissionDeniedError
from ragstream.models import Chunk, DocumentRecord, IngestReport
from ragstream.server.errors import NoFilesError, error_body
from ragstream.server.originals import DOWNLOAD_MIME, PDF_MIME, original_response, read_original
from ragstream.server.schemas import (
    DeleteResponse,
    DocumentDetail,
    DocumentPageResponse,
    ErrorDetail,
    ErrorResponse,
    JobStatus,
    UploadedFile,
    UploadResponse,
)
from ragstream.server.state import ServerState, get_state
from ragstream.server.uploads import check_content_length, display_name, limited_receive
from ragstream.server.users import Caller, get_caller

logger = logging.getLogger("ragstream.server")
router = APIRouter(prefix="/api/documents", tags=["documents"])

FILES_FIELD = "files"
COLLECTION_FIELD = "collection"
MULTIPART_BODY = {
    "requestBody": {
        "required": True,
        "content": {"multipart/form-data": {"schema": {
            "type": "object",
            "properties": {FILES_FIELD: {"type": "array", "items": {"type": "string", "format": "binary"}}},
            "required": [FILES_FIELD],
        }}},
    }
}
# When every file failed, the request fails with the status of a shared cause (422 for any other; a mixed batch is
# 201 or 200 with each file's outcome). Only a bug of ours behind every file is a 500.
STATUS_BY_FILE_ERROR = {"file_too_large": HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                        "document_too_large": HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                        "unsupported_file_type": HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                        "ocr_unavailable": HTTPStatus.SERVICE_UNAVAILABLE,
                        "invalid_unicode": HTTPStatus.BAD_REQUEST,
                        "insufficient_storage": HTTPStatus.INSUFFICIENT_STORAGE,
                        "internal_error": HTTPStatus.INTERNAL_SERVER_ERROR}
ERRORS: dict[int | str, dict[str, Any]] = {status: {"model": ErrorResponse}
                                           for status in (400, 403, 404, 413, 415, 422, 503, 507)}
ACCEPTED_DOC: dict[int | str, dict[str, Any]] = {
    HTTPStatus.ACCEPTED: {"model": JobStatus, "description": "More work than a request holds (server.background_*): "
                          "a background job ingests the stored files; poll GET /api/jobs/{id} (also in Location)."}}


@router.post("", status_code=HTTPStatus.CREATED, response_model=UploadResponse,
             responses={**ERRORS, **ACCEPTED_DOC}, openapi_extra=MULTIPART_BODY, summary="Upload and ingest files")
async def upload(request: Request, shared: bool = False, collection: str | None = None,
                 state: ServerState = Depends(get_state), caller: Caller = Depends(get_caller)) -> JSONResponse:
    """Store each file under ``uploads/{user folder}/{date}/{uuid}``, sniff, parse and ingest it as
    a document of the caller's (``shared=true``, admins only: shared with every user).

    One result per file (``ingested``, ``duplicate``, ``unchanged`` or ``failed`` with its error), whatever a
    file's reading or ingest raises: 201 when at least one file landed (a mixed batch too), 200 when none
    landed and not all failed, and the shared cause's error body (4xx; 500 only for a bug of ours behind every
    file) with the per-file results when every file failed; 507 ``insufficient_storage`` before anything is
    read when the disk lacks room for the body plus ``limits.min_free_disk_bytes``. A failed file's stored copy
    is deleted. When reading the files would hold the request long (``server.background_ingest_bytes`` of
    them, zips unpacking to ``server.background_unpacked_bytes``, ``server.background_ocr_pages`` pages to
    OCR), a background job ingests them: 202 with the job
    (``GET /api/jobs/{id}`` shows its progress), unless every file was refused before any work (e.g. each over
    ``limits.max_file_bytes``): then the error body at once, and no job.
    With ``collection`` (a query parameter or form field naming one the caller may edit; 404 for one it may not
    read, 403 for one it only reads) the files join that collection, readable by whoever reads it.
    """
    writer = Writer(user=caller.user, admin=caller.admin)
    owner = state.rs.upload_owner(writer, shared=shared)  # 403 for a user's shared upload, before the body is read
    limits = state.rs.config.limits
    declared = request.headers.get("content-length")
    check_content_length(declared, limits.max_request_bytes)
    state.intake.check_room(int(declared) if declared and declared.isdigit() else 0)
    await run_in_threadpool(state.rs.ensure_writable)  # a read-only index (it was full) opens now there is room
    bounded = Request(request.scope, limited_receive(request.receive, limits.max_request_bytes))
    cfg = state.config
    results: list[UploadedFile] = []
    try:
        async with bounded.form(max_files=cfg.max_files_per_request) as form:
            files = [item for item in form.getlist(FILES_FIELD) if isinstance(item, UploadFile)]
            if not files:
                raise NoFilesError(f"send one or more files in the multipart field {FILES_FIELD!r}")
            named = collection or form.get(COLLECTION_FIELD) or None
            target = await run_in_threadpool(state.rs.upload_target, writer, owner,
                                             named if isinstance(named, str) else None)
            received = sum(item.size or 0 for item in files)
            for item in files:
                results.append(await run_in_threadpool(_stored, state, item, target))
        if await run_in_threadpool(state.intake.background_reason, results, received):
            job = await run_in_threadpool(lambda: state.jobs.submit_upload(results, caller.user,
                                                                           shared=target.owner is None,
                                                                           collection=target.collection_id))
            results = []  # the job owns the stored files now
            return JSONResponse(job.model_dump(mode="json"), status_code=HTTPStatus.ACCEPTED,
                                headers={"Location": f"/api/jobs/{job.id}"})
        for index, result in enumerate(results):
            if result.status == "pending":
                results[index] = await run_in_threadpool(state.intake.intake.ingest_stored, result, target)
        return _upload_response(results)
    finally:  # a request that stops half-way (an error of ours, a cancellation) leaves no stored file behind
        for result in results:
            if result.status == "pending" and result.stored_as:
                state.uploads.remove(result.stored_as)


def _stored(state: ServerState, item: UploadFile, target: WriteTarget) -> UploadedFile:
    """A form file stored for ``target``: a file name that is not valid Unicode, or a file declared over
    ``limits.max_file_bytes``, fails that file alone, before it is copied."""
    try:
        name = display_name(item.filename, state.config.max_filename_chars)
    except InvalidUnicodeError as error:
        metrics.record_failed_file()
        return UploadedFile(filename="(invalid name)", status="failed", error=ErrorDetail(**error.to_dict()))
    limit = state.rs.config.limits.max_file_bytes
    if item.size is not None and item.size > limit:  # refused before it is copied
        metrics.record_failed_file()
        return UploadedFile(filename=name, status="failed", error=ErrorDetail(**too_large(name, limit).to_dict()))
    source: BinaryIO = item.file
    return state.intake.intake.store(source, name, target)


@router.get("", response_model=list[DocumentRecord], summary="List documents")
def list_documents(collection: list[str] | None = Query(None, description="Only these collections (names; repeatable)."),
                   state: ServerState = Depends(get_state), caller: Caller = Depends(get_caller)) -> list[DocumentRecord]:
    """Every live document of the caller's, and every shared one (``owner`` null), in the collections the caller
    may read (or in ``collection``)."""
    return _shown(state, caller, state.rs.documents(scope=caller.scope(collection)))


SQL_INTEGER_MAX = 2**63 - 1
"""The largest offset a catalog query can take (a 64-bit signed integer)."""
SortKey = Literal["title", "source", "mime", "chunks", "ingested", "updated"]
"""The sort keys of the catalog's :data:`SORT_COLUMNS` (a test checks they agree)."""


@router.get("/page", response_model=DocumentPageResponse, responses=ERRORS, summary="One page of documents")
def page_documents(offset: int = Query(0, ge=0, le=SQL_INTEGER_MAX), limit: int | None = Query(None, ge=1),
                   q: str = Query("", description="Part of the title or source, case-insensitive"),
                   sort: SortKey = "source", order: Literal["asc", "desc"] = "asc",
                   collection: list[str] | None = Query(None, description="Only these collections (names; repeatable)."),
                   state: ServerState = Depends(get_state),
                   caller: Caller = Depends(get_caller)) -> DocumentPageResponse:
    """The caller's and the shared documents whose title or source contains ``q``, sorted (``ingested``:
    first ingest; ``updated``: the live version's ingest), ``limit`` (default ``server.documents_page_size``)
    from ``offset``, with the ``total`` that matched."""
    cfg = state.config
    size = cfg.documents_page_size if limit is None else limit
    if size > cfg.max_documents_page_size:
        raise InvalidQueryError(f"limit must be at most {cfg.max_documents_page_size}")
    if len(q) > cfg.max_document_filter_chars:
        raise InvalidQueryError(f"q must be at most {cfg.max_document_filter_chars} characters")
    found = state.rs.document_page(offset, size, q.strip(), sort, order == "desc", scope=caller.scope(collection))
    return DocumentPageResponse(items=_shown(state, caller, found.records), total=found.total,
                                offset=offset, limit=size, q=q.strip(), sort=sort, order=order)


@router.post("/reindex", response_model=IngestReport, responses={403: {"model": ErrorResponse}},
             summary="Reindex every document")
def reindex(state: ServerState = Depends(get_state), caller: Caller = Depends(get_caller)) -> IngestReport:
    """Re-chunk and re-embed every document (every user's) under the current settings; admins only. In
    bounded batches: reads, uploads and deletes go on meanwhile; a document changed meanwhile keeps its
    newer version."""
    if not caller.admin:
        raise PermissionDeniedError("only an admin key may reindex")
    return state.rs.reindex()


@router.get("/{document_id}", response_model=DocumentDetail, responses=ERRORS, summary="Get a document")
def get_document(document_id: str, include_chunks: bool = False, state: ServerState = Depends(get_state),
                 caller: Caller = Depends(get_caller)) -> DocumentDetail:
    """One document's record, with the chunks of that same version when ``include_chunks`` is true
    (404 for another user's document, as for one that does not exist)."""
    if include_chunks:
        record, chunks = state.rs.document_with_chunks(document_id, user=caller.user, admin=caller.admin)
        return DocumentDetail(document=_shown(state, caller, [record])[0],
                              chunks=state.rs.chunks_with_collection_names(chunks, user=caller.user, admin=caller.admin))
    record = state.rs.document(document_id, user=caller.user, admin=caller.admin)
    return DocumentDetail(document=_shown(state, caller, [record])[0], chunks=None)


def _shown(state: ServerState, caller: Caller, records: Sequence[DocumentRecord]) -> list[DocumentRecord]:
    """``records`` as ``caller`` sees them: no private metadata; the names of the collections the caller may read."""
    return [public_record(record) for record in state.rs.with_collection_names(records, user=caller.user,
                                                                               admin=caller.admin)]


@router.get("/{document_id}/chunks", response_model=list[Chunk], responses=ERRORS, summary="A document's chunks")
def get_chunks(document_id: str, state: ServerState = Depends(get_state),
               caller: Caller = Depends(get_caller)) -> list[Chunk]:
    """The live chunks of one document, in order."""
    return state.rs.chunks_with_collection_names(state.rs.document_chunks(document_id, user=caller.user, admin=caller.admin),
                                                 user=caller.user, admin=caller.admin)


FILE_RESPONSES: dict[int | str, dict[str, Any]] = {
    HTTPStatus.OK: {"description": "The original bytes: a PDF inline (application/pdf), any other type as an attachment "
                    "(application/octet-stream).", "content": {PDF_MIME: {}, DOWNLOAD_MIME: {}}},
    HTTPStatus.NOT_FOUND: {"model": ErrorResponse, "description": "document_not_found (missing, or one the caller may "
                           "not read) or original_unavailable (the file moved, changed or never existed)"}}


@router.get("/{document_id}/file", response_class=Response, responses=FILE_RESPONSES, summary="A document's original file")
def get_original(document_id: str, state: ServerState = Depends(get_state),
                 caller: Caller = Depends(get_caller)) -> Response:
    """The document's original file as ingested (its stored upload, or the source file of a CLI ingest while its
    checksum is unchanged), for the viewer; 404 ``document_not_found`` for one the caller may not read, exactly as
    for a missing one, and 404 ``original_unavailable`` when the file is gone or changed."""
    return original_response(read_original(state, state.rs.document(document_id, user=caller.user)))


@router.delete("/{document_id}", response_model=DeleteResponse, responses=ERRORS, summary="Delete a document")
def delete_document(document_id: str, state: ServerState = Depends(get_state),
                    caller: Caller = Depends(get_caller)) -> DeleteResponse:
    """Delete one of the caller's documents (a shared one: admins only, else 403), its chunks and its
    stored upload file; another user's document is 404."""
    with state.documents.hold(document_id):
        may = state.rs.may_change_document(document_id, user=caller.user, admin=caller.admin)
        record = state.rs.delete(document_id, user=caller.user, allow_shared=caller.admin or may, admin=caller.admin)
    stored = stored_upload(record)
    removed = stored is not None and state.uploads.remove(stored)
    return DeleteResponse(deleted=document_id, upload_removed=removed)


def _upload_response(results: list[UploadedFile]) -> JSONResponse:
    counts = {status: sum(r.status == status for r in results) for status in ("ingested", "duplicate", "failed")}
    body = UploadResponse(files=results, ingested=counts["ingested"], duplicates=counts["duplicate"],
                          failed=counts["failed"], request_id=current_request_id())
    if counts["failed"] < len(results):
        status = HTTPStatus.CREATED if counts["ingested"] else HTTPStatus.OK
        return JSONResponse(body.model_dump(mode="json"), status_code=status)
    return _all_failed(body)


def _all_failed(body: UploadResponse) -> JSONResponse:
    error = combined_error([r.error for r in body.files if r.error])
    status = STATUS_BY_FILE_ERROR.get(error.code, HTTPStatus.UNPROCESSABLE_ENTITY)
    files = [r.model_dump(mode="json") for r in body.files]
    return JSONResponse(error_body(error.code, error.type, error.message, files=files), status_code=status)
