"""Zipped documents (OOXML, OpenDocument, EPUB): the bound on zip bombs and what kind a package is.

The bound is checked on the zip's own records before any entry is decompressed: the entry count in
the end-of-central-directory record (read without building the directory), then the sizes every entry
declares. Python's zipfile never inflates an entry past its declared size (it stops there and the CRC
check fails), so declared sizes bound the work of every reader that opens the package.

Every entry ragstream reads itself goes through :func:`read_entry` or :func:`stream_entry`: an entry flagged
encrypted is ``encrypted_document``; one compressed with a method zipfile cannot inflate (Deflate64, bzip2 in an
odd variant...), a broken deflate stream or a failed CRC is ``corrupt_document``, never a RuntimeError,
NotImplementedError or zlib.error escaping to the caller.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import PurePath
from xml.etree import ElementTree

from ragstream.documents import mimes
from ragstream.errors import CorruptDocumentError, DocumentTooLargeError, EncryptedDocumentError, UnsupportedFileTypeError

ZIP_MAGIC = b"PK\x03\x04"
_EOCD = b"PK\x05\x06"
_EOCD_SIZE = 22
_MAX_COMMENT = 0xFFFF
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_LOCATOR_SIZE = 20
_ZIP64_EOCD = b"PK\x06\x06"
_ZIP64_MARK = 0xFFFF  # the 16-bit entry count of a zip64 archive

_CONTENT_TYPES = "[Content_Types].xml"
_CT_NS = "{http://schemas.openxmlformats.org/package/2006/content-types}"
# The main part of an OOXML package, by the words of its content type.
_OOXML_MAIN: tuple[tuple[tuple[str, ...], str], ...] = (
    (("wordprocessingml", "ms-word."), mimes.DOCX),
    (("presentationml", "ms-powerpoint."), mimes.PPTX),
    (("spreadsheetml", "ms-excel."), mimes.XLSX),
)
_OOXML_MAIN_SUFFIXES = (".main+xml",)
_ODF_MIMETYPES = {
    "application/vnd.oasis.opendocument.text": mimes.ODT,
    "application/vnd.oasis.opendocument.presentation": mimes.ODP,
    "application/vnd.oasis.opendocument.spreadsheet": mimes.ODS,
    "application/epub+zip": mimes.EPUB,
}
_MACRO_WORD = "macroenabled"
_ENCRYPTED_FLAG = 0x1  # bit 0 of a zip entry's general-purpose flags: the entry is encrypted
_CHUNK_BYTES = 1 << 20
OFFICE_SUFFIXES = frozenset({
    ".docx", ".docm", ".dotx", ".dotm", ".pptx", ".pptm", ".ppsx", ".ppsm", ".potx", ".xlsx", ".xlsm", ".xltx",
    ".xltm", ".odt", ".odp", ".ods", ".epub",
})


def is_zip(data: bytes) -> bool:
    """True when ``data`` starts like a zip archive."""
    return data.startswith(ZIP_MAGIC)


def check_archive(data: bytes, name: str, *, max_bytes: int, max_entries: int) -> None:
    """Refuse a zip with more than ``max_entries`` entries or more than ``max_bytes`` uncompressed.

    Raises :class:`DocumentTooLargeError` past a bound and :class:`CorruptDocumentError` for a zip
    whose directory cannot be read.
    """
    declared = _declared_entries(data)
    if declared is not None and declared > max_entries:
        raise _too_many(name, declared, max_entries)
    infos = _infolist(data, name)
    if len(infos) > max_entries:
        raise _too_many(name, len(infos), max_entries)
    total = sum(info.file_size for info in infos)
    if total > max_bytes:
        raise DocumentTooLargeError(f"{name}: the zip unpacks to {total} bytes, more than the limit of {max_bytes} "
                                    "(limits.max_archive_bytes; a zip bomb?)")


def package_kind(data: bytes, name: str) -> str:
    """The MIME type of a zipped document, decided by its content, never its name.

    OOXML: the main part's content type in ``[Content_Types].xml`` (a .docx that holds a workbook
    is a workbook); OpenDocument and EPUB: the ``mimetype`` entry. Another zip raises
    :class:`UnsupportedFileTypeError`; a damaged package :class:`CorruptDocumentError`.
    """
    with open_zip(data, name) as package:
        names = set(package.namelist())
        if _CONTENT_TYPES in names:
            return _ooxml_kind(read_entry(package, _CONTENT_TYPES, name), name)
        if "mimetype" in names:
            declared = read_entry(package, "mimetype", name).decode("ascii", "replace").strip()
            if declared in _ODF_MIMETYPES:
                return _ODF_MIMETYPES[declared]
            raise UnsupportedFileTypeError(f"{name}: detected a zipped package of type {declared or 'unknown'}; "
                                           "it is not a document type ragstream reads")
    raise UnsupportedFileTypeError(f"{name}: detected ZIP archive; archives are not documents (unpack it first)")


def is_macro_enabled(content_type: str) -> bool:
    """True for the content type of a macro-enabled main part (.docm, .pptm, .xlsm)."""
    return _MACRO_WORD in content_type.lower()


def main_content_type(data: bytes, name: str) -> str:
    """The content type of an OOXML package's main part (``...document.main+xml``)."""
    with open_zip(data, name) as package:
        return _main_part_type(read_entry(package, _CONTENT_TYPES, name), name)


