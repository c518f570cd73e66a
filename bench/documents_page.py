"""Documents page benchmark: one page from the catalog (``DocumentRegistry.page``) against the whole list
(``DocumentRegistry.list``, what ``GET /api/documents`` and the old documents page read), on a catalog of
``--documents`` records.

Usage: python bench/documents_page.py [--documents 20000] [--repeats 20] [--page-size 25]

Builds the catalog directly (records with one short page of text each; no chunking or embedding:
this measures the catalog read, not ingest). Prints one JSON object: milliseconds (median of
``--repeats``) for the full list (the baseline) and for a first page by title, a deep page, a page
sorted by chunk count, and a filtered page, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragstream.models import LoadedDocument, Page
from ragstream.store.catalog_base import DocumentRegistry, DocumentVersion
from ragstream.store.factory import sqlite_catalog

BATCH = 1000
MS = 1000.0


def _build(documents: DocumentRegistry, count: int) -> None:
    for start in range(0, count, BATCH):
        versions = []
        for i in range(start, min(start + BATCH, count)):
            doc = LoadedDocument(document_id=f"doc-{i:07d}", source=f"/docs/section-{i % 97}/page-{i:07d}.md",
                                 title=f"Handbook page {i} on topic {i % 131}", mime="text/markdown",
                                 checksum=f"{i:064x}", size_bytes=100, pages=(Page(number=None, text=f"Page {i}."),),
                                 metadata={})
            versions.append(DocumentVersion(doc, generation=i + 1, chunk_count=1 + i % 17, fingerprint="f",
                                            ingested_at=f"2026-01-01T00:{(i // 60) % 60:02d}:{i % 60:02d}+00:00"))
        documents.commit_documents(versions)


def _median_ms(call: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * MS)
    return round(statistics.median(times), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--page-size", type=int, default=25)
    args = parser.parse_args()
    size = args.page_size
    with tempfile.TemporaryDirectory() as tmp:
        catalog = sqlite_catalog(Path(tmp) / "catalog.sqlite3")
        documents = catalog.documents
        _build(documents, args.documents)
        results = {
            "full_list_baseline_ms": _median_ms(documents.list, args.repeats),
            "first_page_by_title_ms": _median_ms(lambda: documents.page(0, size, sort="title"), args.repeats),
            "deep_page_by_title_ms": _median_ms(lambda: documents.page(args.documents - size, size, sort="title"),
                                                args.repeats),
            "page_by_chunks_desc_ms": _median_ms(lambda: documents.page(0, size, sort="chunks", descending=True),
                                                 args.repeats),
            "filtered_page_ms": _median_ms(lambda: documents.page(0, size, query="topic 13"), args.repeats),
        }
        catalog.close()
    print(json.dumps({"documents": args.documents, "page_size": size, "repeats": args.repeats, **results,
                      "load_average": [round(value, 2) for value in os.getloadavg()]}, indent=2))


if __name__ == "__main__":
    main()
