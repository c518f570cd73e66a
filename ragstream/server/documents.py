"""Documents: upload (multipart ``files``), list, get, chunks, delete, reindex."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from starlette.datastructures import UploadFile

from ragstream.errors import InvalidQueryError
from ragstream.models import Chunk, DocumentRecord, IngestReport
from ragstream.observability import current_request_id
from ragstream.server.errors import NoFilesError, error_body
from ragstream.server.intake import UPLOAD_PATH_KEY, ingest_upload
from ragstream.server.schemas import (
    DeleteResponse,
    DocumentDetail,
    DocumentPageResponse,
    ErrorResponse,
    UploadedFile,
    UploadResponse,
)
from ragstream.server.state import ServerState, get_state
from ragstream.server.uploads import check_content_length, display_name, limited_receive, safe_user_id

router = APIRouter(prefix="/api/documents", tags=["documents"])

FILES_FIELD = "files"
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
# When every file failed, the request fails with the status of a shared cause.
STATUS_BY_FILE_ERROR = {"file_too_large": HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                        "unsupported_file_type": HTTPStatus.UNSUPPORTED_MEDIA_TYPE}
ERRORS: dict[int | str, dict[str, Any]] = {status: {"model": ErrorResponse} for status in (404, 413, 415, 422)}


@router.post("", status_code=HTTPStatus.CREATED, response_model=UploadResponse, responses=ERRORS,
             openapi_extra=MULTIPART_BODY, summary="Upload and ingest files")
async def upload(request: Request, state: ServerState = Depends(get_state)) -> JSONResponse:
    """Store each file under ``uploads/{user_id}/{date}/{uuid}``, sniff, parse and ingest it.

    One result per file (``ingested``, ``duplicate``, ``unchanged`` or ``failed`` with its error);
    201 when at least one file landed, 200 when all were already there, and a 4xx error body
    (with the per-file results) when every file failed.
    """
    limits = state.rs.config.limits
    check_content_length(request.headers.get("content-length"), limits.max_request_bytes)
    bounded = Request(request.scope, limited_receive(request.receive, limits.max_request_bytes))
    cfg = state.config
    async with bounded.form(max_files=cfg.max_files_per_request) as form:
        files = [item for item in form.getlist(FILES_FIELD) if isinstance(item, UploadFile)]
        if not files:
            raise NoFilesError(f"send one or more files in the multipart field {FILES_FIELD!r}")
        user_id = safe_user_id(request.headers.get(cfg.user_id_header), cfg.default_user_id, cfg.max_user_id_chars)
        results = [await run_in_threadpool(ingest_upload, state, item.file,
                                           display_name(item.filename, cfg.max_filename_chars), user_id)
                   for item in files]
    return _upload_response(results)


@router.get("", response_model=list[DocumentRecord], summary="List documents")
def list_documents(state: ServerState = Depends(get_state)) -> list[DocumentRecord]:
    """Every live document."""
    return state.rs.documents()


SQL_INTEGER_MAX = 2**63 - 1
"""The largest offset a catalog query can take (a 64-bit signed integer)."""
SortKey = Literal["title", "source", "mime", "chunks", "ingested", "updated"]
"""The sort keys of the catalog's :data:`SORT_COLUMNS` (a test checks they agree)."""


@router.get("/page", response_model=DocumentPageResponse, responses=ERRORS, summary="One page of documents")
def page_documents(offset: int = Query(0, ge=0, le=SQL_INTEGER_MAX), limit: int | None = Query(None, ge=1),
                   q: str = Query("", description="Part of the title or source, case-insensitive"),
                   sort: SortKey = "source", order: Literal["asc", "desc"] = "asc",
                   state: ServerState = Depends(get_state)) -> DocumentPageResponse:
    """Documents whose title or source contains ``q``, sorted (``ingested``: first ingest; ``updated``:
    the live version's ingest), ``limit`` (default ``server.documents_page_size``) from ``offset``,
    with the ``total`` that matched."""
    cfg = state.config
    size = cfg.documents_page_size if limit is None else limit
    if size > cfg.max_documents_page_size:
        raise InvalidQueryError(f"limit must be at most {cfg.max_documents_page_size}")
    if len(q) > cfg.max_document_filter_chars:
        raise InvalidQueryError(f"q must be at most {cfg.max_document_filter_chars} characters")
    found = state.rs.document_page(offset, size, q.strip(), sort, order == "desc")
    return DocumentPageResponse(items=found.records, total=found.total, offset=offset, limit=size, q=q.strip(),
                                sort=sort, order=order)


@router.post("/reindex", response_model=IngestReport, summary="Reindex every document")
def reindex(state: ServerState = Depends(get_state)) -> IngestReport:
    """Re-chunk and re-embed every document under the current settings."""
    with state.write_lock:
        return state.rs.reindex()


@router.get("/{document_id}", response_model=DocumentDetail, responses=ERRORS, summary="Get a document")
def get_document(document_id: str, include_chunks: bool = False,
                 state: ServerState = Depends(get_state)) -> DocumentDetail:
    """One document's record, with the chunks of that same version when ``include_chunks`` is true."""
    if include_chunks:
        record, chunks = state.rs.document_with_chunks(document_id)
        return DocumentDetail(document=record, chunks=chunks)
    return DocumentDetail(document=state.rs.document(document_id), chunks=None)


@router.get("/{document_id}/chunks", response_model=list[Chunk], responses=ERRORS, summary="A document's chunks")
def get_chunks(document_id: str, state: ServerState = Depends(get_state)) -> list[Chunk]:
    """The live chunks of one document, in order."""
    return state.rs.document_chunks(document_id)


@router.delete("/{document_id}", response_model=DeleteResponse, responses=ERRORS, summary="Delete a document")
def delete_document(document_id: str, state: ServerState = Depends(get_state)) -> DeleteResponse:
    """Delete the document, its chunks and its stored upload file."""
    with state.write_lock:
        stored = state.rs.document(document_id).metadata.get(UPLOAD_PATH_KEY)
        state.rs.delete(document_id)
    removed = isinstance(stored, str) and state.uploads.remove(stored)
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
    errors = [r.error for r in body.files if r.error]
    shared = len({e.code for e in errors}) == 1
    code, error_type = (errors[0].code, errors[0].type) if shared else ("upload_failed", "UploadFailed")
    status = STATUS_BY_FILE_ERROR.get(code, HTTPStatus.UNPROCESSABLE_ENTITY)
    message = "; ".join(error.message for error in errors)
    files = [r.model_dump(mode="json") for r in body.files]
    return JSONResponse(error_body(code, error_type, message, files=files), status_code=status)
