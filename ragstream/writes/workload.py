"""Which uploads a background job ingests: the work a request's files will cost, judged from their stored
bytes before any reader runs.

A request goes to a job (202 with the job id) when its files together take more than
``server.background_ingest_bytes``; when its zipped documents (Office, OpenDocument, EPUB) together declare
they unpack to more than ``server.background_unpacked_bytes`` (a few hundred KB of .docx may hold many MB of
XML); or, when OCR is on, when they hold more than ``server.background_ocr_pages`` pages for OCR (PDF pages
without fonts: scans; image frames). A file these checks cannot read (a damaged one) adds nothing: its ingest
refuses it quickly with its own error.
"""

from __future__ import annotations

import io
import logging
import warnings
import zipfile
from pathlib import Path

from ragstream.config import RagstreamConfig
from ragstream.documents import mimes
from ragstream.documents.ocr import ocr_installed
from ragstream.documents.office import archive
from ragstream.documents.sniff import sniff_mime

logger = logging.getLogger("ragstream.server")  # the name its log lines always had


def background_reason(paths: list[tuple[Path, str]], received: int, config: RagstreamConfig) -> str | None:
    """Why the stored files ``paths`` (each with its display name) of a request that sent ``received`` bytes of
    files go to a background job, or None: ingest them in the request."""
    server = config.server
    sizes = [_size(path) for path, _ in paths]
    if max(received, sum(sizes)) > server.background_ingest_bytes:  # else each read below is under this many bytes
        return f"the files take more than {server.background_ingest_bytes} bytes (server.background_ingest_bytes)"
    ocr = config.ocr.enabled and ocr_installed()
    unpacked = ocr_pages = 0
    for path, name in paths:
        try:
            data = path.read_bytes()
            if archive.is_zip(data):  # its entries are never inflated here
                unpacked += _unpacked(data, config)
            elif ocr:
                ocr_pages += _ocr_pages(data, name, config, server.background_ocr_pages - ocr_pages)
        except Exception:  # a file the checks cannot read is refused quickly by its ingest
            logger.debug("%s: the work estimate could not read the file", name, exc_info=True)
        if ocr_pages > server.background_ocr_pages:
            return f"the files hold more than {server.background_ocr_pages} pages to OCR (server.background_ocr_pages)"
    if unpacked > server.background_unpacked_bytes:
        return (f"the zipped documents unpack to more than {server.background_unpacked_bytes} bytes "
                "(server.background_unpacked_bytes)")
    return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _ocr_pages(data: bytes, name: str, config: RagstreamConfig, left: int) -> int:
    """The pages OCR would read in this file (counted up to one past ``left``): a PDF's pages without fonts (scans),
    an image's frames."""
    mime = sniff_mime(data, name)
    if mime in mimes.IMAGES:
        from PIL import Image

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(data)) as image:
                return int(getattr(image, "n_frames", 1))
    if mime != mimes.PDF:
        return 0
    from pypdf import PdfReader

    from ragstream.documents.pdf_text import count_pages

    reader = PdfReader(io.BytesIO(data))
    count_pages(reader, config.limits.max_pdf_pages, name)  # a page tree bomb stops here; its ingest refuses it
    scanned = 0
    for page in reader.pages:
        resources = page.get("/Resources")
        resources = resources.get_object() if resources is not None else None
        if not (resources and resources.get("/Font")):
            scanned += 1
            if scanned > left:
                break
    return scanned


def _unpacked(data: bytes, config: RagstreamConfig) -> int:
    """What a zipped document's entries declare they unpack to, its entry count checked first (from the zip's own
    records, as the loader does)."""
    limits = config.limits
    archive.check_archive(data, "upload", max_bytes=limits.max_archive_bytes, max_entries=limits.max_archive_entries)
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        return sum(info.file_size for info in package.infolist())
