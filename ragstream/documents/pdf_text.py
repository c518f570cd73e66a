"""Text extraction from PDF bytes with pypdf, one page at a time, and the document's title.

The title is the first of: the metadata title (unless it is empty, ``untitled`` or a file
name), the outline's entry when the outline has a single top-level entry (the document
itself; the outline is walked within ``pdf.max_outline_entries`` and ``pdf.max_outline_depth``),
the display line of the first page (its largest type, when that is at least
``title_size_ratio`` times the body type), and the first text line. Generic headings
(``Contents``, ``Abstract``) are never a title; with none left the loader uses the file name.
With ``pdf.structure`` each page's headings and tables are written as Markdown
(:mod:`~ragstream.documents.pdf_structure`, :mod:`~ragstream.documents.pdf_tables`).
"""

from __future__ import annotations

import bisect
import io
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pypdf import PdfReader
from pypdf.errors import DependencyError

from ragstream.config.pdf import PdfConfig
from ragstream.documents.document_titles import is_document_title
from ragstream.documents.pdf_outline import OutlineEntry, read_outline
from ragstream.documents.pdf_structure import LineCollector, TextLine, structured_pages
from ragstream.documents.pdf_tables import FoundTables, find_tables
from ragstream.errors import CorruptDocumentError, DocumentTooLargeError, EmptyDocumentError, EncryptedDocumentError
from ragstream.models import Page


@dataclass(frozen=True)
class PdfText:
    """The pages that have text (1-based numbers kept), the title, if any, and the pages without a text layer."""

    pages: tuple[Page, ...]
    title: str | None
    blank: tuple[int, ...] = ()
    warnings: tuple[str, ...] = ()


# Headings that name a part of a document, never the document.
_TREE_NODES_PER_PAGE = 2  # a balanced page tree has fewer inner nodes than pages; more is a crafted tree


def display_line(fragments: list[tuple[float, str]], ratio: float) -> str | None:
    """The first run of the largest type among ``fragments`` (size, text), when it is ``ratio`` times the body type
    or more."""
    if not fragments:
        return None
    chars: Counter[float] = Counter()
    for size, text in fragments:
        chars[size] += len(text)
    body = chars.most_common(1)[0][0]
    largest = max(chars)
    if body <= 0 or largest < body * ratio:
        return None
    run: list[str] = []
    for size, text in fragments:
        if size == largest:
            run.append(text)
        elif run:
            break
    return " ".join(" ".join(run).split())


def extract_pdf(data: bytes, name: str, *, title_size_ratio: float, max_pages: int | None = None,
                max_chars: int | None = None, allow_blank: bool = False,
                structure: PdfConfig | None = None) -> PdfText:
    """Read every page's text; pages without text are skipped but keep their numbers.

    The title follows the order in the module doc; ``title_size_ratio`` is how much larger
    than the body type a first-page line must be to count as the display line. ``structure`` (default:
    :class:`PdfConfig`'s defaults) bounds the outline walk and, with ``structure.structure`` on, has each page's
    headings written as ``#`` lines (:mod:`~ragstream.documents.pdf_structure`: from the outline, else from the type).

    Raises :class:`EncryptedDocumentError` when an empty password does not open the file,
    :class:`CorruptDocumentError` when pypdf cannot parse it, :class:`EmptyDocumentError`
    when no page has text (e.g. a scan without a text layer) unless ``allow_blank`` (then the
    caller reads ``blank`` by OCR) and :class:`DocumentTooLargeError` when the page tree holds
    more than ``max_pages`` pages (counted before any page is read) or the text passes
    ``max_chars`` (extraction stops there).
    """
    reader = _open(data, name)
    settings = structure or PdfConfig()
    blank: list[int] = []
    try:
        if max_pages is not None:
            count_pages(reader, max_pages, name)
        read = list(_pages(reader, settings.bold_font_markers, max_chars, name, blank))
        outline = read_outline(reader, max_entries=settings.max_outline_entries, max_depth=settings.max_outline_depth)
        tables = find_tables(data, [page.number for page in read], name, settings) if settings.structure else None
        texts = _texts(read, outline, settings, tables)
        first = read[0].text.strip() if read else ""
        top = [entry.title for entry in outline if entry.level == 1]
        candidates = [
            (reader.metadata.title or "") if reader.metadata else "",
            top[0] if len(top) == 1 else "",
            display_line(read[0].fragments, title_size_ratio) or "" if read and read[0].number == 1 else "",
            *first.splitlines()[:1],
        ]
    except DocumentTooLargeError:
        raise
    # pypdf raises many exception types (KeyError, ValueError, zlib.error, ...) on damaged files.
    except Exception as exc:
        raise CorruptDocumentError(f"{name}: cannot read PDF: {exc}") from exc
    pages = tuple(Page(number=page.number, text=text) for page, text in zip(read, texts, strict=True))
    if not pages and not allow_blank:
        raise EmptyDocumentError(f"{name}: the PDF has no extractable text (scanned images?)")
    title = next((title for title in map(_tidy, candidates) if is_document_title(title)), None)
    return PdfText(pages=pages, title=title, blank=tuple(blank), warnings=tuple(tables.warnings) if tables else ())


