"""Request ids for logs and provider calls: the ``request_id`` of an HTTP request follows it into every LLM and
embedding call made for it.

The HTTP server sets the id of the request being served; anything running on its behalf (log
records, LLM and embedding calls, worker threads started with a copied context) reads it here.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

REQUEST_ID_HEADER = "X-Request-ID"
"""The header that carries the request id to providers."""
NO_REQUEST_ID = "-"
"""What log records show outside of a request."""
LOG_FORMAT = "%(asctime)s %(levelname)s [%(request_id)s] %(name)s: %(message)s"

_request_id: ContextVar[str | None] = ContextVar("ragstream_request_id", default=None)


def current_request_id() -> str | None:
    """The id of the request being served, or None outside of one."""
    return _request_id.get()


@contextmanager
def request_id_scope(request_id: str) -> Iterator[None]:
    """Make ``request_id`` the current one for the duration of the block."""
    token = _request_id.set(request_id)
    try:
        yield
    finally:
        _request_id.reset(token)


ORIGINAL_REQUEST_ID_HEADER = "X-Ragstream-Request-ID"


def request_id_headers() -> dict[str, str]:
    """Headers a provider call should send: the request id when there is one.

    Some providers (llama-cpp-python's server) refuse an ``X-Request-ID`` that is not a UUID, so a
    client-chosen id in another shape travels as ``X-Ragstream-Request-ID`` and the provider gets
    a UUID derived from it (the same id always maps to the same UUID).
    """
    request_id = current_request_id()
    if not request_id:
        return {}
    try:
        uuid.UUID(request_id)
    except ValueError:
        derived = str(uuid.uuid5(uuid.NAMESPACE_URL, f"ragstream-request:{request_id}"))
        return {REQUEST_ID_HEADER: derived, ORIGINAL_REQUEST_ID_HEADER: request_id}
    return {REQUEST_ID_HEADER: request_id}


class RequestIdFilter(logging.Filter):
    """Adds ``record.request_id`` (the current request id, or ``-``) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id() or NO_REQUEST_ID
        return True


def configure_logging(level: str) -> None:
    """Log to stderr with the request id in every line."""
    handler = logging.StreamHandler()
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
