"""A BEIR-form dataset whose documents are files (``files/``, e.g. PDF manuals), judged per page: ``FILE#pN``.

The files are read by ragstream's own loaders (a generated text PDF, a Markdown note) and every retrieved chunk
counts for its file's page, so a hit is a chunk of the right file on a gold page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from support.pdf_files import lines_pdf

from ragstream import Ragstream
from ragstream.errors import DocumentError
from ragstream.evaluation.beir import evaluate_retrieval, load_beir

PAGES = [
    ["Installing the widget takes one command.", "Run the installer from the download folder."],
    ["The flux capacitor needs calibration every spring.", "Turn the brass knob clockwise until it hums."],
    ["Warranty claims go to the regional office.", "Keep the receipt of purchase with the serial number."],
]
QUERIES = {
    "q1": "flux capacitor calibration brass knob",  # page 2 of the manual
    "q2": "warranty claims receipt serial number",  # page 3
    "q3": "gardening roses pruning shears",  # the Markdown note, judged as a whole file
    "q4": "installer download folder",  # on page 1, but judged on page 3: a miss
}
QRELS = {"q1": "manual.pdf#p2", "q2": "manual.pdf#p3", "q3": "notes.md", "q4": "manual.pdf#p3"}


def _dataset(root: Path) -> Path:
    directory = root / "tiny-manual"
    (directory / "files").mkdir(parents=True)
    (directory / "files" / "manual.pdf").write_bytes(lines_pdf(PAGES, title="Widget manual"))
    (directory / "files" / "notes.md").write_text("# Garden notes\n\nPrune the roses with sharp pruning shears.\n")
    (directory / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items()))
    (directory / "qrels").mkdir()
    rows = "".join(f"{q}\t{doc}\t1\n" for q, doc in QRELS.items())
    (directory / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
    return directory


def test_a_dataset_of_files_is_ingested_as_files_and_scored_per_page(
        tmp_path: Path, make_fast_index: Callable[..., Ragstream]):
    dataset = load_beir(_dataset(tmp_path), "test")
    assert dataset.files_dir is not None and dataset.files_dir.name == "files"

    rs = make_fast_index()
    result = evaluate_retrieval(rs, dataset, modes=("bm25",))

    assert result.ingest["documents_processed"] == 2
    assert {record.mime for record in rs.documents()} == {"application/pdf", "text/markdown"}
    # q1..q3 find their gold page (or file) first; q4's words are on page 1, judged on page 3 only
    assert result.metrics["bm25"]["hit_rate@1"] == 0.75
    assert result.queries == 4


def test_a_file_ragstream_cannot_read_is_refused_with_its_code(tmp_path: Path):
    directory = _dataset(tmp_path)
    (directory / "files" / "blob.bin").write_bytes(bytes(range(256)) * 4)
    dataset = load_beir(directory, "test")
    with pytest.raises(DocumentError) as caught:
        list(dataset.documents())
    assert caught.value.code == "unsupported_file_type" and "blob.bin" in str(caught.value)