@dataclass(frozen=True)
class _ReadPage:
    """A page with text: its number, its text as pypdf extracts it, its lines with their type and its runs."""

    number: int
    text: str
    lines: list[TextLine]
    fragments: list[tuple[float, str]]


def _texts(read: list[_ReadPage], outline: list[OutlineEntry], structure: PdfConfig,
           tables: FoundTables | None) -> list[str]:
    """The pages' texts: as extracted, or with their headings and tables when ``structure`` says so."""
    if not structure.structure:
        return [page.text for page in read]
    numbers = [page.number for page in read]
    placed = []
    for entry in outline:  # a bookmark of a page without text heads the next page that has some
        index = bisect.bisect_left(numbers, entry.page)
        if index < len(numbers):
            placed.append((entry, index))
    found = [tables.pages.get(page.number, []) for page in read] if tables is not None else None
    return structured_pages([page.lines for page in read], placed, structure, found)


def count_pages(reader: PdfReader, limit: int, name: str) -> int:
    """The pages of the page tree, counted by walking it (a page referenced twice counts twice, as a
    reader shows it); raises DocumentTooLargeError past ``limit`` pages or a tree too big for them."""
    root: Any = reader.trailer["/Root"]
    stack: list[Any] = [root["/Pages"]]
    pages = nodes = 0
    while stack:
        node = stack.pop().get_object()
        nodes += 1
        if nodes > limit * _TREE_NODES_PER_PAGE + 1:
            raise DocumentTooLargeError(f"{name}: the PDF page tree is larger than {limit} pages allow")
        kids = node.get("/Kids") if hasattr(node, "get") else None
        if kids is None:
            pages += 1
            if pages > limit:
                raise DocumentTooLargeError(f"{name}: the PDF has more than {limit} pages (limits.max_pdf_pages)")
        else:
            stack.extend(kids)
    return pages


def _pages(reader: PdfReader, markers: Sequence[str], max_chars: int | None, name: str,
           blank: list[int]) -> Iterator[_ReadPage]:
    """The pages with text, stopping with DocumentTooLargeError once their text passes ``max_chars``; the numbers
    of pages without text go to ``blank``."""
    total = 0
    for number, page in enumerate(reader.pages, start=1):
        collector = LineCollector(markers)
        text = (page.extract_text(visitor_text=collector.visit) or "").strip()
        total += len(text)
        if max_chars is not None and total > max_chars:
            raise DocumentTooLargeError(f"{name}: more than {max_chars} characters of text (limits.max_document_chars)")
        if text:
            yield _ReadPage(number, text, collector.finish(), collector.fragments)
        else:
            blank.append(number)


def _tidy(title: str) -> str:
    return " ".join(title.split())


def _open(data: bytes, name: str) -> PdfReader:
    """Parse the PDF structure and unlock it with the empty password if it is encrypted."""
    try:
        reader = PdfReader(io.BytesIO(data))
    except Exception as exc:
        raise CorruptDocumentError(f"{name}: cannot parse PDF: {exc}") from exc
    if not reader.is_encrypted:
        return reader
    try:
        unlocked = reader.decrypt("")
    except DependencyError as exc:
        raise EncryptedDocumentError(f"{name}: encrypted PDF needs an extra package to open: {exc}") from exc
    except Exception as exc:
        raise CorruptDocumentError(f"{name}: cannot decrypt PDF: {exc}") from exc
    if not unlocked:
        raise EncryptedDocumentError(f"{name}: the PDF is password-protected")
    return reader