def _ooxml_kind(content_types: bytes, name: str) -> str:
    main = _main_part_type(content_types, name).lower()
    if "binary" in main:
        raise UnsupportedFileTypeError(f"{name}: detected an Excel binary workbook (.xlsb); save it as .xlsx")
    for words, kind in _OOXML_MAIN:
        if any(word in main for word in words):
            return kind
    raise UnsupportedFileTypeError(f"{name}: detected an Office Open XML package of type {main}; only Word, "
                                   "PowerPoint and Excel documents are read")


def _main_part_type(content_types: bytes, name: str) -> str:
    try:
        root = ElementTree.fromstring(content_types)
    except ElementTree.ParseError as exc:
        raise CorruptDocumentError(f"{name}: the package's [Content_Types].xml cannot be read: {exc}") from exc
    for override in root.iter(f"{_CT_NS}Override"):
        content_type = override.get("ContentType", "")
        if content_type.endswith(_OOXML_MAIN_SUFFIXES) or content_type.endswith("binary.macroEnabled.main"):
            return content_type
    raise CorruptDocumentError(f"{name}: the Office package names no main document part")


def read_entry(package: zipfile.ZipFile, entry: str, name: str) -> bytes:
    """The bytes of ``entry`` in the document ``name``; any failure to inflate it is a typed document error."""
    with _guarded(package, entry, name):
        return package.read(entry)


def stream_entry(package: zipfile.ZipFile, entry: str, name: str) -> Iterator[bytes]:
    """The bytes of ``entry`` a megabyte at a time (a reader can stop early); failures as for :func:`read_entry`."""
    with _guarded(package, entry, name), package.open(entry) as stream:
        while chunk := stream.read(_CHUNK_BYTES):
            yield chunk


@contextmanager
def _guarded(package: zipfile.ZipFile, entry: str, name: str) -> Iterator[None]:
    """Turn what zipfile and zlib raise on an entry into :class:`EncryptedDocumentError` or :class:`CorruptDocumentError`."""
    try:
        info = package.getinfo(entry)
    except KeyError as exc:
        raise CorruptDocumentError(f"{name}: the package has no {entry}") from exc
    if info.flag_bits & _ENCRYPTED_FLAG:
        raise EncryptedDocumentError(f"{name}: the zip entry {entry} is encrypted (a password-protected zip); "
                                     "save an unprotected copy to index it")
    try:
        yield
    except NotImplementedError as exc:  # zipfile: "That compression method is not supported" (Deflate64...)
        raise CorruptDocumentError(f"{name}: the zip entry {entry} is compressed with a method that cannot be read "
                                   f"(method {info.compress_type}): {exc}") from exc
    except (zipfile.BadZipFile, zlib.error, RuntimeError, EOFError, OSError, ValueError) as exc:
        raise CorruptDocumentError(f"{name}: the zip entry {entry} cannot be inflated: {exc}") from exc


def open_zip(data: bytes, name: str) -> zipfile.ZipFile:
    """The zip; a damaged one is a corrupt document when named as one (.docx...), else an unsupported archive."""
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        if PurePath(name).suffix.lower() in OFFICE_SUFFIXES:
            raise CorruptDocumentError(f"{name}: the zip package is damaged: {exc}") from exc
        raise UnsupportedFileTypeError(f"{name}: detected ZIP archive (damaged); archives are not documents") from exc


def _infolist(data: bytes, name: str) -> list[zipfile.ZipInfo]:
    with open_zip(data, name) as package:
        return package.infolist()


def _declared_entries(data: bytes) -> int | None:
    """The entry count the end-of-central-directory record declares (zip64 too); None if not found."""
    start = max(0, len(data) - _EOCD_SIZE - _MAX_COMMENT)
    position = data.rfind(_EOCD, start)
    if position < 0 or position + _EOCD_SIZE > len(data):
        return None
    (entries,) = struct.unpack_from("<H", data, position + 10)
    if entries != _ZIP64_MARK:
        return int(entries)
    locator = position - _ZIP64_LOCATOR_SIZE
    if locator < 0 or data[locator:locator + 4] != _ZIP64_LOCATOR:
        return None
    (offset,) = struct.unpack_from("<Q", data, locator + 8)
    if offset + 40 > len(data) or data[offset:offset + 4] != _ZIP64_EOCD:
        return None
    (entries64,) = struct.unpack_from("<Q", data, offset + 32)
    return int(entries64)


def _too_many(name: str, count: int, limit: int) -> DocumentTooLargeError:
    return DocumentTooLargeError(f"{name}: the zip holds {count} entries, more than the limit of {limit} "
                                 "(limits.max_archive_entries)")
