"""Every error leaves the server as ``{"error": {"code", "type", "message"}, "request_id"}``.

Client mistakes get a 4xx with a stable code; only our own bugs are 500 ``internal_error``.
"""

from __future__ import annotations

import math
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragstream import errors as rse
from ragstream.api_runtime import current_request_id
from ragstream.errors import InternalError as InternalError  # raised below the facade (ragstream/writes/)


class RequestTooLargeError(rse.RagstreamError):
    """The request body is larger than ``limits.max_request_bytes``."""

    code = "request_too_large"


class NoFilesError(rse.RagstreamError):
    """An upload request carried no file in the ``files`` field."""

    code = "no_files"


class PipelineNotFoundError(rse.RagstreamError):
    """No SuperPrompt with that id is held (never created, or dropped as the oldest)."""

    code = "pipeline_not_found"


class ModelNotFoundError(rse.RagstreamError):
    """``GET /v1/models/{model}`` named a model this server does not answer as."""

    code = "model_not_found"


class JobNotFoundError(rse.RagstreamError):
    """No background job with that id."""

    code = "job_not_found"


class AuthenticationError(rse.RagstreamError):
    """The API key is missing or wrong."""

    code = "unauthorized"


class FirstMessageTimeoutError(rse.RagstreamError):
    """A ``/ws/chat`` client sent no first message within ``server.ws_first_message_seconds``."""

    code = "first_message_timeout"


class InvalidUserIdError(rse.RagstreamError):
    """A user id (the ``X-User-ID`` header, a configured key's user) that is blank, too long or has control characters."""

    code = "invalid_user_id"


# First match along the error's class hierarchy wins; order subclasses before their bases.
STATUS_BY_ERROR: tuple[tuple[type[rse.RagstreamError], HTTPStatus], ...] = (
    (AuthenticationError, HTTPStatus.UNAUTHORIZED),
    (rse.PermissionDeniedError, HTTPStatus.FORBIDDEN),
    (InvalidUserIdError, HTTPStatus.UNPROCESSABLE_ENTITY),
    (rse.ConversationNotFoundError, HTTPStatus.NOT_FOUND),
    (rse.CollectionNotFoundError, HTTPStatus.NOT_FOUND),
    (rse.CollectionExistsError, HTTPStatus.CONFLICT),
    (rse.CollectionAmbiguousError, HTTPStatus.CONFLICT),
    (rse.CollectionNotEmptyError, HTTPStatus.CONFLICT),
    (rse.InvalidCollectionError, HTTPStatus.UNPROCESSABLE_ENTITY),
    (rse.MessageNotFoundError, HTTPStatus.NOT_FOUND),
    (RequestTooLargeError, HTTPStatus.REQUEST_ENTITY_TOO_LARGE),
    (FirstMessageTimeoutError, HTTPStatus.REQUEST_TIMEOUT),
    (NoFilesError, HTTPStatus.UNPROCESSABLE_ENTITY),
    (PipelineNotFoundError, HTTPStatus.NOT_FOUND),
    (ModelNotFoundError, HTTPStatus.NOT_FOUND),
    (rse.DocumentNotFoundError, HTTPStatus.NOT_FOUND),
    (JobNotFoundError, HTTPStatus.NOT_FOUND),
    (rse.RootNotFoundError, HTTPStatus.NOT_FOUND),
    (rse.FileTooLargeError, HTTPStatus.REQUEST_ENTITY_TOO_LARGE),
    (rse.DocumentTooLargeError, HTTPStatus.REQUEST_ENTITY_TOO_LARGE),
    (rse.InsufficientStorageError, HTTPStatus.INSUFFICIENT_STORAGE),
    (rse.InvalidUnicodeError, HTTPStatus.BAD_REQUEST),
    (rse.JSONTooDeepError, HTTPStatus.BAD_REQUEST),
    (rse.JSONNumberTooLargeError, HTTPStatus.BAD_REQUEST),
    (rse.UnsupportedFileTypeError, HTTPStatus.UNSUPPORTED_MEDIA_TYPE),
    (rse.DocumentError, HTTPStatus.UNPROCESSABLE_ENTITY),
    (rse.InvalidQueryError, HTTPStatus.UNPROCESSABLE_ENTITY),
    (rse.InvariantViolationError, HTTPStatus.INTERNAL_SERVER_ERROR),
    (rse.StageOrderError, HTTPStatus.CONFLICT),
    (rse.PipelineError, HTTPStatus.UNPROCESSABLE_ENTITY),
    (rse.EmbedderUnavailableError, HTTPStatus.SERVICE_UNAVAILABLE),
    (rse.EmbeddingFailureError, HTTPStatus.SERVICE_UNAVAILABLE),
    (rse.VectorDBUnavailableError, HTTPStatus.SERVICE_UNAVAILABLE),
    (rse.LLMRateLimitError, HTTPStatus.TOO_MANY_REQUESTS),
    (rse.TooManyRequestsError, HTTPStatus.TOO_MANY_REQUESTS),
    (rse.LLMRequestError, HTTPStatus.BAD_GATEWAY),
    (rse.LLMError, HTTPStatus.BAD_GATEWAY),
    (rse.ConfigError, HTTPStatus.SERVICE_UNAVAILABLE),
)

