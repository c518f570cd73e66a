"""EPUB: zipped XHTML read through the HTML loader, one page per chapter in reading (spine) order.

``META-INF/container.xml`` names the package document (OPF); its spine lists the chapters and its
``dc:title`` is the title. Each chapter goes through :func:`~ragstream.documents.html_text.html_to_text`,
so its headings become ``header_path`` as in any HTML page. Scripts in the book are dropped, never run.
"""

from __future__ import annotations

import posixpath
import zipfile
from urllib.parse import unquote

from ragstream.documents.bounds import ReadBounds
from ragstream.documents.html_text import html_to_text
from ragstream.documents.office.archive import open_zip, read_entry
from ragstream.documents.office.text import Extracted, pick_title
from ragstream.documents.office.xml_guard import parse_part
from ragstream.errors import CorruptDocumentError
from ragstream.models import Page

_CONTAINER = "META-INF/container.xml"
_WHAT = "EPUB book"
_CONTAINER_NS = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF_NS = "{http://www.idpf.org/2007/opf}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_CHAPTER_TYPES = frozenset({"application/xhtml+xml", "text/html"})


def read_epub(data: bytes, bounds: ReadBounds) -> Extracted:
    """The book's chapters as Markdown pages and its title; :class:`CorruptDocumentError` when unreadable.

    The package files are scanned within ``bounds`` before they are parsed; the chapters share its tags, characters
    and seconds (``limits.max_read_seconds`` bounds the whole book).
    """
    name = bounds.name
    with open_zip(data, name) as book:
        opf_path = _package_path(book, bounds)
        opf = parse_part(book, opf_path, bounds, what=_WHAT)
        base = posixpath.dirname(opf_path)
        manifest = {item.get("id"): item for item in opf.iter(f"{_OPF_NS}item")}
        pages: list[Page] = []
        for itemref in opf.iter(f"{_OPF_NS}itemref"):
            item = manifest.get(itemref.get("idref"))
            if item is None or item.get("media-type") not in _CHAPTER_TYPES:
                continue
            path = posixpath.normpath(posixpath.join(base, unquote(item.get("href", ""))))
            chapter = html_to_text(read_entry(book, path, name).decode("utf-8", errors="replace"), bounds)
            if chapter.text.strip():
                pages.append(Page(number=None, text=chapter.text))
        title_element = opf.find(f".//{_DC_TITLE}")
    title = title_element.text if title_element is not None else None
    return Extracted(pages=tuple(pages), title=pick_title(title))


def _package_path(book: zipfile.ZipFile, bounds: ReadBounds) -> str:
    container = parse_part(book, _CONTAINER, bounds, what=_WHAT)
    rootfile = container.find(f".//{_CONTAINER_NS}rootfile")
    if rootfile is None or not rootfile.get("full-path"):
        raise CorruptDocumentError(f"{bounds.name}: cannot read the EPUB book: META-INF/container.xml names no "
                                   "package document")
    return str(rootfile.get("full-path"))
