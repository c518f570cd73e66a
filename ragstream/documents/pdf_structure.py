"""A PDF page's text lines with their type, and its headings written as Markdown ``#`` lines.

Headings come from the outline (bookmarks) when the document has one: each entry's title is looked for on the
page it points at, in up to ``pdf.outline_title_lines`` consecutive lines after the previous heading of that page
(letters and digits compared, case and ligatures aside; a section number printed before the title is kept). A
title not found goes before the first line below the point the bookmark names, else on top of the page. Without an
outline they come from the type: a short line whose type is ``pdf.heading_size_ratio`` times the body type (the
size most characters of the document have) or more, or entirely bold; larger sizes are higher levels, a line
found on most pages (``pdf.heading_max_pages_share``) is a running header, and consecutive heading lines of one
level are one wrapped heading. The Markdown chunker then gives every chunk its section path and never lets one
cross a heading. A page line that would read as Markdown structure (``# x``, a code fence) is escaped.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragstream.config.pdf import PdfConfig
from ragstream.documents.markdown_structure import scan_lines
from ragstream.documents.pdf_outline import OutlineEntry
from ragstream.documents.pdf_tables import PageTable

_SIZE_DECIMALS = 1  # type sizes closer than 0.1 pt are one size
_DEEPEST_HEADING = 6
# What may stand right before a bookmark's title on its line: a section number (1, 2.3., IV, A, A.1), or a name.
_SECTION_NUMBER = re.compile(r"(?:(?<=\s)|^)(?:\d+(?:\.\d+)*|[IVXLC]+|[A-Z](?:\.\d+)*)\.?$")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class TextLine:
    """One line of a page's extracted text with the type most of its characters have."""

    text: str
    size: float = 0.0
    bold: bool = False
    y: float | None = None
    x: float | None = None
    markdown: bool = False  # a table written as Markdown: never escaped, never a heading


@dataclass
class LineCollector:
    """pypdf's ``visitor_text`` callback: the page's lines (exactly the lines of ``extract_text``) with their type,
    and the runs of text with their size (for the first page's display line)."""

    bold_markers: Sequence[str]
    lines: list[TextLine] = field(default_factory=list)
    fragments: list[tuple[float, str]] = field(default_factory=list)
    _parts: list[str] = field(default_factory=list)
    _sizes: Counter[float] = field(default_factory=Counter)
    _bold: int = 0
    _y: float | None = None
    _x: float | None = None

    def visit(self, text: str, cm: Sequence[float], tm: Sequence[float], font: Any, size: float) -> None:
        """Add a run of text drawn with ``font`` at ``size`` under the text and current matrices."""
        rendered = round(size * type_scale(tm, cm), _SIZE_DECIMALS)
        if text.strip():
            self.fragments.append((rendered, text.strip()))
        bold = _is_bold(font, self.bold_markers)
        x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
        y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        for position, piece in enumerate(text.split("\n")):
            if position:
                self._end_line()
            if piece:
                self._parts.append(piece)
                chars = len(piece.strip())
                self._sizes[rendered] += chars
                self._bold += chars if bold else 0
                if self._y is None and chars:
                    self._x, self._y = x, y

    def finish(self) -> list[TextLine]:
        """The page's lines (the last one closed)."""
        self._end_line()
        return self.lines

    def _end_line(self) -> None:
        chars = sum(self._sizes.values())
        size = self._sizes.most_common(1)[0][0] if chars else 0.0
        self.lines.append(TextLine("".join(self._parts), size, bool(chars) and self._bold * 2 > chars, self._y,
                                   self._x))
        self._parts, self._sizes, self._bold, self._y, self._x = [], Counter(), 0, None, None


def type_scale(tm: Sequence[float], cm: Sequence[float]) -> float:
    """How much the text and current matrices scale type (the root of the determinant)."""
    a = tm[0] * cm[0] + tm[1] * cm[2]
    b = tm[0] * cm[1] + tm[1] * cm[3]
    c = tm[2] * cm[0] + tm[3] * cm[2]
    d = tm[2] * cm[1] + tm[3] * cm[3]
    return math.sqrt(abs(a * d - b * c))


