"""Does feedback grow the catalog without bound? Issue 41 item 5.

Usage: python bench/feedback_growth.py [--answers 2000] [--re-ratings 10000] [--opens 10000] [--postgres]

On a SQLite catalog in a temporary folder: keeps ``--answers`` answers, rates one (a 2,000-character comment),
then re-rates it ``--re-ratings`` times (helpful and not helpful in turn, the comment changed each time), then
opens one of its citations ``--opens`` times. Measures the catalog on disk (the database, its write-ahead log
and the log's index) after the first rating (after a truncating checkpoint: the database alone), after the
re-ratings and after the opens (each after a passive checkpoint, the kind SQLite runs by itself), and the opens
the summary counts. ``sqlite_defaults`` is the same run with SQLite's own log settings (checkpoint at 1,000 pages,
the log never cut back), as the catalog had them before ``store.sqlite_wal_limit_bytes``.

``--postgres`` does the same on a local PostgreSQL (``ragstream db start``'s server, in a temporary folder) and
measures ``pg_total_relation_size`` of the feedback tables, before and after a ``VACUUM``.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragstream.config import StoreConfig
from ragstream.store.catalog_base import Catalog
from ragstream.store.factory import postgres_catalog, sqlite_catalog
from ragstream.store.sqlite_catalog import SqliteConnection

COMMENT_CHARS = 2000
ANSWERED_AT = "2026-03-01T10:00:00+00:00"
SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES = 1000  # SQLite's own default (and journal_size_limit -1: never cut back)
FEEDBACK_TABLES = ("answer_feedback", "answer_feedback_collections", "answer_citation_opens")


def exercise(catalog: Catalog, args: argparse.Namespace, size: Callable[[str], int]) -> dict[str, Any]:
    """Rate one answer, re-rate it, open one citation of it over and over: the sizes (bytes) after each step."""
    feedback = catalog.feedback
    for number in range(args.answers):
        feedback.record_answer(f"m{number}", "alice", f"question {number}", ANSWERED_AT)
    feedback.rate_answer("m0", "alice", "helpful", "x" * COMMENT_CHARS, ANSWERED_AT)
    first = size("first")
    for number in range(args.re_ratings):
        feedback.rate_answer("m0", "alice", ("helpful", "not_helpful")[number % 2], str(number % 10) * COMMENT_CHARS,
                             ANSWERED_AT)
    re_rated = size("after")
    for _ in range(args.opens):
        feedback.record_citation_open("m0", "alice", 1)
    opened = size("after")
    [day] = feedback.feedback_days(ANSWERED_AT[:10])
    return {"bytes_after_first_rating": first, "bytes_after_re_ratings": re_rated, "bytes_after_opens": opened,
            "growth_bytes": opened - first, "rated": day.rated, "citation_opens_counted": day.citation_opens}


def sqlite_run(root: Path, args: argparse.Namespace, sqlite_defaults: bool) -> dict[str, Any]:
    path = root / ("defaults" if sqlite_defaults else "fixed") / "catalog.sqlite3"
    catalog = sqlite_catalog(path)
    connection = catalog.connection
    assert isinstance(connection, SqliteConnection)
    if sqlite_defaults:
        with connection.lock:
            connection.db.execute("PRAGMA journal_size_limit=-1")
            connection.db.execute(f"PRAGMA wal_autocheckpoint={SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES}")

    def size(when: str) -> int:
        with connection.lock:
            connection.db.execute(f"PRAGMA wal_checkpoint({'TRUNCATE' if when == 'first' else 'PASSIVE'})")
        return sum(file.stat().st_size for file in path.parent.glob(path.name + "*"))

    try:
        result = exercise(catalog, args, size)
    finally:
        catalog.close()
    return result


def postgres_run(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    import psycopg

    from ragstream.store.postgres import server

    info = server.start(root / "pg")
    catalog = postgres_catalog(StoreConfig(backend="postgres", url=info.url))
    db = catalog.connection.db  # type: ignore[attr-defined]
    tables = ", ".join(f"'{table}'" for table in FEEDBACK_TABLES)

    def size(when: str) -> int:
        with db.read() as conn:
            row = conn.execute(f"SELECT SUM(pg_total_relation_size(t::regclass)) FROM unnest(ARRAY[{tables}]) t").fetchone()
        return int(row[0])

    try:
        result = exercise(catalog, args, size)
        with psycopg.connect(info.url, autocommit=True) as conn:  # VACUUM runs outside a transaction
            for table in FEEDBACK_TABLES:
                conn.execute(f"VACUUM {table}")
        result["bytes_after_vacuum"] = size("after")
    finally:
        catalog.close()
        server.stop(root / "pg")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--re-ratings", type=int, default=10_000)
    parser.add_argument("--opens", type=int, default=10_000)
    parser.add_argument("--postgres", action="store_true", help="Also measure a local PostgreSQL catalog.")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ragstream-feedback-growth-"))
    try:
        report: dict[str, Any] = {"answers": args.answers, "re_ratings": args.re_ratings, "opens": args.opens,
                                  "sqlite_wal_limit_bytes": StoreConfig().sqlite_wal_limit_bytes,
                                  "sqlite": sqlite_run(root, args, sqlite_defaults=False),
                                  "sqlite_defaults": sqlite_run(root, args, sqlite_defaults=True)}
        if args.postgres:
            report["postgres"] = postgres_run(root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
