"""Which uploads a background job ingests: the work a request's files will cost, judged from their stored
bytes before any reader runs.

A request goes to a job (202 with the job id) when its files together take more than
``server.background_ingest_bytes``; when its zipped documents (Office, OpenDocument, EPUB) together declare
they unpack to more than ``server.background_unpacked_bytes`` (a few hundred KB of .docx may hold many MB of
XML); when it holds a PDF of more than ``server.background_pdf_pages`` pages (each may need OCR); or an image
of more than ``server.background_image_pixels`` pixels that OCR would read. A file these checks cannot read
(a damaged one) adds nothing: its ingest refuses it quickly with its own error.
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
from ragstream.errors import DocumentTooLargeError

logger = logging.getLogger("ragstream.server")


def background_reason(paths: list[tuple[Path, str]], received: int, config: RagstreamConfig) -> str | None:
    """Why the stored files ``paths`` (each with its display name) of a request that sent ``received`` bytes of
    files go to a background job, or None: ingest them in the request."""
    server = config.server
    sizes = [_size(path) for path, _ in paths]
    if max(received, sum(sizes)) > server.background_ingest_bytes:  # else each read below is under this many bytes
        return f"the files take more than {server.background_ingest_bytes} bytes (server.background_ingest_bytes)"
    unpacked = 0
    for path, name in paths:
        reason = None
        try:
            data = path.read_bytes()
            if archive.is_zip(data):  # its entries are never inflated here
                unpacked += _unpacked(data, config)
            else:
                reason = _heavy(data, name, config)
        except Exception:  # a file the checks cannot read is refused quickly by its ingest
            logger.debug("%s: the work estimate could not read the file", name, exc_info=True)
        if reason is not None:
            return reason
    if unpacked > server.background_unpacked_bytes:
        return (f"the zipped documents unpack to more than {server.background_unpacked_bytes} bytes "
                "(server.background_unpacked_bytes)")
    return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _heavy(data: bytes, name: str, config: RagstreamConfig) -> str | None:
    """Why this one file is too much work for a request (a long PDF, a large image to OCR), or None."""
    mime = sniff_mime(data, name)
    server = config.server
    if mime == mimes.PDF:
        from pypdf import PdfReader

        from ragstream.documents.pdf_text import count_pages

        try:
            count_pages(PdfReader(io.BytesIO(data)), server.background_pdf_pages, name)
        except DocumentTooLargeError:
            return f"{name} has more than {server.background_pdf_pages} pages (server.background_pdf_pages)"
    elif mime in mimes.IMAGES and config.ocr.enabled and ocr_installed():
        pixels = _image_pixels(data)
        if pixels > server.background_image_pixels:
            return (f"{name} needs OCR of {pixels} pixels, more than {server.background_image_pixels} "
                    "(server.background_image_pixels)")
    return None


def _image_pixels(data: bytes) -> int:
    """Pixels of every frame, from the image's header (no pixel is decoded)."""
    from PIL import Image

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            return width * height * getattr(image, "n_frames", 1)


def _unpacked(data: bytes, config: RagstreamConfig) -> int:
    """What a zipped document's entries declare they unpack to, its entry count checked first (from the zip's own
    records, as the loader does)."""
    limits = config.limits
    archive.check_archive(data, "upload", max_bytes=limits.max_archive_bytes, max_entries=limits.max_archive_entries)
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        return sum(info.file_size for info in package.infolist())
