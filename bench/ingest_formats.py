"""Ingest throughput per format: how fast each reader turns a file into chunks (load + chunk, before embedding).

Usage: python bench/ingest_formats.py [--rows 20000] [--paragraphs 2000] [--slides 200] [--ocr-pages 4] [--repeats 3]

Each format gets a file made here with the library people write it with (python-docx, python-pptx, XlsxWriter,
the csv module, PIL for scans), holding the same kind of text. The baseline, measured in the same run, is that
text as Markdown (the cheapest reader). For every format the JSON gives the median seconds of ``--repeats`` runs
of ``load_bytes`` + ``chunk_document``, the chunks made, and the throughput in the format's unit: rows/s (sheets,
CSV), slides/s, paragraphs/s (Word), pages/s (PDF with a text layer is not made here: see bench/scale.py) and, for
scans, OCR seconds per page (the packaged PP-OCRv4 models on this machine's cores). Load average before and after.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import docx
import pptx
import xlsxwriter
from PIL import Image, ImageDraw, ImageFont

from ragstream.config import load_config
from ragstream.documents import chunk_document, load_bytes

CONFIG = load_config()
WORDS = ("keeper lamp tower fog signal relief boat stores oil wick lens gallery storm tide rock station log "
         "beacon harbour chart").split()


def sentence(index: int, words: int = 12) -> str:
    return " ".join(WORDS[(index * 7 + k) % len(WORDS)] for k in range(words)).capitalize() + f" {index}."


def markdown(paragraphs: int) -> bytes:
    blocks = []
    for index in range(paragraphs):
        if index % 20 == 0:
            blocks.append(f"## Section {index // 20}")
        blocks.append(sentence(index, 30))
    return "\n\n".join(blocks).encode()


def word(paragraphs: int) -> bytes:
    document = docx.Document()
    for index in range(paragraphs):
        if index % 20 == 0:
            document.add_heading(f"Section {index // 20}", level=2)
        document.add_paragraph(sentence(index, 30))
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def slides(count: int) -> bytes:
    deck = pptx.Presentation()
    for index in range(count):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide {index}: {sentence(index, 4)}"
        frame = slide.placeholders[1].text_frame
        frame.text = sentence(index)
        for line in range(3):
            frame.add_paragraph().text = sentence(index + line + 1)
        slide.notes_slide.notes_text_frame.text = sentence(index + 9, 20)
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def rows(count: int) -> list[list[Any]]:
    return [["Day", "Station", "Keeper", "Barrels", "Entry"]] + [
        [index, f"Station {index % 40}", f"Keeper {index % 9}", index % 50, sentence(index, 6)] for index in range(count)]


def sheet(count: int) -> bytes:
    buffer = io.BytesIO()
    book = xlsxwriter.Workbook(buffer, {"in_memory": True, "constant_memory": True})
    log = book.add_worksheet("Log")
    for index, row in enumerate(rows(count)):
        log.write_row(index, 0, row)
    book.close()
    return buffer.getvalue()


def comma_separated(count: int) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows(count))
    return buffer.getvalue().encode()


def scan(pages: int) -> bytes:
    font = ImageFont.load_default(size=36)
    images = []
    for page in range(pages):
        image = Image.new("L", (1240, 1754), 255)  # A4 at 150 dpi
        draw = ImageDraw.Draw(image)
        for line in range(30):
            draw.text((90, 100 + line * 52), sentence(page * 30 + line, 8), fill=0, font=font)
        images.append(image)
    buffer = io.BytesIO()
    images[0].save(buffer, "PDF", resolution=150, save_all=True, append_images=images[1:])
    return buffer.getvalue()


def measure(data: bytes, name: str, repeats: int, *, warm_up: bytes | None = None) -> tuple[float, int, int]:
    """Median seconds of load + chunk, the chunks made and the characters of text read, after one untimed run
    (of ``warm_up`` when given, else of ``data``) that imports the reader and loads any model."""
    load_bytes(warm_up or data, name, CONFIG, source=f"/bench/warm-up/{name}")
    times, chunks, chars = [], 0, 0
    for _ in range(repeats):
        started = time.perf_counter()
        doc = load_bytes(data, name, CONFIG, source=f"/bench/{name}")
        chunks = len(chunk_document(doc, CONFIG.chunking))
        times.append(time.perf_counter() - started)
        chars = len(doc.text)
    return statistics.median(times), chunks, chars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--paragraphs", type=int, default=2_000)
    parser.add_argument("--slides", type=int, default=200)
    parser.add_argument("--ocr-pages", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cases: list[tuple[str, str, Callable[[], bytes], str, int, int]] = [
        ("markdown (baseline)", "handbook.md", lambda: markdown(args.paragraphs), "paragraphs", args.paragraphs,
         args.repeats),
        ("docx", "handbook.docx", lambda: word(args.paragraphs), "paragraphs", args.paragraphs, args.repeats),
        ("pptx", "deck.pptx", lambda: slides(args.slides), "slides", args.slides, args.repeats),
        ("xlsx", "log.xlsx", lambda: sheet(args.rows), "rows", args.rows, args.repeats),
        ("csv", "log.csv", lambda: comma_separated(args.rows), "rows", args.rows, args.repeats),
        ("scanned pdf (OCR)", "scan.pdf", lambda: scan(args.ocr_pages), "pages", args.ocr_pages, 1),
    ]
    load_before = os.getloadavg()
    results: dict[str, dict[str, Any]] = {}
    for label, name, make, unit, units, repeats in cases:
        data = make()
        ocr = unit == "pages"
        warm_up = scan(1) if ocr else None
        started = time.perf_counter()
        seconds, chunks, chars = measure(data, name, repeats, warm_up=warm_up)
        if ocr:  # the untimed run: model load plus one page
            results["ocr model load + first page"] = {"seconds": round(time.perf_counter() - started - seconds, 2)}
        results[label] = {"file_bytes": len(data), unit: units, "chunks": chunks, "seconds": round(seconds, 3),
                          f"{unit}_per_second": round(units / seconds, 1), "chars_per_second": round(chars / seconds)}
        if ocr:
            results[label]["ocr_seconds_per_page"] = round(seconds / units, 2)
    baseline = results["markdown (baseline)"]["chars_per_second"]
    for result in results.values():
        if "chars_per_second" in result:
            result["chars_per_second_vs_markdown"] = round(result["chars_per_second"] / baseline, 3)
    print(json.dumps({"formats": results, "cores": os.cpu_count(), "ocr_render_dpi": CONFIG.ocr.render_dpi,
                      "load_average_before": [round(x, 2) for x in load_before],
                      "load_average_after": [round(x, 2) for x in os.getloadavg()]}, indent=2))


if __name__ == "__main__":
    main()