def structured_pages(pages: list[list[TextLine]], outline: list[tuple[OutlineEntry, int]],
                     config: PdfConfig, tables: list[list[PageTable]] | None = None) -> list[str]:
    """Each page's text with its headings as ``#`` lines: from ``outline`` (entries with the index in ``pages`` of
    the page they point at) when it has entries, else from the type; each page's ``tables`` as Markdown tables in
    place of the lines inside their boxes."""
    if tables is not None:
        pages = [_with_tables(lines, found) for lines, found in zip(pages, tables, strict=True)]
    if outline:
        by_page: dict[int, list[OutlineEntry]] = {}
        for entry, index in outline:
            by_page.setdefault(index, []).append(entry)
        return [_place_outline(lines, by_page.get(index, []), config.outline_title_lines)
                for index, lines in enumerate(pages)]
    return _type_headings(pages, config)


def _with_tables(lines: list[TextLine], tables: list[PageTable]) -> list[TextLine]:
    """``lines`` with those inside a table's box replaced by the table (a Markdown block where its first line was;
    a table none of whose lines was seen goes where its top says)."""
    if not tables:
        return lines
    out: list[TextLine] = []
    placed: set[int] = set()
    for line in lines:
        inside = next((index for index, found in enumerate(tables) if found.holds(line.x, line.y)), None)
        for index, found in enumerate(tables):
            if index not in placed and inside is None and line.y is not None and line.text.strip() and line.y < found.bottom:
                placed.add(index)  # the page went past this table without a line inside it
                out.append(_table_line(found))
        if inside is None:
            out.append(line)
        elif inside not in placed:
            placed.add(inside)
            out.append(_table_line(tables[inside]))
    out.extend(_table_line(found) for index, found in enumerate(tables) if index not in placed)
    return out


def _table_line(found: PageTable) -> TextLine:
    return TextLine(f"\n{found.markdown}\n", markdown=True)


def plain_page(lines: list[TextLine]) -> str:
    """A page's text without headings, lines that read as Markdown structure escaped."""
    return _render([_escape(line) for line in lines])


def _place_outline(lines: list[TextLine], entries: list[OutlineEntry], span: int) -> str:
    """The page with each bookmark of ``entries`` (in outline order) as a heading line."""
    out: list[str | None] = [_escape(line) for line in lines]
    inserts: dict[int, list[str]] = {}
    cursor = 0
    for entry in entries:
        level = min(entry.level, _DEEPEST_HEADING)
        found = _find_title(lines, entry.title, cursor, span)
        if found is not None:
            start, end, before, printed = found
            out[start] = "\n".join([*([_escape(TextLine(before))] if before else []), _heading(level, printed)])
            for index in range(start + 1, end):
                out[index] = None
            cursor = end
            continue
        position = _below(lines, entry.top, cursor)
        inserts.setdefault(position, []).append(_heading(level, entry.title))
        cursor = position
    result: list[str] = []
    for index, text in enumerate(out):
        result.extend(inserts.get(index, []))
        if text is not None:
            result.append(text)
    result.extend(inserts.get(len(out), []))
    return _render(result)


def _find_title(lines: list[TextLine], title: str, start: int, span: int) -> tuple[int, int, str, str] | None:
    """Where ``title`` is printed from line ``start`` on, in at most ``span`` lines: the first and past-the-last
    line, the text before the heading on its first line (a page number run into it) and the heading as printed
    (with its section number). A line that is the title alone wins over one with a section number before it,
    which wins over one with more text before the number (a running header: ``7 1.2. METRIC SPACES``)."""
    letters = [char for char in unicodedata.normalize("NFKC", title) if char.isalnum()]
    if not letters:
        return None
    pattern = re.compile(r"\W*".join(map(re.escape, letters)) + r"\W*$", re.IGNORECASE)
    best: tuple[int, tuple[int, int, str, str]] | None = None
    for first in range(start, len(lines)):
        joined = ""
        for last in range(first, min(first + span, len(lines))):
            if lines[last].markdown:
                break
            joined = " ".join(f"{joined} {unicodedata.normalize('NFKC', lines[last].text)}".split())
            match = pattern.search(joined)
            if match is None:
                continue
            before = joined[: match.start()].strip()
            number = _SECTION_NUMBER.search(before)
            rank = 0 if not before else 1 if number is not None and number.start() == 0 else 2
            if number is None and before:
                continue
            junk = before[: number.start()].strip() if number is not None else ""
            printed = joined[number.start() if number is not None else match.start():]
            if best is None or rank < best[0]:
                best = (rank, (first, last + 1, junk, printed))
            break
        if best is not None and best[0] == 0:
            break
    return best[1] if best is not None else None


