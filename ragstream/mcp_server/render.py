"""The readable text each MCP tool returns beside its structured result (for clients and models that read text)."""

from __future__ import annotations

from ragstream.api_types import marked_answer, support_lines
from ragstream.mcp_server.schemas import (
    AskResult,
    ChunkText,
    DeleteResult,
    DocumentInfo,
    DocumentList,
    IngestResult,
    RateAnswerResult,
    ReadResult,
    SearchResult,
)


def search_text(result: SearchResult) -> str:
    """Numbered passages with their source, section path, page, score and ids."""
    if not result.passages:
        return f"No passages match {result.query!r}."
    notes = [note for note in (result.fallback_reason, "reranked" if result.reranked else result.rerank_reason) if note]
    lines = [f"{len(result.passages)} passages for {result.query!r} ({result.mode} search"
             + "".join(f"; {note}" for note in notes) + "):"]
    for passage in result.passages:
        where = " > ".join(part for part in (passage.title, passage.section_path) if part)
        page = f", page {passage.page}" if passage.page is not None else ""
        lines.append(f"\n[{passage.rank}] {where} ({passage.source}{page}; score {passage.score:.3f}; "
                     f"document_id {passage.document_id}, chunk_id {passage.chunk_id})\n{passage.text}")
    return "\n".join(lines)


def ask_text(result: AskResult) -> str:
    """The answer with its [n] citations (an unsupported sentence marked), then the sources, the unsupported
    sentences and why, the confidence and the conversation id."""
    lines = [marked_answer(result)]
    cited = sorted({(c.number, c.title or "", c.section or "", c.source or c.url or "", c.page)
                    for c in result.citations if c.matched and c.number is not None}, key=lambda item: item[0] or 0)
    if cited:
        lines.append("\nSources:")
        for number, title, section, source, page in cited:
            where = " > ".join(part for part in (title, section) if part)
            lines.append(f"[{number}] {where} ({source}" + (f", page {page}" if page is not None else "") + ")")
    unsupported = support_lines(result)
    if unsupported:
        lines.append("")
        lines += unsupported
    lines.append(f"\nConfidence: {result.confidence.level} ({result.confidence.reason})")
    if result.degraded_reason:
        lines.append(f"Note: {result.degraded_reason}")
    lines.append(f"conversation_id: {result.conversation_id}")
    lines.append(f"message_id: {result.message_id} (rate this answer with rate_answer)")
    return "\n".join(lines)


def rate_text(result: RateAnswerResult) -> str:
    """The rating as kept."""
    comment = f" with the comment {result.comment!r}" if result.comment else ""
    return f"Rated answer {result.message_id} {result.rating.replace('_', ' ')}{comment}."


def document_line(doc: DocumentInfo) -> str:
    """One document: title, source, chunks, id and whether it is shared."""
    return (f"- {doc.title} ({doc.source}; {doc.chunks} chunks; {'shared' if doc.shared else 'yours'}; "
            f"document_id {doc.document_id})")


def list_text(result: DocumentList) -> str:
    """The page of documents, and how to get the next one."""
    if not result.documents:
        return f"No documents (of {result.total})." if result.total else "No documents."
    first = result.offset + 1
    lines = [f"Documents {first}-{result.offset + len(result.documents)} of {result.total}:"]
    lines += [document_line(doc) for doc in result.documents]
    if result.next_offset is not None:
        lines.append(f"More: call list_documents with offset {result.next_offset}.")
    return "\n".join(lines)


def read_text(result: ReadResult) -> str:
    """The chunks read, each under its section path, and where to go on."""
    doc = result.document
    lines = [f"{doc.title} ({doc.source}; document_id {doc.document_id}; {result.total_chunks} chunks)"]
    for chunk in result.chunks:
        lines.append(_chunk(chunk, chunk.chunk_id == result.focus_chunk_id))
    if result.next_offset is not None:
        lines.append(f"\nMore: call read with offset {result.next_offset}.")
    return "\n".join(lines)


def _chunk(chunk: ChunkText, focus: bool) -> str:
    page = f", page {chunk.page}" if chunk.page is not None else ""
    mark = " (the chunk asked for)" if focus else ""
    return f"\n## chunk {chunk.index}: {chunk.section_path or '(no heading)'}{page}{mark}\n{chunk.text}"


def ingest_text(result: IngestResult) -> str:
    """Counts, document ids and failures."""
    lines = [f"Ingested {result.ingested} document(s) ({result.chunks_written} chunks), {result.unchanged} unchanged, "
             f"{result.failed} failed."]
    lines += [f"- document_id {document_id}" for document_id in result.document_ids]
    lines += [f"- failed {failure.source}: {failure.code}: {failure.message}" for failure in result.failures]
    return "\n".join(lines)


def delete_text(result: DeleteResult) -> str:
    """Which document was deleted."""
    return f"Deleted {result.title} ({result.source}; document_id {result.deleted})."
