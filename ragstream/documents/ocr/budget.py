"""The bounds on one document's OCR: pages and seconds (``ocr.max_pages``, ``ocr.max_seconds_per_document``)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

from ragstream.config import OcrConfig


class OcrBudget:
    """Hands out page numbers to OCR until the page or time budget is spent; then says what was left unread."""

    def __init__(self, config: OcrConfig, name: str) -> None:
        self._config = config
        self._name = name
        self._deadline = time.monotonic() + config.max_seconds_per_document
        self.unread: list[int] = []
        self._reason = ""

    def pages(self, numbers: Iterable[int]) -> Iterator[int]:
        """``numbers`` while the budget lasts; the rest go to ``unread``. The first page is always read (so a bound
        never leaves a scan without text) and a page already started finishes."""
        done = 0
        for number in numbers:
            if done >= self._config.max_pages:
                self._reason = f"ocr.max_pages = {self._config.max_pages}"
            elif done and time.monotonic() >= self._deadline:
                self._reason = f"ocr.max_seconds_per_document = {self._config.max_seconds_per_document:g}"
            if self._reason:
                self.unread.append(number)
                continue
            done += 1
            yield number

    def warnings(self) -> tuple[str, ...]:
        """A warning naming the pages left unread and the bound that stopped OCR, if any."""
        if not self.unread:
            return ()
        return (f"{self._name}: {len(self.unread)} scanned page(s) left unread by OCR ({_ranges(self.unread)}), "
                f"stopped by {self._reason}",)


def _ranges(numbers: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``pages 3-5, 9``."""
    spans: list[list[int]] = []
    for number in numbers:
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    text = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in spans)
    return f"page{'s' if len(numbers) > 1 else ''} {text}"
