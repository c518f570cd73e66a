"""EPUB: zipped XHTML read through the HTML loader, one page per chapter in reading (spine) order.

``META-INF/container.xml`` names the package document (OPF); its spine lists the chapters and its
``dc:title`` is the title. Each chapter goes through :func:`~ragstream.documents.html_text.html_to_text`,
so its headings become ``header_path`` as in any HTML page. Scripts in the book are dropped, never run.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from urllib.parse import unquote
from xml.etree import ElementTree

from ragstream.documents.html_text import html_to_text
from ragstream.documents.office.text import Extracted, pick_title
from ragstream.errors import CorruptDocumentError
from ragstream.models import Page

_CONTAINER = "META-INF/container.xml"
_CONTAINER_NS = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF_NS = "{http://www.idpf.org/2007/opf}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_CHAPTER_TYPES = frozenset({"application/xhtml+xml", "text/html"})


def read_epub(data: bytes, name: str) -> Extracted:
    """The book's chapters as Markdown pages and its title; :class:`CorruptDocumentError` when unreadable."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as book:
            opf_path = _package_path(book)
            opf = ElementTree.fromstring(book.read(opf_path))
            base = posixpath.dirname(opf_path)
            manifest = {item.get("id"): item for item in opf.iter(f"{_OPF_NS}item")}
            pages: list[Page] = []
            for itemref in opf.iter(f"{_OPF_NS}itemref"):
                item = manifest.get(itemref.get("idref"))
                if item is None or item.get("media-type") not in _CHAPTER_TYPES:
                    continue
                path = posixpath.normpath(posixpath.join(base, unquote(item.get("href", ""))))
                chapter = html_to_text(book.read(path).decode("utf-8", errors="replace"))
                if chapter.text.strip():
                    pages.append(Page(number=None, text=chapter.text))
            title_element = opf.find(f".//{_DC_TITLE}")
    except (KeyError, zipfile.BadZipFile, ElementTree.ParseError, ValueError, OSError) as exc:
        raise CorruptDocumentError(f"{name}: cannot read the EPUB book: {exc}") from exc
    title = title_element.text if title_element is not None else None
    return Extracted(pages=tuple(pages), title=pick_title(title))


def _package_path(book: zipfile.ZipFile) -> str:
    container = ElementTree.fromstring(book.read(_CONTAINER))
    rootfile = container.find(f".//{_CONTAINER_NS}rootfile")
    if rootfile is None or not rootfile.get("full-path"):
        raise ValueError("META-INF/container.xml names no package document")
    return str(rootfile.get("full-path"))
