"""PDF structure before and after (issue 44.1): the share of chunks with a section path, and retrieval on questions.

Usage: python bench/pdf_structure.py [--pdfs DIR ...] [--extra FILE ...] [--no-retrieval]

"before" is how PDFs were read until now: no headings (``pdf.structure = false``) and the ``window`` chunker;
"after" is the default (headings from the outline, else from the type; the ``auto`` strategy's markdown chunker).
For every PDF (those in ``--pdfs`` folders, default ``../shared/data/pdfs``, and ``--extra`` files, e.g. manuals
fetched from public repositories) the JSON gives chunks and the share with a section path, each way. Retrieval:
both ways are ingested into an index on the packaged model (all-MiniLM-L6-v2, hybrid search), the questions of
``QUESTIONS`` (written by reading the PDFs: the pages that answer them) are asked, and hit@1 (the first hit is on
a gold page of the gold file), hit@5 and MRR@10 are reported, with the first hit's section path after. Questions
whose file is not given are left out. Seconds to load and chunk each file (one run; the structure and table finding
are the difference), load average before and after: run it under the heavy-work lock.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ragstream import Ragstream, load_config
from ragstream.config import RagstreamConfig
from ragstream.documents import chunk_document, load_file

HERE = Path(__file__).resolve().parent
DEFAULT_PDFS = HERE.parent.parent / "shared" / "data" / "pdfs"
TOP_K = 10

# (question, file name, pages that answer it), written by reading the PDFs.
QUESTIONS: list[tuple[str, str, tuple[int, ...]]] = [
    ("How must the hash be declared before adding items?", "uthash-userguide.pdf", (8,)),
    ("Why doesn't uthash check key uniqueness for you?", "uthash-userguide.pdf", (8, 9)),
    ("How can I delete items while iterating over the hash?", "uthash-userguide.pdf", (10, 11)),
    ("What Bloom filter sizes go with the values of n?", "uthash-userguide.pdf", (22, 23)),
    ("Which hash function does uthash use by default?", "uthash-userguide.pdf", (24,)),
    ("Is uthash thread safe, and what locking do I need?", "uthash-userguide.pdf", (30,)),
    ("How do I make uthash use my own malloc and free?", "uthash-userguide.pdf", (28,)),
    ("On which operating systems is the hashscan utility available?", "uthash-userguide.pdf", (26,)),
    ("What files does ProbABEL take as input?", "probabel-manual.pdf", (3,)),
    ("How do I run several analyses at once with probabel.pl?", "probabel-manual.pdf", (9,)),
    ("How is the kinship matrix estimated for pedigree data?", "probabel-manual.pdf", (15, 16)),
    ("How much memory does ProbABEL use?", "probabel-manual.pdf", (10,)),
    ("How should I cite ProbABEL in a publication?", "probabel-manual.pdf", (16, 17)),
    ("How many airplanes of U.S. registry does the proposed AD affect and what does compliance cost?",
     "federal-register-2020-17221.pdf", (5,)),
    ("How will the FAA assess the impact of the design changes on pilot training?",
     "federal-register-2020-17221.pdf", (5,)),
    ("When did the FAA issue the Emergency Order of Prohibition for the 737 MAX?",
     "federal-register-2020-17221.pdf", (4,)),
]

WAYS: dict[str, dict[str, Any]] = {
    "before": {"pdf": {"structure": False}, "chunking": {"strategy": "window"}},
    "after": {},
}


def section_share(files: list[Path], config: RagstreamConfig) -> dict[str, Any]:
    """Chunks and the share with a section path, per file."""
    out = {}
    for path in files:
        start = time.perf_counter()
        doc = load_file(path, config)
        pieces = chunk_document(doc, config.chunking)
        seconds = time.perf_counter() - start
        with_path = sum(1 for piece in pieces if piece.header_path)
        out[path.name] = {"pages": len(doc.pages), "chunks": len(pieces), "with_section": with_path,
                          "share": round(with_path / len(pieces), 3) if pieces else 0.0,
                          "load_and_chunk_seconds": round(seconds, 2)}
    return out


def retrieval(files: list[Path], overrides: dict[str, Any]) -> dict[str, Any]:
    """Ingest ``files`` under ``overrides`` and score the questions on them."""
    names = {path.name for path in files}
    asked = [question for question in QUESTIONS if question[1] in names]
    with tempfile.TemporaryDirectory() as data_dir:
        rs = Ragstream(load_config(data_dir=data_dir, **overrides))
        try:
            rs.ingest(files)
            hits1 = hits5 = 0
            reciprocal = 0.0
            rows = []
            for question, name, pages in asked:
                hits = rs.search(question, top_k=TOP_K).hits
                ranks = [rank for rank, hit in enumerate(hits, start=1)
                         if Path(hit.chunk.metadata.source).name == name and hit.chunk.metadata.page in pages]
                first = ranks[0] if ranks else None
                hits1 += first == 1
                hits5 += first is not None and first <= 5
                reciprocal += 1 / first if first else 0.0
                top = hits[0].chunk.metadata if hits else None
                rows.append({"question": question, "rank": first,
                             "top": f"{Path(top.source).name} p. {top.page} {top.header_path!r}" if top else None})
        finally:
            rs.close()
    count = len(asked) or 1
    return {"questions": len(asked), "hit@1": round(hits1 / count, 3), "hit@5": round(hits5 / count, 3),
            f"mrr@{TOP_K}": round(reciprocal / count, 3), "per_question": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pdfs", nargs="*", type=Path, default=[DEFAULT_PDFS])
    parser.add_argument("--extra", nargs="*", type=Path, default=[])
    parser.add_argument("--no-retrieval", action="store_true")
    args = parser.parse_args()
    files = sorted(path for folder in args.pdfs for path in folder.glob("*.pdf")) + list(args.extra)
    result: dict[str, Any] = {"load_before": os.getloadavg()}
    for way, overrides in WAYS.items():
        shares = section_share(files, load_config(**overrides))
        chunks = sum(entry["chunks"] for entry in shares.values())
        with_path = sum(entry["with_section"] for entry in shares.values())
        result[way] = {"files": shares, "chunks": chunks,
                       "share_with_section": round(with_path / chunks, 3) if chunks else 0.0}
        if not args.no_retrieval:
            result[way]["retrieval"] = retrieval(files, overrides)
    result["load_after"] = os.getloadavg()
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
