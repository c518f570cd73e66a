"""Many ingest processes on one PostgreSQL index: real ``ragstream ingest`` processes writing one database at once.

Every file of the folders is made of paragraphs of the same size, so each document has exactly ``CHUNKS`` chunks.
While the processes run, a reader in this process takes snapshots and asks the store for every chunk it can see
(a BM25 query on a word every chunk holds): each visible document must show exactly ``CHUNKS`` chunks, one per
position, never a version half-written nor two versions beside each other. After they end, the database holds
each document once: no chunk outside a live version, no open write intent, and BM25 statistics that count the
chunks stored. One test SIGKILLs an ingest while it holds the commit lock in the middle of a batch: the other
process goes on, and the next process to open the index (the other one, if it opens after the kill, else the next
``ragstream ingest`` run) removes the dead one's unfinished batch, which no reader saw; that run finishes the folder.
The hash embedder stands in for the model (fast tier).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import Counter, defaultdict
from pathlib import Path

import psycopg
from support.hash_embedder import HashEmbedder
from support.server_process import FAST_SETTINGS, HASH_SITE, SERVE_WITH_HASH_EMBEDDER, server_env

from ragstream import Ragstream, load_config

TESTS_DIR = Path(__file__).resolve().parent
PROCESS_SECONDS = 240.0
CHUNKS = 3
"""Chunks of every file (three paragraphs, each a chunk of its own at the chunk size below)."""
COMMON_WORD = "zebrafinch"
"""In every paragraph: a BM25 query on it finds every visible chunk."""
SETTINGS = {"CHUNKING__CHUNK_SIZE": "400", "CHUNKING__CHUNK_OVERLAP": "0", "INGEST__WRITE_BATCH_CHUNKS": "6"}
"""Small batches: each process takes the commit lock many times, so the processes interleave."""


def write_folder(folder: Path, files: int, tag: str) -> None:
    """``files`` Markdown files of ``CHUNKS`` paragraphs of about 40 words each."""
    folder.mkdir(parents=True)
    for i in range(files):
        paragraphs = [f"{tag} file {i} paragraph {p} {COMMON_WORD} " + " ".join(f"word{(i * 7 + p * 3 + w) % 97}"
                                                                               for w in range(35))
                      for p in range(CHUNKS)]
        (folder / f"{tag}{i:03d}.md").write_text("\n\n".join(paragraphs) + "\n")


def environment(data_dir: Path, url: str) -> dict[str, str]:
    return server_env(data_dir, **FAST_SETTINGS, **SETTINGS, STORE__BACKEND="postgres", STORE__URL=url)


def start_ingest(data_dir: Path, url: str, *folders: Path) -> subprocess.Popen[str]:
    """``ragstream ingest FOLDER...`` in its own process on the hash embedder."""
    return subprocess.Popen([sys.executable, "-c", SERVE_WITH_HASH_EMBEDDER, "ingest", *map(str, folders)],
                            env=environment(data_dir, url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=PROCESS_SECONDS)
    assert process.returncode == 0, f"ingest failed ({process.returncode}):\n{out}\n{err}"
    return out


class Reader:
    """Reads every visible chunk from one snapshot at a time, in a thread, and keeps what was wrong."""

    def __init__(self, rs: Ragstream) -> None:
        self.rs = rs
        self.stop = threading.Event()
        self.reads = 0
        self.wrong: list[str] = []
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            with self.rs.snapshot() as snapshot:
                hits = self.rs.store.search_bm25(COMMON_WORD, 100_000, None, snapshot)
            positions: dict[str, list[int]] = defaultdict(list)
            for chunk, _ in hits:
                positions[chunk.metadata.document_id].append(chunk.metadata.chunk_index)
            for document_id, seen in positions.items():
                if sorted(seen) != list(range(CHUNKS)):
                    self.wrong.append(f"{document_id}: chunk positions {sorted(seen)}")
            self.reads += 1

    def __enter__(self) -> Reader:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=PROCESS_SECONDS)


def check_database(tmp_path: Path, url: str, expected_documents: int, embedder: HashEmbedder) -> None:
    """Opened again once every writer is gone (recovery clears what they left: intents of versions whose old chunks
    waited for a reader when the process ended), each document is there once, whole; nothing else is stored; no
    intent is open; the BM25 statistics count the stored chunks."""
    Ragstream(load_config(data_dir=tmp_path / "after", store={"backend": "postgres", "url": url}), embedder=embedder).close()
    with psycopg.connect(url) as conn:
        live = dict(conn.execute("SELECT document_id, generation FROM documents").fetchall())
        chunk_counts = dict(conn.execute("SELECT document_id, chunk_count FROM documents").fetchall())
        versions = conn.execute("SELECT document_id, generation, count(*) FROM chunks GROUP BY 1, 2").fetchall()
        intents = conn.execute("SELECT count(*) FROM write_intents").fetchone()
        points = conn.execute("SELECT value FROM counters WHERE name = 'bm25_points'").fetchone()
        stored = conn.execute("SELECT count(*) FROM chunks").fetchone()
        frequencies = dict(conn.execute("SELECT term, df FROM bm25_terms").fetchall())
        terms = conn.execute("SELECT terms FROM chunks").fetchall()
    assert len(live) == expected_documents
    assert all(chunk_counts[document_id] == CHUNKS for document_id in live)
    assert sorted((d, g, n) for d, g, n in versions) == sorted((d, g, CHUNKS) for d, g in live.items())
    assert intents == (0,)
    assert stored is not None and points == (stored[0],) == (expected_documents * CHUNKS,)
    assert frequencies == dict(Counter(term for (row,) in terms for term in row))


def test_concurrent_ingest_processes_write_each_document_once(tmp_path: Path, postgres_url: str,
                                                              hash_embedder: HashEmbedder) -> None:
    shared, own = tmp_path / "shared", tmp_path / "own"
    write_folder(shared, 40, "shared")
    write_folder(own, 20, "own")
    rs = Ragstream(load_config(data_dir=tmp_path / "reader", store={"backend": "postgres", "url": postgres_url}),
                   embedder=hash_embedder)
    try:
        with Reader(rs) as reader:
            processes = [start_ingest(tmp_path / f"data{k}", postgres_url, shared) for k in range(3)]
            processes.append(start_ingest(tmp_path / "data3", postgres_url, own, shared))
            outputs = [finished(process) for process in processes]
        assert reader.reads > 0 and reader.wrong == []
    finally:
        rs.close()
    check_database(tmp_path, postgres_url, 60, hash_embedder)
    processed = sum(int(out.split("processed ")[1].split(",")[0]) for out in outputs)
    assert processed == 60, outputs  # a file two processes raced for is written once, the other skips it as unchanged


def test_an_ingest_killed_holding_the_commit_lock_is_recovered_by_the_next_run(tmp_path: Path, postgres_url: str,
                                                                               hash_embedder: HashEmbedder) -> None:
    doomed, other = tmp_path / "doomed", tmp_path / "other"
    write_folder(doomed, 30, "doomed")
    write_folder(other, 30, "other")
    env = {**environment(tmp_path / "child", postgres_url), "RAGSTREAM_TEST_HASH_EMBEDDER": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(HASH_SITE), str(TESTS_DIR), os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen([sys.executable, "-m", "support.crash_child", str(tmp_path / "child"), str(doomed), "steps"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    rival = start_ingest(tmp_path / "rival", postgres_url, other)
    upserts = 0
    for line in child.stdout:
        upserts += line.strip() == "step upsert"
        if upserts == 3:  # inside its third batch's write: it holds the commit lock, its chunks half-stored
            break
    child.kill()
    child.communicate(timeout=PROCESS_SECONDS)
    assert child.returncode == -9
    assert "failed 0" in finished(rival)  # the dead process's lock went with its connection
    rs = Ragstream(load_config(data_dir=tmp_path / "reader", store={"backend": "postgres", "url": postgres_url}),
                   embedder=hash_embedder)
    try:
        with Reader(rs) as reader:
            out = finished(start_ingest(tmp_path / "next", postgres_url, doomed))
        assert reader.wrong == []
    finally:
        rs.close()
    assert "failed 0" in out
    check_database(tmp_path, postgres_url, 60, hash_embedder)
