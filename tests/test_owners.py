"""Document owners through the facade (``user=`` / ``owner=``) on the real embedded store (issue 9, item 4).

The server's isolation tests (tests/server/test_server_users.py) go over HTTP; these pin the facade the
server, CLI and UI share: searches filter by owner in the store, the retrieval cache is per user,
owners survive reindexing and re-ingesting, and indexes written before owners existed open with
every document shared.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import qdrant_edge as qe
from support.edge_shard import local_shard

from ragstream.errors import DocumentNotFoundError, PermissionDeniedError
from ragstream.models import OWNER_FIELD, Scope

SECRET = "zanzibarquokka"
QUESTION = f"What does the {SECRET} protocol require?"


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {
        "alice": _write(tmp_path / "alice", "protocol.md",
                        f"# Protocol\n\nThe {SECRET} protocol requires two signatures before every launch.\n"),
        "bob": _write(tmp_path / "bob", "garden.md", "# Garden\n\nTomatoes need compost and sun.\n"),
        "shared": _write(tmp_path / "shared", "handbook.md",
                         f"# Handbook\n\nThe handbook mentions the {SECRET} protocol only by name.\n"),
    }


def _docs(rs, user=None) -> set[str]:
    return {Path(record.source).name for record in rs.documents(scope=Scope(user=user))}


def _found(rs, user, mode="bm25") -> set[str]:
    return {Path(hit.chunk.metadata.source).name for hit in rs.search(SECRET, mode=mode, top_k=10, scope=Scope(user=user)).hits}


def test_owners_filter_listing_search_and_answers(make_fast_index, files):
    rs = make_fast_index()
    rs.ingest([files["alice"]], owner="alice")
    rs.ingest([files["bob"]], owner="bob")
    rs.ingest([files["shared"]])
    assert _docs(rs) == {"protocol.md", "garden.md", "handbook.md"}
    assert _docs(rs, "alice") == {"protocol.md", "handbook.md"}
    assert _docs(rs, "bob") == {"garden.md", "handbook.md"}
    assert _found(rs, "alice") == _found(rs, None) == {"protocol.md", "handbook.md"}
    for mode in ("bm25", "dense", "hybrid"):
        assert "protocol.md" not in _found(rs, "bob", mode)
    assert _found(rs, "bob") == {"handbook.md"}
    named = rs.search(SECRET, mode="bm25", filters={OWNER_FIELD: "alice"}, scope=Scope(user="bob"))  # no filtering one's way in
    assert {Path(hit.chunk.metadata.source).name for hit in named.hits} == {"handbook.md"}

    secret = next(r.document_id for r in rs.documents() if r.owner == "alice")
    assert rs.document(secret, user="alice").owner == "alice"
    with pytest.raises(DocumentNotFoundError):
        rs.document(secret, user="bob")
    with pytest.raises(DocumentNotFoundError):
        rs.document_chunks(secret, user="bob")
    assert [r.document_id for r in rs.duplicates(rs.document(secret).checksum, user="bob")] == []
    assert [r.document_id for r in rs.duplicates(rs.document(secret).checksum, user="alice")] == [secret]

    own = rs.ask(QUESTION, scope=Scope(user="alice"))
    assert secret in {chunk.document_id for chunk in own.relatedDocs}
    answer = rs.ask(QUESTION, scope=Scope(user="bob"))
    assert secret not in {doc.document_id for doc in answer.relatedDocs}
    assert secret not in {source.document_id for source in answer.sources}
    events = list(rs.stream_answer(QUESTION, scope=Scope(user="bob")))
    assert secret not in {doc.document_id for doc in events[-1].response.relatedDocs}


def test_retrieval_cache_is_per_user(make_fast_index, files):
    rs = make_fast_index()
    rs.ingest([files["alice"]], owner="alice")
    secret = rs.documents()[0].document_id
    first = rs.retrieve(QUESTION, "k", min_relevance=0.0, scope=Scope(user="alice"))
    assert secret in {chunk.document_id for chunk in first.document_chunks}
    second = rs.retrieve(QUESTION, "k", min_relevance=0.0, scope=Scope(user="bob"))  # same arguments, other user: not cached
    assert second.document_chunks == []


def test_delete_needs_an_owned_or_allowed_document(make_fast_index, files):
    rs = make_fast_index()
    rs.ingest([files["alice"]], owner="alice")
    rs.ingest([files["shared"]])
    by_name = {Path(r.source).name: r.document_id for r in rs.documents()}
    with pytest.raises(DocumentNotFoundError):
        rs.delete(by_name["protocol.md"], user="bob")
    with pytest.raises(PermissionDeniedError):
        rs.delete(by_name["handbook.md"], user="bob", allow_shared=False)
    assert rs.delete(by_name["protocol.md"], user="alice").owner == "alice"
    assert _docs(rs) == {"handbook.md"}


def test_conversations_are_kept_per_user(make_fast_index, files):
    rs = make_fast_index()
    rs.ingest([files["shared"]])
    rs.ask(QUESTION, "c1", scope=Scope(user="alice"))
    assert len(rs.conversation("c1", user="alice")) == 1
    assert rs.conversation("c1", user="bob") == [] and rs.conversation("c1") == []
    rs.ask("And the handbook?", "c1", scope=Scope(user="bob"))
    assert [turn["user"] for turn in rs.conversation("c1", user="bob")] == ["And the handbook?"]
    assert len(rs.conversation("c1", user="alice")) == 1


def test_owner_survives_reindex_and_a_new_owner_rewrites(make_fast_index, files):
    rs = make_fast_index()
    rs.ingest([files["alice"]], owner="alice")
    assert rs.reindex().documents_processed == 1
    assert rs.documents()[0].owner == "alice" and _found(rs, "bob") == set()
    report = rs.ingest([files["alice"]])  # the same unchanged file, now shared: rewritten, not skipped
    assert report.documents_processed == 1 and report.documents_skipped == 0
    assert rs.documents()[0].owner is None and _found(rs, "bob") == {"protocol.md"}


def test_index_from_before_owners_opens_with_every_document_shared(make_fast_index, files, tmp_path):
    rs = make_fast_index()
    rs.ingest([files["alice"]])
    data_dir = Path(rs.config.data_dir)
    # Make it an index of the previous version: no owner column, no owner payload, no owner index.
    everything = qe.Filter(must=[qe.FieldCondition(key="chunk_index", range=qe.RangeFloat(gte=0))])
    local_shard(rs.store).update(qe.UpdateOperation.delete_payload_by_filter(everything, [OWNER_FIELD]))
    local_shard(rs.store).update(qe.UpdateOperation.delete_field_index(OWNER_FIELD))
    rs.close()
    with sqlite3.connect(data_dir / "catalog.sqlite3") as db:
        db.execute("DROP INDEX documents_owner")
        db.execute("ALTER TABLE documents DROP COLUMN owner")
        db.execute("DROP INDEX conversation_turns_by_owner")
        db.execute("ALTER TABLE conversation_turns DROP COLUMN owner")
    reopened = make_fast_index(data_dir=str(data_dir))
    assert reopened.documents(scope=Scope(user="bob"))[0].owner is None
    assert _found(reopened, "bob") == {"protocol.md"}
