"""Writers hold the index's commit lock only for the short switch of a batch, never while they chunk or
embed; a reindex that re-embeds stored text yields to a version another writer committed meanwhile.

Real threads and a real index; the hash embedder is wrapped in a gate that holds one writer inside its
chunking or embedding step until the test lets it go, so the interleaving is deterministic (no sleeps).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from support.hash_embedder import HashEmbedder
from support.index_fixtures import FAST_DEFAULTS

from ragstream import Ragstream, load_config
from ragstream.models import IngestReport

GATE_SECONDS = 60.0


class GatedEmbedder(HashEmbedder):
    """The hash embedder; once armed, the next ``embed_documents`` or ``count_tokens`` call waits for ``release``."""

    def __init__(self) -> None:
        super().__init__()
        self.arm_embed = threading.Event()
        self.arm_count = threading.Event()
        self.entered = threading.Event()
        self.release = threading.Event()

    def _hold(self, armed: threading.Event) -> None:
        if armed.is_set():
            armed.clear()
            self.entered.set()
            assert self.release.wait(GATE_SECONDS)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self._hold(self.arm_embed)
        return super().embed_documents(texts)

    def count_tokens(self, text: str) -> int:
        self._hold(self.arm_count)
        return super().count_tokens(text)


def _open(tmp_path: Path, embedder: GatedEmbedder) -> Ragstream:
    config = load_config(data_dir=tmp_path / "data", **{**FAST_DEFAULTS, "chunking": {"strategy": "split_when_needed"}})
    return Ragstream(config, embedder=embedder)


def _write(path: Path, text: str) -> Path:
    path.write_text(f"# {path.stem}\n\n{text}\n")
    return path


def _in_thread(work: Callable[[], object]) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = work()
        except BaseException as error:  # reported by the test
            out["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_other_writes_go_on_while_a_writer_embeds(tmp_path: Path):
    embedder = GatedEmbedder()
    with _open(tmp_path, embedder) as rs:
        rs.ingest([_write(tmp_path / "gone.md", "A document that will be deleted.")])
        embedder.arm_embed.set()
        slow, out = _in_thread(lambda: rs.ingest([_write(tmp_path / "slow.md", "Slow to embed: unique words zebra.")]))
        assert embedder.entered.wait(GATE_SECONDS)
        # the slow writer is inside its embedding step: other writes and reads complete meanwhile
        report = rs.ingest([_write(tmp_path / "fast.md", "Fast document about otters.")])
        assert report.documents_processed == 1
        rs.delete(next(d.document_id for d in rs.documents() if d.title == "gone"))
        assert rs.search("otters").hits[0].chunk.metadata.title == "fast"
        assert slow.is_alive()
        embedder.release.set()
        slow.join(GATE_SECONDS)
        assert "error" not in out and out["result"].documents_processed == 1
        assert sorted(d.title for d in rs.documents()) == ["fast", "slow"]


def test_reindex_yields_to_a_newer_version(tmp_path: Path):
    embedder = GatedEmbedder()
    with _open(tmp_path, embedder) as rs:
        path = _write(tmp_path / "doc.md", "Version one talks about apples.")
        rs.ingest([path])
        embedder.arm_count.set()
        reindex, out = _in_thread(rs.reindex)
        assert embedder.entered.wait(GATE_SECONDS)  # the reindex holds version one's text, not yet written
        assert rs.ingest([_write(path, "Version two talks about pears.")]).documents_processed == 1
        embedder.release.set()
        reindex.join(GATE_SECONDS)
        report: IngestReport = out["result"]
        assert report.documents_skipped == 1 and report.documents_processed == 0
        [record] = rs.documents()
        chunks = rs.document_chunks(record.document_id)
        assert all("pears" in chunk.text and "apples" not in chunk.text for chunk in chunks)
        assert rs.reindex().documents_processed == 1  # a later reindex rewrites it as usual
