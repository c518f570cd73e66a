"""One process-wide RapidOCR engine (PP-OCRv4 detection and recognition, loaded on first use) and the
layout step that turns its text boxes into lines of text in reading order."""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

_LOCK = threading.Lock()  # one recognition at a time: RapidOCR keeps per-call state on the engine
_SAME_LINE = 0.5  # boxes whose vertical centres are closer than half a box height share a line


@dataclass(frozen=True)
class OcrLine:
    """One recognised box: its text, confidence (0-1) and position (left, top, height) in pixels."""

    text: str
    confidence: float
    left: float
    top: float
    height: float


@dataclass(frozen=True)
class OcrText:
    """The text read from one image (lines in reading order) and how many boxes were dropped as unsure."""

    text: str
    kept: int
    dropped: int


@functools.cache
def _engine() -> Any:
    from rapidocr_onnxruntime import RapidOCR  # the ocr extra; callers checked it is installed

    return RapidOCR()


def recognise(image: Any, min_confidence: float) -> OcrText:
    """Read the text of a PIL ``image`` (RGB or greyscale); boxes scoring below ``min_confidence`` are dropped."""
    with _LOCK:
        result, _ = _engine()(image)
    lines = [_line(box, text, score) for box, text, score in (result or [])]
    kept = [line for line in lines if line.confidence >= min_confidence and line.text.strip()]
    return OcrText(text=layout(kept), kept=len(kept), dropped=len(lines) - len(kept))


def layout(boxes: list[OcrLine]) -> str:
    """Boxes as text: grouped into lines by their vertical centre, each line left to right."""
    rows: list[list[OcrLine]] = []
    for box in sorted(boxes, key=lambda line: (line.top + line.height / 2, line.left)):
        centre = box.top + box.height / 2
        if rows:
            last = rows[-1][0]
            if abs(centre - (last.top + last.height / 2)) < _SAME_LINE * max(last.height, box.height):
                rows[-1].append(box)
                continue
        rows.append([box])
    return "\n".join(" ".join(box.text.strip() for box in sorted(row, key=lambda line: line.left)) for row in rows)


def _line(box: Any, text: str, score: Any) -> OcrLine:
    xs = [float(point[0]) for point in box]
    ys = [float(point[1]) for point in box]
    return OcrLine(text=str(text), confidence=float(score), left=min(xs), top=min(ys), height=max(ys) - min(ys))