CODE_BY_STATUS: dict[int, str] = {
    HTTPStatus.BAD_REQUEST: "bad_request",
    HTTPStatus.UNAUTHORIZED: "unauthorized",
    HTTPStatus.FORBIDDEN: "forbidden",
    HTTPStatus.NOT_FOUND: "not_found",
    HTTPStatus.METHOD_NOT_ALLOWED: "method_not_allowed",
    HTTPStatus.NOT_ACCEPTABLE: "not_acceptable",
    HTTPStatus.REQUEST_ENTITY_TOO_LARGE: "request_too_large",
    HTTPStatus.UNSUPPORTED_MEDIA_TYPE: "unsupported_media_type",
    HTTPStatus.UNPROCESSABLE_ENTITY: "validation_error",
}


def status_for(error: rse.RagstreamError) -> HTTPStatus:
    """The HTTP status of a ragstream error (500 for one not listed)."""
    for error_type, status in STATUS_BY_ERROR:
        if isinstance(error, error_type):
            return status
    return HTTPStatus.INTERNAL_SERVER_ERROR


def error_body(code: str, error_type: str, message: str, **extra: Any) -> dict[str, Any]:
    """The JSON error body, with the current request id."""
    return {"error": {"code": code, "type": error_type, "message": message}, "request_id": current_request_id(), **extra}


def error_response(error: rse.RagstreamError, **extra: Any) -> JSONResponse:
    """A ragstream error as its JSON response (with ``Retry-After`` when the error says when to come back)."""
    wait = getattr(error, "retry_after_seconds", None)
    headers = {"Retry-After": str(max(1, math.ceil(wait)))} if isinstance(wait, (int, float)) else None
    return JSONResponse(error_body(**_renamed(error.to_dict()), **extra), status_code=status_for(error),
                        headers=headers)


def internal_error_response() -> JSONResponse:
    """The 500 answer to a bug: no internals leak, the request id ties it to the log."""
    return JSONResponse(error_body("internal_error", "InternalError", "internal server error; see the server log"),
                        status_code=HTTPStatus.INTERNAL_SERVER_ERROR)


def install_error_handlers(app: FastAPI) -> None:
    """Route ragstream errors, HTTP errors and validation errors to JSON error bodies."""

    @app.exception_handler(rse.RagstreamError)
    async def ragstream_error(_: Request, error: rse.RagstreamError) -> JSONResponse:
        return error_response(error)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, error: StarletteHTTPException) -> JSONResponse:
        code = CODE_BY_STATUS.get(error.status_code, f"http_{error.status_code}")
        return JSONResponse(error_body(code, "HTTPException", str(error.detail)), status_code=error.status_code,
                            headers=error.headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, error: RequestValidationError) -> JSONResponse:
        details = [{"loc": [str(part) for part in item.get("loc", ())], "msg": str(item.get("msg", "")),
                    "type": str(item.get("type", ""))} for item in error.errors()]
        message = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details) or "invalid request"
        return JSONResponse(error_body("validation_error", "RequestValidationError", message, details=details),
                            status_code=HTTPStatus.UNPROCESSABLE_ENTITY)


def _renamed(error: dict[str, str]) -> dict[str, str]:
    return {"code": error["code"], "error_type": error["type"], "message": error["message"]}
