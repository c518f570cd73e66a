"""A corpus of well over 100 documents for the web UI's tests and screenshots (not a test module).

SciFact abstracts written as Markdown files (title as the H1), the httpx documentation from
``shared/data/markdown_docs``, the FastAPI-shaped pages of :mod:`fastapi_corpus` and two PDFs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from support.fastapi_corpus import write_corpus

SCIFACT_DOCS = 110
PDFS = ("google-doc-document.pdf", "federal-register-2020-17221.pdf")


def write_ui_corpus(root: Path, shared_data: Path, scifact_docs: int = SCIFACT_DOCS) -> Path:
    """Write the corpus under ``root``; returns ``root``."""
    abstracts = root / "scifact"
    abstracts.mkdir(parents=True, exist_ok=True)
    with (shared_data / "scifact" / "corpus.jsonl").open(encoding="utf-8") as lines:
        for _, line in zip(range(scifact_docs), lines, strict=False):
            doc = json.loads(line)
            title = " ".join(doc["title"].split()).rstrip(".")
            (abstracts / f"scifact-{doc['_id']}.md").write_text(f"# {title}\n\n{doc['text']}\n", encoding="utf-8")
    shutil.copytree(shared_data / "markdown_docs" / "httpx", root / "httpx")
    write_corpus(root / "fastapi")
    (root / "pdfs").mkdir(exist_ok=True)
    for name in PDFS:
        shutil.copy(shared_data / "pdfs" / name, root / "pdfs" / name)
    return root


def corpus_size(root: Path) -> int:
    """Documents under ``root`` (Markdown and PDF files)."""
    return sum(1 for path in root.rglob("*") if path.suffix in {".md", ".pdf"})
