"""OLE compound files: a password-protected OOXML document, or a legacy (97-2003) Office file.

Office encrypts a .docx/.xlsx/.pptx by wrapping the encrypted package in an OLE compound file with an
``EncryptedPackage`` stream (MS-OFFCRYPTO); that is what is detected here, with olefile reading the
compound file's directory (nothing is decrypted or run).
"""

from __future__ import annotations

import olefile

from ragstream.errors import CorruptDocumentError, EncryptedDocumentError, UnsupportedFileTypeError

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_STREAM = "EncryptedPackage"
# Streams that name the legacy format, best known first.
_LEGACY_STREAMS = (("WordDocument", "Word 97-2003 document (.doc)"), ("Workbook", "Excel 97-2003 workbook (.xls)"),
                   ("Book", "Excel 5 workbook (.xls)"), ("PowerPoint Document", "PowerPoint 97-2003 presentation (.ppt)"))


def is_ole(data: bytes) -> bool:
    """True when ``data`` starts like an OLE compound file."""
    return data.startswith(OLE_MAGIC)


def refuse_ole(data: bytes, name: str) -> None:
    """Always raises: :class:`EncryptedDocumentError` for a password-protected OOXML document,
    :class:`UnsupportedFileTypeError` naming a legacy format, :class:`CorruptDocumentError` for a
    compound file olefile cannot read."""
    try:
        ole = olefile.OleFileIO(data)
    except (OSError, ValueError, IndexError) as exc:
        raise CorruptDocumentError(f"{name}: damaged OLE compound file: {exc}") from exc
    try:
        streams = {"/".join(entry) for entry in ole.listdir(streams=True, storages=False)}
    finally:
        ole.close()
    if _ENCRYPTED_STREAM in streams:
        raise EncryptedDocumentError(f"{name}: the Office document is password-protected (encrypted); "
                                     "save an unprotected copy to index it")
    kind = next((label for stream, label in _LEGACY_STREAMS if stream in streams), "OLE compound file")
    raise UnsupportedFileTypeError(f"{name}: detected {kind}; save it as .docx, .xlsx or .pptx to index it")
