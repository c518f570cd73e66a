"""The one write path (issue 45.1): every write of the facade names its writer, and the write service checks the
writer's right to write where they write before any file is read (docs/collections.md, "Who may change a
document"). Real index (Qdrant Edge + SQLite) on the hash embedder."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstream.errors import CollectionNotFoundError, PermissionDeniedError
from ragstream.models import LOCAL_ADMIN, LoadedDocument, Page, Writer

TEXT = b"# Launch\n\nThe launch protocol requires two signatures.\n"
BOB = Writer(user="bob")


@pytest.fixture
def rs(make_fast_index):
    index = make_fast_index()
    index.create_collection("handbook", access="readers", readers=["bob"], user="alice")
    index.create_collection("garden", editors=["bob"], user="alice")
    return index


def test_a_user_writes_their_own_documents(rs):
    report = rs.ingest_bytes(TEXT, "launch.md", source="launch.md", owner="bob", writer=BOB)
    assert report.documents_processed == 1
    assert [record.owner for record in rs.documents()] == ["bob"]


@pytest.mark.parametrize("owner", [None, "carol"], ids=["shared", "another user's"])
def test_a_user_may_not_write_shared_documents_or_another_users(rs, owner):
    with pytest.raises(PermissionDeniedError):
        rs.ingest_bytes(TEXT, "launch.md", source="launch.md", owner=owner, writer=BOB)
    assert rs.documents() == []


def test_a_user_writes_into_a_collection_they_edit_and_nowhere_else(rs):
    report = rs.ingest_bytes(TEXT, "launch.md", source="garden/launch.md", collection="garden", writer=BOB)
    assert report.documents_processed == 1
    with pytest.raises(PermissionDeniedError):  # bob only reads it
        rs.ingest_bytes(TEXT, "launch.md", source="handbook/launch.md", collection="handbook", writer=BOB)
    with pytest.raises(CollectionNotFoundError):  # bob may not read it
        rs.ingest_bytes(TEXT, "launch.md", source="secret/launch.md", collection="secret", writer=Writer(user="bob"))
    assert [record.source for record in rs.documents()] == ["garden/launch.md"]


def test_files_of_the_machine_syncs_and_watches_are_the_admins(rs, tmp_path: Path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "launch.md").write_bytes(TEXT)
    for write in (lambda: rs.ingest([folder], owner="bob", writer=BOB), lambda: rs.sync([folder], writer=BOB),
                  lambda: rs.watcher([folder], writer=BOB)):
        with pytest.raises(PermissionDeniedError):
            write()
    assert rs.documents() == [] and rs.roots() == []
    assert len(rs.sync([folder], writer=Writer(user="root", admin=True)).added) == 1  # an admin key may
    assert rs.ingest([folder], writer=LOCAL_ADMIN).documents_skipped == 1  # as may the CLI (the local admin)


def test_an_upload_of_a_user_is_aimed_at_their_folder_or_the_collection_named(rs):
    assert rs.upload_owner(BOB, shared=False) == "bob"
    with pytest.raises(PermissionDeniedError):
        rs.upload_owner(BOB, shared=True)
    own = rs.upload_target(BOB, "bob", None)
    into = rs.upload_target(BOB, "bob", "garden")
    assert (own.owner, own.collection_id) == ("bob", None)
    assert (into.owner, into.collection_id) == (None, rs.collection("garden").collection_id)
    assert rs.upload_target(BOB, "bob", "default").collection_id is None  # naming the default is naming none


def test_documents_built_in_memory_name_their_own_owner_so_only_admins_write_them(rs):
    doc = LoadedDocument(document_id="memo", source="memo.md", title="Memo", mime="text/markdown", checksum="0" * 64,
                         size_bytes=len(TEXT), pages=(Page(text=TEXT.decode()),), owner="carol")
    with pytest.raises(PermissionDeniedError):
        rs.ingest_documents([doc], writer=BOB)
    assert rs.documents() == []
    assert rs.ingest_documents([doc]).documents_processed == 1  # the local admin (a script) may
