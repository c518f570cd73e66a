"""The CLI's client of a running ``ragstream serve`` on the same index (found by :mod:`ragstream.serve_link`).

It offers the few calls the CLI needs, with the same types as :class:`ragstream.Ragstream`, so a
command runs the same way whether the index is open in this process or in the server's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
from pydantic import TypeAdapter

from ragstream.answer.models import Answer, StreamEvent
from ragstream.config import RagstreamConfig
from ragstream.errors import RagstreamError
from ragstream.models import WHOLE_INDEX, DocumentRecord, Scope, SearchResult
from ragstream.serve_link import announcement

_EVENTS: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)
_DOCUMENTS: TypeAdapter[list[DocumentRecord]] = TypeAdapter(list[DocumentRecord])


class RemoteError(RagstreamError):
    """The server answered with an error body; ``code`` and ``error_type`` are the server's."""

    def __init__(self, code: str, error_type: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.error_type = error_type


class RemoteIndex:
    """The HTTP API of a running server, as the CLI uses it."""

    def __init__(self, url: str, config: RagstreamConfig) -> None:
        self.url = url
        server = config.server
        headers = {"Authorization": f"Bearer {server.api_key.get_secret_value()}"} if server.api_key else {}
        self._probe_seconds = server.client_probe_seconds
        self._client = httpx.Client(base_url=url, headers=headers,
                                    timeout=httpx.Timeout(server.client_timeout_seconds, connect=server.client_probe_seconds))

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> RemoteIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def healthy(self) -> bool:
        """True when the server answers ``/healthz`` within ``server.client_probe_seconds``."""
        try:
            return self._client.get("/healthz", timeout=self._probe_seconds).status_code == httpx.codes.OK
        except httpx.HTTPError:
            return False

    def documents(self, *, scope: Scope = WHOLE_INDEX) -> list[DocumentRecord]:
        """Every live document (in ``scope``'s collections if it names any; the server's key is its reader)."""
        params = {"collection": scope.names()} if scope.collections else None
        return _DOCUMENTS.validate_python(self._call("GET", "/api/documents", params=params))

    def with_collection_names(self, records: Sequence[DocumentRecord]) -> list[DocumentRecord]:
        """``records`` as they are: the server's records name their collections already."""
        return list(records)

    def search_with_collection_names(self, result: SearchResult) -> SearchResult:
        """``result`` as it is: the server's hits name their collections already."""
        return result

    def filter_fields(self) -> set[str]:
        """Metadata fields a search filter may name (as :meth:`ragstream.Ragstream.filter_fields`)."""
        from ragstream.models import filter_fields

        return filter_fields(self.documents())

    def search(self, query: str, *, mode: str | None = None, top_k: int | None = None,
               filters: dict[str, Any] | None = None, score_threshold: float | None = None,
               rerank: bool = False, scope: Scope = WHOLE_INDEX) -> SearchResult:
        """``POST /api/search``."""
        body = {"query": query, "mode": mode, "top_k": top_k, "filters": filters or None, "score_threshold": score_threshold,
                "rerank": rerank, "collections": scope.names()}
        return SearchResult.model_validate(self._call("POST", "/api/search", json=body))

    def delete(self, document_id: str) -> None:
        """``DELETE /api/documents/{id}``."""
        self._call("DELETE", f"/api/documents/{document_id}")

    def ask(self, question: str, conversation_id: str | None = None, selected_text: str | None = None, *,
            scope: Scope = WHOLE_INDEX) -> Answer:
        """``POST /api/query``: one cited answer."""
        body = {"query": question, "conversation_id": conversation_id, "selected_text": selected_text,
                "collections": scope.names()}
        return Answer.model_validate(self._call("POST", "/api/query", json=body))

    def stream_answer(self, question: str, conversation_id: str | None = None,
                      selected_text: str | None = None, *, scope: Scope = WHOLE_INDEX) -> Iterator[StreamEvent]:
        """``POST /api/chat``: the answer's events as they arrive."""
        body = {"message": question, "conversation_id": conversation_id, "selected_text": selected_text,
                "collections": scope.names()}
        with self._client.stream("POST", "/api/chat", json=body) as response:
            if response.status_code >= httpx.codes.BAD_REQUEST:
                response.read()
                raise _error(response)
            event_type: str | None = None
            for line in response.iter_lines():
                if line.startswith("event:"):
                    event_type = line.partition(":")[2].strip()
                elif line.startswith("data:") and event_type:
                    yield _event(event_type, json.loads(line.partition(":")[2]))
                    event_type = None

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._client.request(method, path, **kwargs)
        if response.status_code >= httpx.codes.BAD_REQUEST:
            raise _error(response)
        return response.json()


def find_server(config: RagstreamConfig) -> RemoteIndex | None:
    """The running server announced in ``config.data_dir`` when it answers; None otherwise."""
    found = announcement(config.data_dir)
    if found is None:
        return None
    remote = RemoteIndex(found.url, config)
    if remote.healthy():
        return remote
    remote.close()
    return None


def _event(event_type: str, data: dict[str, Any]) -> StreamEvent:
    if event_type == "error":
        raise RemoteError(str(data.get("code")), str(data.get("type")), str(data.get("message")))
    if event_type == "citation":  # its wire payload is the citation itself
        return _EVENTS.validate_python({"type": event_type, "citation": data})
    if event_type == "support":  # its wire payload is the sentence's verdict
        return _EVENTS.validate_python({"type": event_type, "sentence": data})
    return _EVENTS.validate_python({**data, "type": event_type})


def _error(response: httpx.Response) -> RemoteError:
    try:
        error = response.json()["error"]
        return RemoteError(str(error["code"]), str(error["type"]), str(error["message"]))
    except (ValueError, KeyError, TypeError):
        return RemoteError(f"http_{response.status_code}", "HTTPError", response.text)

