"""LLM token deltas -> stream events: ``token`` and ``citation``, and the closing ``done`` event.

A citation event follows the token that completes its marker, once per cited chunk. Partial
markers are held back until decided; markers inside code are plain text; markers naming no prompt
chunk are only recorded on the tracker (reported as unmatched at the end), never emitted.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ragstream.answer.citations import CitationTracker
from ragstream.answer.markers import MarkerScanner, Piece
from ragstream.answer.models import Answer, Citation, CitationEvent, CitationPayload, DoneEvent, StreamEvent, TokenEvent
from ragstream.answer.turn import TIME_TO_FIRST_TOKEN


def citation_payload(citation: Citation) -> CitationPayload:
    """The citation event's payload (``chapter`` is the document title) with its number and score."""
    return CitationPayload(chunk_id=citation.chunk_id, document_id=citation.document_id, number=citation.number,
                           marker=citation.marker, title=citation.title, chapter=citation.title,
                           section=citation.section, url=citation.url, source=citation.source,
                           page=citation.page, score=citation.score)


def stream_events(deltas: Iterable[str], tracker: CitationTracker, max_marker_chars: int) -> Iterator[StreamEvent]:
    """Token and citation events for ``deltas``, in order."""
    scanner = MarkerScanner(max_marker_chars)
    for delta in deltas:
        yield from _events(scanner.feed(delta), tracker)
    yield from _events(scanner.finish(), tracker)


def _events(pieces: list[Piece], tracker: CitationTracker) -> Iterator[StreamEvent]:
    text: list[str] = []
    for piece in pieces:
        text.append(piece.text)
        if piece.kind != "marker":
            continue
        new = tracker.add(piece.content)
        if new:
            yield TokenEvent(token="".join(text))
            text.clear()
            for citation in new:
                yield CitationEvent(citation=citation_payload(citation))
    if text:
        yield TokenEvent(token="".join(text))


def done_event(answer: Answer) -> DoneEvent:
    """The ``done`` event: ids, token counts, latency, mode and the whole response."""
    meta = answer.metadata
    tokens = meta["tokens"]
    counts = [tokens.get("prompt_tokens"), tokens.get("completion_tokens")]
    return DoneEvent(conversation_id=meta["conversation_id"], message_id=meta["message_id"],
                     prompt_tokens=tokens.get("prompt_tokens"), completion_tokens=tokens.get("completion_tokens"),
                     total_tokens=sum(count for count in counts if count) or None,
                     latency_ms=meta["latencies_ms"]["total"],
                     first_token_ms=meta["latencies_ms"].get(TIME_TO_FIRST_TOKEN), unmatched_citations=meta["unmatched_citations"],
                     mode=meta["mode"], degraded_reason=meta["degraded_reason"], incomplete=meta["incomplete"],
                     response=answer)
