"""What the worst file of each kind costs to read or refuse at the default limits: peak memory and seconds.

Usage: python bench/hostile_files.py [--only NAME ...] [--timeout 180]

Each file is made here with the makers of ``tests/support/hostile_files.py`` (the same files the tests refuse), written
to a temporary folder and read by ``load_bytes`` in a fresh child process (``ragstream`` as found on PYTHONPATH, so
the same script measures another checkout). For every file the JSON gives its size, the outcome (``read`` with the
characters of text, or the error code), the seconds of ``load_bytes``, the child's peak RSS in MB (VmHWM, imports included)
and whether it stayed within 500 MB and 60 s; a child still running after ``--timeout`` seconds is killed and
reported as ``timeout``. Load average before and after. OCR is not run (the huge PNG is refused from its header).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO / "tests"))

from support import hostile_files as hostile  # noqa: E402  (the test helpers, after the path above)
from support.office_files import handbook_docx  # noqa: E402

MAX_MB, MAX_SECONDS = 500, 60
MIB = 1024 * 1024
CHILD = r"""
import json, sys, time
from ragstream.config import load_config
from ragstream.documents import load_bytes
path, name = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
config = load_config()
started = time.perf_counter()
try:
    doc = load_bytes(data, name, config, source=name)
    outcome = {"outcome": "read", "chars": sum(len(page.text) for page in doc.pages)}
except Exception as error:  # the child reports what escaped, typed or not
    outcome = {"outcome": getattr(error, "code", type(error).__name__), "message": str(error)[:160]}
outcome["seconds"] = round(time.perf_counter() - started, 2)
# VmHWM: this process's own peak (ru_maxrss would carry the parent's peak over fork and exec)
peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
outcome["peak_rss_mb"] = peak_kb // 1024
print(json.dumps(outcome))
"""


def _csv_rows(rows: int, row_bytes: int) -> bytes:
    row = (b"keeper lamp tower fog signal," * (row_bytes // 29 + 1))[:row_bytes - 1] + b"\n"
    return b"a,b,c\n" + row * rows


def files() -> dict[str, Callable[[], bytes]]:
    """The worst file of each kind, by name (the suffix tells the reader)."""
    epub_one = hostile.epub([b"<html><body><p>The lamp.</p></body></html>"])
    return {
        "deep-spans.odt": lambda: hostile.deep_odt(5000, "span"),
        "deep-lists.odt": lambda: hostile.deep_odt(5000, "list"),
        "deep-sections.odt": lambda: hostile.deep_odt(5000, "section"),
        "odt-990k-paragraphs.odt": lambda: hostile.odt(b"<text:p>x</text:p>" * 990_000),
        "deflate64-types.docx": lambda: hostile.odd_entry(handbook_docx(), "[Content_Types].xml", "deflate64"),
        "broken-content.odt": lambda: hostile.odd_entry(hostile.deep_odt(3), "content.xml", "corrupt"),
        "encrypted-package.epub": lambda: hostile.odd_entry(epub_one, "OEBPS/book.opf", "encrypted"),
        "ods-99999-rows-4-columns.ods": lambda: hostile.ods(
            b"<table:table-row>" + b"<table:table-cell><text:p>k%d</text:p></table:table-cell>" % n * 4
            + b"</table:table-row>" for n in range(99_999)),
        "ods-250mib-empty-cells.ods": lambda: hostile.ods(
            [b"<table:table-row>" + b"<table:table-cell/>" * 1000 + b"</table:table-row>"] * 13_000),
        "one-line-50mib.csv": hostile.one_line_csv,
        "wide-rows-49mib.csv": lambda: _csv_rows(99_999, 490),
        "docx-1.85m-paragraphs.docx": hostile.many_paragraphs_docx,
        "docx-320k-paragraphs.docx": lambda: hostile.many_paragraphs_docx(320_000),
        "pptx-80k-shapes.pptx": lambda: hostile.many_shapes_pptx(80_000),
        "deep-40k-divs.html": lambda: hostile.nested_html(40_000),
        "deep-1m-divs.html": lambda: hostile.nested_html(1_000_000),
        "tags-50mib.html": lambda: b"<html><body>" + b"<b>x</b>" * ((50 * MIB - 1024) // 8) + b"</body></html>",
        "deep-40k-divs.epub": lambda: hostile.epub([hostile.nested_html(40_000)]),
        "huge-50000x50000.png": hostile.huge_png,
    }


def measure(path: Path, timeout: float) -> dict[str, object]:
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, str(path), path.name], capture_output=True, text=True,
                              timeout=timeout, cwd=path.parent)  # not the checkout: PYTHONPATH picks ragstream
    except subprocess.TimeoutExpired:
        return {"outcome": "timeout", "seconds": timeout}
    if done.returncode != 0:
        return {"outcome": f"crashed ({done.returncode})", "stderr": done.stderr[-300:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", help="measure only these file names")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds before a child is killed")
    args = parser.parse_args()
    load_before = os.getloadavg()
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in files().items():
            if args.only and name not in args.only:
                continue
            path = Path(tmp) / name
            path.write_bytes(make())
            result = {"bytes": path.stat().st_size, **measure(path, args.timeout)}
            rss, seconds = result.get("peak_rss_mb"), result.get("seconds")
            result["within_bounds"] = (isinstance(rss, int) and rss <= MAX_MB and isinstance(seconds, float | int)
                                       and seconds <= MAX_SECONDS)
            results[name] = result
            path.unlink()
            print(name, json.dumps(result), file=sys.stderr, flush=True)
    print(json.dumps({"files": results, "all_within_bounds": all(r["within_bounds"] for r in results.values()),
                      "bounds": {"peak_rss_mb": MAX_MB, "seconds": MAX_SECONDS},
                      "load_average_before": load_before, "load_average_after": os.getloadavg()}, indent=2))


if __name__ == "__main__":
    main()
