"""``ragstream watch`` (the watcher thread, in process) and ``ragstream serve --watch`` (a real server) on roots
where symlinks, loops and FIFOs appear while they watch (``ingest.follow_symlinks``): nothing outside the root is
indexed, a loop or a FIFO stops nothing. Changes are polled for within a bounded wait, never timed."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
from support.folder_corpus import write_text
from support.hash_embedder import HashEmbedder
from support.index_fixtures import FAST_DEFAULTS
from support.link_folders import SECRET_WORD, make_linked_folder
from support.polling import QUICK_SYNC, WAIT_SECONDS, wait_for
from support.server_process import running_server

from ragstream import Ragstream, load_config


def _sources(rs: Ragstream) -> set[str]:
    return {Path(record.source).name for record in rs.documents()}


def test_links_created_under_a_watched_root_never_lead_out_of_it(tmp_path: Path, hash_embedder: HashEmbedder):
    linked = make_linked_folder(tmp_path)  # loops and a FIFO from the start: the first full sync gets through
    outside = write_text(tmp_path / "outside" / "keys.md", f"# Keys\n\nThe {SECRET_WORD} deploy keys.\n")
    config = load_config(data_dir=tmp_path / "index", **FAST_DEFAULTS, sync=QUICK_SYNC)
    with Ragstream(config, embedder=hash_embedder) as rs:
        watcher = rs.watcher([linked.docs])
        watcher.start()
        try:
            assert watcher.ready.wait(WAIT_SECONDS)
            assert _sources(rs) == {"guide.md", "real.md"}

            os.symlink(outside, linked.docs / "keys.md")  # a file link out of the root
            os.symlink(outside.parent, linked.docs / "outside")  # a folder link out of it
            os.symlink("again.md", linked.docs / "again.md")  # a loop
            os.mkfifo(linked.docs / "fifo.md")
            write_text(linked.docs / "marker.md", "# Marker\n\nCormorants dry their wings on the pier.\n")
            wait_for(lambda: "marker.md" in _sources(rs), "a file created after the links")
            assert not rs.search(SECRET_WORD, mode="bm25").hits

            # an indexed file swapped for a link out of the root: its document goes, the target never comes
            (linked.docs / "guide.md").unlink()
            os.symlink(linked.system_secret, linked.docs / "guide.md")
            wait_for(lambda: "guide.md" not in _sources(rs), "the swapped file's document removed")
            assert not rs.search(SECRET_WORD, mode="bm25").hits

            os.symlink("marker.md", linked.docs / "inside.md")  # a link inside the root: the same document
            write_text(linked.docs / "marker2.md", "# Marker two\n\nPuffins nest in burrows.\n")
            wait_for(lambda: "marker2.md" in _sources(rs), "a file created after a link inside the root")
        finally:
            watcher.stop()
        assert watcher.error is None
        assert _sources(rs) == {"real.md", "marker.md", "marker2.md"}
        assert not rs.search(SECRET_WORD, mode="bm25").hits


def test_serve_watch_does_not_follow_a_link_out_of_the_root(tmp_path: Path):
    linked = make_linked_folder(tmp_path)
    settings = {f"SYNC__{key.upper()}": str(value) for key, value in QUICK_SYNC.items()}
    with running_server(tmp_path / "server", hash_embedder=True, args=["--watch", str(linked.docs)],
                        **settings) as server, httpx.Client(base_url=server.url, timeout=WAIT_SECONDS) as client:

        def hits(query: str) -> list[str]:
            answer = client.post("/api/search", json={"query": query, "mode": "bm25"})
            assert answer.status_code == 200, answer.text
            return [Path(hit["chunk"]["metadata"]["source"]).name for hit in answer.json()["hits"]]

        wait_for(lambda: "guide.md" in hits("stalled server read timeout"), "the first sync")
        os.symlink(linked.sibling_secret, linked.docs / "copied.md")
        write_text(linked.docs / "tides.md", "# Tides\n\nSpring tides flood the estuary marshes.\n")
        wait_for(lambda: "tides.md" in hits("estuary marshes"), "a file added after the link")
        assert hits(SECRET_WORD) == []
        names = {Path(doc["source"]).name for doc in client.get("/api/documents").json()}
        assert names == {"guide.md", "real.md", "tides.md"}
        assert "Traceback" not in server.log_text()
