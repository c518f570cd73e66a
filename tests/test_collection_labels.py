"""An answer reads the names of its documents' collections once, not once per citation (docs/collections.md,
"Instructions and sources"): the SQL statements the real SQLite catalog runs while an answer streams are counted
(sqlite3's trace callback), for the CLI (every collection), a user (those they may read) and a scoped question."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ragstream.answer.models import CitationEvent, DoneEvent
from ragstream.models import Scope

WORD = "heliotropebasin"
LIST_COLLECTIONS = "FROM collections ORDER BY name"
"""What every read of the whole collection list (``CollectionRegistry.list``) says."""
MEMBERSHIPS = "FROM collection_documents WHERE document_id"
"""What a read of documents' memberships (``CollectionRegistry.memberships``) says."""


@contextmanager
def statements(rs) -> Iterator[list[str]]:
    """Every SQL statement the catalog's connection runs inside the block."""
    ran: list[str] = []
    rs.catalog.connection.db.set_trace_callback(ran.append)
    try:
        yield ran
    finally:
        rs.catalog.connection.db.set_trace_callback(None)


@pytest.mark.parametrize("who", [{}, {"user": "alice"}, {"user": "alice", "collections": ["handbook"]}],
                         ids=["cli", "user", "scoped"])
def test_a_streamed_answer_reads_collection_names_once(make_fast_index, tmp_path: Path, who):
    rs = make_fast_index()
    rs.create_collection("handbook", access="all")
    for number in range(4):
        page = tmp_path / f"page{number}.md"
        page.write_text(f"# The {WORD} rule {number}\n\nThe {WORD} rule {number} asks for {number + 2} signatures "
                        f"before a {WORD} launch.\n")
        rs.ingest([page], collection="handbook")
    with statements(rs) as ran:
        events = list(rs.stream_answer(f"What does the {WORD} rule ask for before a launch?", scope=Scope(**who)))
    citations = [e.citation for e in events if isinstance(e, CitationEvent) and e.citation.document_id]
    done = next(e for e in events if isinstance(e, DoneEvent))
    assert len(citations) >= 2 and done.response.sources
    assert all(c.collections == ["handbook"] for c in citations)
    assert all(s.collections == ["handbook"] for s in done.response.sources)
    cited = {c.document_id for c in citations} | {s.document_id for s in done.response.sources}
    lists = sum(LIST_COLLECTIONS in statement for statement in ran)
    memberships = sum(MEMBERSHIPS in statement for statement in ran)
    # one read of the collection list (a scoped question's scope carries its collections' names: none), and one of
    # each cited document's memberships (the citation events', the sources' and the feedback's labels share them)
    assert lists <= (0 if "collections" in who else 1), ran
    assert memberships <= len(cited), ran