def _below(lines: list[TextLine], top: float | None, start: int) -> int:
    """The index of the first line from ``start`` whose baseline lies below ``top`` (``start`` without a top)."""
    if top is None:
        return start
    for index in range(start, len(lines)):
        y = lines[index].y
        if y is not None and lines[index].text.strip() and y <= top:
            return index
    return len(lines)


def _type_headings(pages: list[list[TextLine]], config: PdfConfig) -> list[str]:
    """Every page with its type-based headings."""
    sizes: Counter[float] = Counter()
    for lines in pages:
        for line in lines:
            if not line.markdown:
                sizes[line.size] += len(line.text.strip())
    if not sizes:
        return [plain_page(lines) for lines in pages]
    body = sizes.most_common(1)[0][0]
    candidates = [[_is_heading(line, body, config) for line in lines] for lines in pages]
    running = _running_headers(pages, candidates, config.heading_max_pages_share)
    large = sorted({line.size for lines, marks in zip(pages, candidates, strict=True)
                    for line, mark in zip(lines, marks, strict=True) if mark and line.size >= body * config.heading_size_ratio},
                   reverse=True)
    levels = {size: min(rank, config.heading_max_levels) for rank, size in enumerate(large, start=1)}
    bold_level = min(len(large) + 1, config.heading_max_levels)
    rendered = []
    for lines, marks in zip(pages, candidates, strict=True):
        out: list[str] = []
        previous_level: int | None = None
        for line, mark in zip(lines, marks, strict=True):
            if mark and _key(line.text) not in running:
                level = levels.get(line.size, bold_level)
                merged = f"{out[-1]} {line.text.strip()}" if previous_level == level and out else ""
                if merged and len(merged) - level - 1 <= config.heading_max_chars:
                    out[-1] = " ".join(merged.split())
                else:
                    out.append(_heading(level, line.text))
                previous_level = level
            else:
                out.append(_escape(line))
                previous_level = None if line.text.strip() else previous_level
        rendered.append(_render(out))
    return rendered


def _is_heading(line: TextLine, body: float, config: PdfConfig) -> bool:
    text = line.text.strip()
    if line.markdown or not text or len(text) > config.heading_max_chars or not any(char.isalpha() for char in text):
        return False
    if line.size >= body * config.heading_size_ratio:
        return True
    return config.heading_bold and line.bold and line.size >= body


def _running_headers(pages: list[list[TextLine]], candidates: list[list[bool]], share: float) -> set[str]:
    """Heading candidates (digits aside) found on more than ``share`` of the pages, and on more than one."""
    found: Counter[str] = Counter()
    for lines, marks in zip(pages, candidates, strict=True):
        found.update({_key(line.text) for line, mark in zip(lines, marks, strict=True) if mark})
    return {key for key, count in found.items() if count > 1 and count > share * len(pages)}


def _key(text: str) -> str:
    return _DIGITS.sub("", _letters(text))


def _letters(text: str) -> str:
    """Letters and digits only, case-folded, ligatures and accents composed as NFKC writes them."""
    return "".join(char for char in unicodedata.normalize("NFKC", text).casefold() if char.isalnum())


def _heading(level: int, title: str) -> str:
    return f"{'#' * level} {' '.join(title.split())}"


def _escape(line: TextLine) -> str:
    """A page line that Markdown would read as a heading or a code fence, with a backslash before it."""
    if line.markdown:
        return line.text
    scanned = scan_lines(line.text)[0]
    return "\\" + line.text.lstrip() if scanned.heading_level is not None or scanned.fence == "open" else line.text


def _render(lines: list[str]) -> str:
    return "\n".join(lines).strip()


def _is_bold(font: Any, markers: Sequence[str]) -> bool:
    name = str(font.get("/BaseFont", "")) if hasattr(font, "get") else ""
    return any(marker.lower() in name.lower() for marker in markers)
