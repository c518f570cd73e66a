"""Collections through the facade (docs/collections.md): ingest and sync into a collection, questions scoped to
one or more, moves that re-embed nothing, instructions that reach the answering model's prompt, answers that say
where each source came from, deletion rules, access for users, and an index from before collections."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from support.edge_shard import local_shard
from support.folder_corpus import write_text
from support.hash_embedder import CountingEmbedder, PausingEmbedder
from support.index_fixtures import FAST_DEFAULTS

from ragstream import Ragstream, load_config
from ragstream.errors import (
    CollectionAmbiguousError,
    CollectionExistsError,
    CollectionNotEmptyError,
    CollectionNotFoundError,
    DocumentNotFoundError,
    InvalidCollectionError,
    PermissionDeniedError,
)
from ragstream.models import DEFAULT_COLLECTION_ID, Scope

HANDBOOK = {
    "notice.md": "# Notice period\n\nThe notice period for employees is three months, given in writing to HR.\n",
    "leave.md": "# Annual leave\n\nEmployees take twenty-five days of annual leave; the notice period for leave is two weeks.\n",
}
MINUTES = {
    "board.md": "# Board minutes\n\nThe board discussed the notice period of the office lease: six months.\n",
    "standup.md": "# Standup minutes\n\nThe team reviewed the release; nobody mentioned a notice period.\n",
}
QUESTION = "what is the notice period?"


def _folder(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        write_text(root / name, text)
    return root


def _open(tmp_path: Path, embedder: CountingEmbedder, **overrides: object) -> Ragstream:
    return Ragstream(load_config(data_dir=tmp_path / "index", **{**FAST_DEFAULTS, **overrides}), embedder=embedder)


def _names(paths: list[str]) -> set[str]:
    return {Path(path).name for path in paths}


@pytest.fixture
def two(tmp_path: Path) -> tuple[Ragstream, CountingEmbedder]:
    """An index with a ``handbook`` (ingested) and a ``minutes`` (synced) collection."""
    embedder = CountingEmbedder()
    rs = _open(tmp_path, embedder)
    rs.create_collection("handbook", description="HR handbook", instructions="Quote the handbook's section.")
    rs.create_collection("minutes", access="all")
    rs.ingest([_folder(tmp_path / "handbook", HANDBOOK)], collection="handbook")
    rs.sync([_folder(tmp_path / "minutes", MINUTES)], collection="minutes")
    yield rs, embedder
    rs.close()


def test_a_question_scoped_to_a_collection_reads_only_its_documents(two):
    rs, _ = two
    scoped = {name: _names([hit.chunk.metadata.source for hit in rs.search(QUESTION, top_k=10, scope=Scope(collections=[name])).hits])
              for name in ("handbook", "minutes")}
    assert scoped == {"handbook": set(HANDBOOK), "minutes": set(MINUTES)}
    everything = _names([hit.chunk.metadata.source for hit in rs.search(QUESTION, top_k=10).hits])
    assert everything == set(HANDBOOK) | set(MINUTES)
    for mode in ("dense", "bm25"):
        hits = rs.search(QUESTION, mode=mode, top_k=10, scope=Scope(collections=["minutes"])).hits
        assert _names([hit.chunk.metadata.source for hit in hits]) <= set(MINUTES)
    answer = rs.ask(QUESTION, scope=Scope(collections=["handbook"]))
    assert answer.sources and all(source.collections == ["handbook"] for source in answer.sources)
    assert _names([citation.source or "" for citation in answer.citations if citation.matched]) <= set(HANDBOOK)
    context = rs.retrieve(QUESTION, min_relevance=0.0, scope=Scope(collections=["minutes"]))
    assert _names([chunk.metadata["source"] for chunk in context.document_chunks]) <= set(MINUTES)
    assert {r.title for r in rs.documents(scope=Scope(collections=["minutes"]))} == {"Board minutes", "Standup minutes"}
    with pytest.raises(CollectionNotFoundError):
        rs.search(QUESTION, scope=Scope(collections=["nope"]))


def test_the_stream_labels_its_citations_and_the_instructions_reach_the_prompt(two):
    rs, _ = two
    events = list(rs.stream_answer(QUESTION, scope=Scope(collections=["handbook", "minutes"])))
    done = events[-1]
    assert done.type == "done" and done.response.sources
    assert all(source.collections in (["handbook"], ["minutes"]) for source in done.response.sources)
    citations = [event for event in events if event.type == "citation"]
    assert all(event.citation.collections for event in citations)
    sp = rs.run_pipeline(QUESTION, scope=Scope(collections=["handbook"]))
    assert sp.collection_instructions == ["handbook: Quote the handbook's section."]
    assert "Quote the handbook's section." in sp.messages[0].content  # the system message the model reads
    assert "Quote the handbook" not in rs.run_pipeline(QUESTION, scope=Scope(collections=["minutes"])).messages[0].content


def test_moving_a_document_between_collections_embeds_nothing(two):
    rs, embedder = two
    [notice] = [r for r in rs.documents() if r.source.endswith("notice.md")]
    before = embedder.passages
    assert rs.add_to_collection("minutes", [notice.document_id]) == [notice.document_id]
    assert rs.remove_from_collection("handbook", [notice.document_id]) == [notice.document_id]
    assert embedder.passages == before  # 0 embedder calls: only the payloads changed
    hits = rs.search("notice period three months in writing", top_k=10, scope=Scope(collections=["minutes"])).hits
    assert "notice.md" in _names([hit.chunk.metadata.source for hit in hits])
    hits = rs.search("notice period three months in writing", top_k=10, scope=Scope(collections=["handbook"])).hits
    assert "notice.md" not in _names([hit.chunk.metadata.source for hit in hits])
    assert rs.document(notice.document_id).collections == [rs.collection("minutes").collection_id]
    with pytest.raises(InvalidCollectionError, match="no collection"):
        rs.remove_from_collection("minutes", [notice.document_id])  # its last one
    changed = rs.ingest([Path(notice.source)], collection="handbook")  # unchanged: joins without embedding
    assert changed.documents_skipped == 1 and embedder.passages == before
    assert len(rs.search("three months in writing", top_k=10, scope=Scope(collections=["handbook"])).hits) >= 1


def test_a_synced_root_remembers_its_collection(two, tmp_path: Path):
    rs, _ = two
    write_text(tmp_path / "minutes" / "retro.md", "# Retro minutes\n\nThe notice period for vendors is thirty days.\n")
    rs.sync([tmp_path / "minutes"])  # no --collection this time: the root remembers it
    assert "retro.md" in _names([r.source for r in rs.documents(scope=Scope(collections=["minutes"]))])
    assert "retro.md" not in _names([r.source for r in rs.documents(scope=Scope(collections=[DEFAULT_COLLECTION_ID]))])


def test_deleting_a_collection_refuses_while_it_holds_documents(two):
    rs, _ = two
    [board] = [r for r in rs.documents() if r.source.endswith("board.md")]
    rs.add_to_collection("handbook", [board.document_id])
    with pytest.raises(CollectionNotEmptyError):
        rs.delete_collection("minutes")
    deleted = rs.delete_collection("minutes", delete_documents=True)
    assert _names([r.source for r in deleted]) == {"standup.md"}  # board.md is in the handbook too: it stays
    assert rs.document(board.document_id).collections == [rs.collection("handbook").collection_id]
    assert [c.name for c in rs.collections()] == ["default", "handbook"]
    with pytest.raises(InvalidCollectionError):
        rs.delete_collection("default")


def test_a_collection_deleted_while_an_ingest_into_it_runs(tmp_path: Path):
    """The ingest (a real thread, one document per batch) is held between its first and second batch while the
    collection is deleted: refused while it holds the first document, then deleted with it. The ingest's remaining
    documents fail with collection_not_found and leave nothing behind: no document, no chunk, no membership."""
    embedder = PausingEmbedder(pause_at=2)
    rs = _open(tmp_path, embedder, ingest={"write_batch_chunks": 1})
    try:
        rs.create_collection("inbox")
        folder = _folder(tmp_path / "inbox", {**HANDBOOK, **MINUTES})
        reports = []
        ingest = threading.Thread(target=lambda: reports.append(rs.ingest([folder], collection="inbox")))
        ingest.start()
        assert embedder.paused.wait(60), "the ingest never reached its second batch"
        [first] = rs.documents()
        with pytest.raises(CollectionNotEmptyError):
            rs.delete_collection("inbox")
        assert [r.document_id for r in rs.delete_collection("inbox", delete_documents=True)] == [first.document_id]
        embedder.release()
        ingest.join(60)
        [report] = reports
        assert report.documents_processed == 1 and len(report.failures) == 3
        assert {failure.code for failure in report.failures} == {"collection_not_found"}
        assert rs.documents() == [] and [c.name for c in rs.collections()] == ["default"]
        assert rs.store.count() == 0  # no chunk left in the store, neither the deleted one's nor the failed ones'
        rs.create_collection("inbox")  # the name is free again, and empty
        assert rs.collection("inbox").documents == 0
    finally:
        embedder.release()
        rs.close()


def test_access_private_shared_read_and_shared_edit(two):
    rs, _ = two
    rs.edit_collection("handbook", access="readers", readers=["bob"], editors=["cy"])
    names = {user: [c.name for c in rs.collections(user=user)] for user in ("bob", "cy", "dan")}
    assert names == {"bob": ["default", "handbook", "minutes"], "cy": ["default", "handbook", "minutes"],
                     "dan": ["default", "minutes"]}
    for question in (QUESTION, "twenty-five days of annual leave"):
        hits = rs.search(question, top_k=10, scope=Scope(user="dan")).hits
        assert not _names([hit.chunk.metadata.source for hit in hits]) & set(HANDBOOK)
    with pytest.raises(CollectionNotFoundError):  # the same error as for a collection that does not exist
        rs.search(QUESTION, scope=Scope(user="dan", collections=["handbook"]))
    [notice] = [r for r in rs.documents() if r.source.endswith("notice.md")]
    with pytest.raises(DocumentNotFoundError):
        rs.document(notice.document_id, user="dan")
    assert rs.duplicates(notice.checksum, user="dan") == []
    assert rs.document(notice.document_id, user="bob").document_id == notice.document_id
    with pytest.raises(PermissionDeniedError):  # a reader cannot add or remove documents
        rs.add_to_collection("handbook", [notice.document_id], user="bob")
    rs.create_collection("everyone", access="all", editors=["bob"])
    with pytest.raises(PermissionDeniedError):  # nor copy one of the handbook's into a collection every user reads
        rs.add_to_collection("everyone", [notice.document_id], user="bob")
    [board] = [r for r in rs.documents() if r.source.endswith("board.md")]
    assert rs.add_to_collection("handbook", [board.document_id], user="cy") == [board.document_id]  # an editor may
    with pytest.raises(PermissionDeniedError):  # but only the owner or an admin changes its access
        rs.edit_collection("handbook", access="all", user="cy")
    assert rs.edit_collection("handbook", access="all", user="root", admin=True).access == "all"
    assert "handbook" in [c.name for c in rs.collections(user="dan")]


def test_bad_collection_input_is_a_clear_error(two):
    rs, _ = two
    for bad in ("", "has space", "-dash", "x" * 65):
        with pytest.raises(InvalidCollectionError):
            rs.create_collection(bad)
    with pytest.raises(InvalidCollectionError, match="access"):
        rs.create_collection("fine", access="public")
    with pytest.raises(InvalidCollectionError):
        rs.create_collection("fine", readers=[" bob"])
    with pytest.raises(CollectionNotFoundError):
        rs.ingest([Path("missing")], collection="nope")


def test_names_are_per_owner_and_a_bare_name_picks_the_callers_own_then_the_unowned(two):
    """Alice's private ``specs`` does not keep Bob from making his; a bare name resolves to the caller's own, else
    the unowned one, else the only readable one; several readable ones are ambiguous (409), listing only those."""
    rs, _ = two
    [notice] = [r.document_id for r in rs.documents() if r.source.endswith("notice.md")]
    [board] = [r.document_id for r in rs.documents() if r.source.endswith("board.md")]
    unowned = rs.create_collection("specs", access="readers", readers=["cy"])  # the CLI's, read by Cy only
    alice = rs.create_collection("specs", user="alice")  # she cannot read the CLI's: the name is free for her
    bob = rs.create_collection("specs", user="bob")  # not Alice's business either: hers is private
    assert (unowned.qualified_name, alice.qualified_name, bob.qualified_name) == ("specs", "alice:specs", "bob:specs")
    rs.add_to_collection("alice:specs", [notice])  # the CLI names each exactly
    rs.add_to_collection("bob:specs", [board])
    assert rs.collection("specs").collection_id == unowned.collection_id  # the CLI's own (no owner)
    assert {h.chunk.metadata.document_id for h in rs.search(QUESTION, top_k=10,
                                                            scope=Scope("alice", ["specs"])).hits} == {notice}
    assert {h.chunk.metadata.document_id for h in rs.search(QUESTION, top_k=10,
                                                            scope=Scope("bob", ["SPECS"])).hits} == {board}
    with pytest.raises(CollectionNotFoundError):  # Dan reads none of them
        rs.collection("specs", user="dan")
    with pytest.raises(CollectionNotFoundError):  # a qualified name is exact, and 404 when not readable
        rs.collection("alice:specs", user="bob")
    assert rs.collection("bob:specs", user="bob").collection_id == bob.collection_id
    assert rs.collection("specs", user="bob").collection_id == bob.collection_id  # his own before the unowned one
    rs.edit_collection("alice:specs", access="readers", readers=["dan", "cy"], user="alice")
    rs.edit_collection("bob:specs", access="readers", readers=["dan", "cy"], user="bob")
    assert rs.collection("specs", user="cy").collection_id == unowned.collection_id  # the unowned one first
    with pytest.raises(CollectionAmbiguousError, match="alice:specs, bob:specs; name one"):  # not the unowned one
        rs.search(QUESTION, scope=Scope(user="dan", collections=["specs"]))
    assert rs.collection(":specs", user="cy").collection_id == unowned.collection_id
    assert {"alice:specs", "bob:specs"} <= set(rs.collection_references(user="dan"))
    assert "specs" in rs.collection_references(user="cy") and "specs" in rs.collection_references(user="bob")
    assert "bob:specs" not in rs.collection_references(user="bob")
    rs.edit_collection("specs", readers=["cy", "bob"])  # Bob reads the unowned one too: his own shadows it
    assert {c.qualified_name for c in rs.collections(user="bob") if c.name == "specs"} == {"bob:specs", ":specs"}
    assert rs.collection(":specs", user="bob").collection_id == unowned.collection_id


def test_look_alike_names_are_refused(two):
    rs, _ = two
    rs.create_collection("alice-priv", user="alice")
    rs.create_collection("team", access="readers", readers=["alice"], user="bob")
    for taken in ("DEFAULT", "Alice-Priv", "TEAM"):  # the default, her own, one she reads
        with pytest.raises(CollectionExistsError):
            rs.create_collection(taken, user="alice")
    for bad in ("alice-priv.", "alice-priv ", "alice-priv-", "a:b", "alice_", "\uff41lice-priv"):  # fullwidth: not ASCII
        with pytest.raises(InvalidCollectionError):
            rs.create_collection(bad, user="alice")
    with pytest.raises(CollectionExistsError):
        rs.edit_collection("handbook", new_name="Minutes")
    with pytest.raises(InvalidCollectionError):
        rs.edit_collection("handbook", new_name="handbook.")
    assert rs.edit_collection("alice-priv", new_name="Alice-Priv", user="alice").name == "Alice-Priv"  # its own key
    assert rs.create_collection("alice-priv", user="dan").owner == "dan"  # Dan reads none of these


def test_sharing_with_everyone_needs_an_admin_or_the_switch(two, tmp_path: Path):
    rs, embedder = two
    with pytest.raises(PermissionDeniedError, match="admin"):
        rs.create_collection("bobs", access="all", user="bob")
    shared = rs.create_collection("bobs", access="readers", readers=["alice"], user="bob")  # named readers: open
    with pytest.raises(PermissionDeniedError, match="admin"):
        rs.edit_collection("bobs", access="all", user="bob")
    assert rs.edit_collection("bobs", description="still named readers", access="readers", user="bob").access == "readers"
    assert rs.edit_collection("bob:bobs", access="all", user="root", admin=True).access == "all"
    assert rs.edit_collection("bobs", description="kept", access="all", user="bob").access == "all"  # unchanged
    assert rs.create_collection("everyone-2", access="all").access == "all"  # the CLI may
    assert shared.owner == "bob"
    config = load_config(data_dir=tmp_path / "switch", **{**FAST_DEFAULTS, "collections": {"users_may_share_with_all": True}})
    with Ragstream(config, embedder=embedder) as opened:
        assert opened.create_collection("bobs-all", access="all", user="bob").access == "all"


def _downgrade_to_before_collections(rs: Ragstream) -> None:
    """Turn an open embedded index into one as an ingest before collections wrote it: no collection tables in
    the catalog, no ``collections`` payload or index in the shard (what the upgrade then has to rebuild)."""
    import qdrant_edge as qe

    record = rs.catalog.documents.list()[0]
    with rs.catalog.connection.transaction() as db:  # type: ignore[attr-defined]
        for table in ("collections", "collection_documents", "collection_payloads", "root_collections"):
            db.execute(f"DROP TABLE {table}")
    shard = local_shard(rs.store)
    shard.update(qe.UpdateOperation.delete_payload_by_filter(qe.Filter(must_not=[qe.IsEmptyCondition("document_id")]),
                                                             ["collections"]))
    shard.update(qe.UpdateOperation.delete_field_index("collections"))
    shard.flush()
    assert "collections" not in shard.info().payload_schema
    assert rs.store.chunks_of(record.document_id, record.generation)[0].metadata.collections == ()


def test_an_index_from_before_collections_opens_with_everything_in_the_default_one(tmp_path: Path):
    embedder = CountingEmbedder()
    with _open(tmp_path, embedder) as rs:
        rs.ingest([_folder(tmp_path / "handbook", HANDBOOK), _folder(tmp_path / "minutes", MINUTES)])
        before = [(hit.chunk.chunk_id, round(hit.score, 6)) for hit in rs.search(QUESTION, top_k=10).hits]
        answer = rs.ask(QUESTION).answer
        _downgrade_to_before_collections(rs)
    embedded = embedder.passages
    with _open(tmp_path, embedder) as rs:
        assert embedder.passages == embedded  # nothing re-embedded
        assert [c.name for c in rs.collections()] == ["default"] and rs.collection("default").documents == 4
        assert {tuple(r.collections) for r in rs.documents()} == {(DEFAULT_COLLECTION_ID,)}
        assert [(hit.chunk.chunk_id, round(hit.score, 6)) for hit in rs.search(QUESTION, top_k=10).hits] == before
        assert len(rs.search(QUESTION, top_k=10, scope=Scope(collections=["default"])).hits) == len(before)
        assert len(rs.search(QUESTION, top_k=10, scope=Scope(user="anyone")).hits) == len(before)
        assert rs.ask(QUESTION).answer == answer


def test_a_migration_keeps_the_collections(two, tmp_path: Path):
    rs, embedder = two
    rs.edit_collection("handbook", access="readers", readers=["bob"])
    before = embedder.passages
    report = rs.migrate(str(tmp_path / "copy"))
    assert report.ok and embedder.passages == before
    with Ragstream(load_config(data_dir=tmp_path / "copy", **FAST_DEFAULTS), embedder=embedder) as copy:
        assert [(c.name, c.access, c.readers, c.documents) for c in copy.collections()] == [
            ("default", "all", [], 0), ("handbook", "readers", ["bob"], 2), ("minutes", "all", [], 2)]
        hits = copy.search(QUESTION, top_k=10, scope=Scope(collections=["handbook"])).hits
        assert _names([hit.chunk.metadata.source for hit in hits]) == set(HANDBOOK)
        assert copy.search(QUESTION, top_k=10, scope=Scope(user="dan", collections=["minutes"])).hits
        root = str((tmp_path / "minutes").resolve())
        assert copy.catalog.collections.root_collection(root) == copy.collection("minutes").collection_id


def test_a_move_cut_short_is_finished_when_the_index_opens(tmp_path: Path):
    """The catalog half of a move ran (the documents marked pending), the payload half did not, as when the
    process dies between them: opening the index again sets the payloads."""
    embedder = CountingEmbedder()
    with _open(tmp_path, embedder) as rs:
        handbook = rs.create_collection("handbook")
        rs.ingest([_folder(tmp_path / "handbook", HANDBOOK)])
        ids = [r.document_id for r in rs.documents()]
        assert rs.catalog.collections.add_documents(handbook.collection_id, ids) == sorted(ids)  # the catalog only
        assert rs.search(QUESTION, top_k=10, scope=Scope(collections=["handbook"])).hits == []  # the store does not know yet
    with _open(tmp_path, embedder) as rs:
        assert rs.catalog.collections.pending() == []
        hits = rs.search(QUESTION, top_k=10, scope=Scope(collections=["handbook"])).hits
        assert _names([hit.chunk.metadata.source for hit in hits]) == set(HANDBOOK)


def test_a_conversation_stops_reading_a_collection_its_user_lost(two):
    rs, _ = two
    rs.edit_collection("handbook", access="readers", readers=["bob"])
    first = rs.ask(QUESTION, "talk", scope=Scope(user="bob", collections=["handbook"]))
    assert first.sources and all(source.collections == ["handbook"] for source in first.sources)
    rs.edit_collection("handbook", readers=[])
    with pytest.raises(CollectionNotFoundError):
        rs.ask("and for leave?", "talk", scope=Scope(user="bob", collections=["handbook"]))
    later = rs.ask(QUESTION, "talk", scope=Scope(user="bob"))
    handbook = {record.document_id for record in rs.documents(scope=Scope(collections=["handbook"]))}
    assert later.sources and not {source.document_id for source in later.sources} & handbook
    assert not {doc.document_id for doc in later.relatedDocs} & handbook


def test_a_document_ingested_by_the_cli_is_changed_only_by_an_admin(two):
    """Moves grant nothing: a user who puts a CLI-ingested document in a collection of theirs may neither take it out of
    the collections it was in nor delete it; their own upload stays theirs wherever it sits."""
    rs, _ = two
    [board] = [r for r in rs.documents() if r.source.endswith("board.md")]  # synced into ``minutes`` (access all)
    rs.create_collection("bob-hide", user="bob")
    assert rs.add_to_collection("bob-hide", [board.document_id], user="bob") == [board.document_id]
    with pytest.raises(PermissionDeniedError):
        rs.remove_from_collection("minutes", [board.document_id], user="bob")
    assert not rs.may_change_document(board.document_id, user="bob")
    with pytest.raises(PermissionDeniedError):
        rs.delete(board.document_id, user="bob", allow_shared=rs.may_change_document(board.document_id, user="bob"))
    assert rs.remove_from_collection("bob-hide", [board.document_id], user="bob") == [board.document_id]  # his own
    rs.add_to_collection("bob-hide", [board.document_id])
    rs.remove_from_collection("minutes", [board.document_id])  # the CLI moves it: still not Bob's
    assert not rs.may_change_document(board.document_id, user="bob")
    with pytest.raises(PermissionDeniedError):
        rs.delete_collection("bob-hide", delete_documents=True, user="bob")
    assert rs.document(board.document_id).collections == [rs.collection("bob-hide").collection_id]  # not deleted
    mine = rs.ingest_bytes(b"# Mine\n\nBob's own note on the notice period.\n", "mine.md", source="upload://bob/mine.md",
                           owner="bob")
    assert rs.may_change_document(mine.document_ids[0], user="bob")
    assert not rs.may_change_document(mine.document_ids[0], user="dan")
