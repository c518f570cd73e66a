"""Small files that fail inside a reader (a deeply nested OpenDocument text, a truncated .docx) and ones whose
reading is much more work than their size says (a .docx that unpacks to megabytes, a scanned PDF or a TIFF of
many pages for OCR): what the upload tests send beside good files."""

from __future__ import annotations

import io
import zipfile

from PIL import Image
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from support.office_files import handbook_docx, replace_entry

ODT_MIME = "application/vnd.oasis.opendocument.text"
DEFLATE64 = 9
"""The zip compression method number of deflate64."""
_ODF_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_ODF_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_MANIFEST = (b'<?xml version="1.0" encoding="UTF-8"?>'
             b'<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
             b'<manifest:file-entry manifest:full-path="/" manifest:media-type="' + ODT_MIME.encode() + b'"/>'
             b'<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
             b'</manifest:manifest>')


def odt(body: str, *, content_method: int = zipfile.ZIP_DEFLATED) -> bytes:
    """An OpenDocument text whose ``office:text`` holds ``body`` (XML in the text namespace, prefix ``text``)."""
    content = (f'<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="{_ODF_OFFICE}" '
               f'xmlns:text="{_ODF_TEXT}" office:version="1.3"><office:body><office:text>{body}</office:text>'
               '</office:body></office:document-content>')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        package.writestr(zipfile.ZipInfo("mimetype"), ODT_MIME)  # first and stored, as ODF asks
        package.writestr("content.xml", content, compress_type=content_method)
        package.writestr("META-INF/manifest.xml", _MANIFEST, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def nested_odt(depth: int = 5000) -> bytes:
    """A ~1 KB .odt whose one paragraph nests ``depth`` spans (a RecursionError in a recursive reader)."""
    return odt("<text:p>" + "<text:span>" * depth + "deep" + "</text:span>" * depth + "</text:p>")


def deflate64_odt() -> bytes:
    """An .odt whose ``content.xml`` says it is compressed with deflate64 (method 9), which Python's zipfile does not
    read (NotImplementedError)."""
    data = bytearray(odt("<text:p>Compressed with deflate64</text:p>", content_method=zipfile.ZIP_STORED))
    name = b"content.xml"
    for signature, method_at, name_at in ((b"PK\x03\x04", 8, 30), (b"PK\x01\x02", 10, 46)):  # local, central
        start = data.find(signature)
        while start != -1:
            if data[start + name_at:start + name_at + len(name)] == name:
                data[start + method_at:start + method_at + 2] = DEFLATE64.to_bytes(2, "little")
            start = data.find(signature, start + 4)
    return bytes(data)


def truncated_docx() -> bytes:
    """A .docx cut in the middle of its central directory."""
    data = handbook_docx()
    return data[: len(data) - 40]


def inflating_docx(paragraph_bytes: int) -> bytes:
    """A small .docx whose ``word/document.xml`` unpacks to more than ``paragraph_bytes`` bytes of repeated text."""
    text = "the same words again " * (paragraph_bytes // 21 + 1)
    xml = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document '
           'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>'
           f"{text}</w:t></w:r></w:p></w:body></w:document>")
    return replace_entry(handbook_docx(), "word/document.xml", xml.encode())


def blank_pdf(pages: int) -> bytes:
    """A PDF of ``pages`` blank pages: no fonts, no text layer (what a scan looks like to the reader)."""
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(200, 200)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def text_pdf(pages: int) -> bytes:
    """A PDF of ``pages`` pages, each with a line of text in Helvetica."""
    writer = PdfWriter()
    for number in range(1, pages + 1):
        page = writer.add_blank_page(300, 200)
        font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                                 NameObject("/BaseFont"): NameObject("/Helvetica")})
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})})
        content = DecodedStreamObject()
        content.set_data(b"BT /F1 12 Tf 20 100 Td (Page %d of the lighthouse keepers log) Tj ET" % number)
        page[NameObject("/Contents")] = writer._add_object(content)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def blank_png(width: int, height: int) -> bytes:
    """A white PNG of ``width`` x ``height`` pixels."""
    out = io.BytesIO()
    Image.new("L", (width, height), 255).save(out, "PNG")
    return out.getvalue()


def blank_tiff(frames: int) -> bytes:
    """A multi-page TIFF of ``frames`` small white frames (each a page for OCR)."""
    out = io.BytesIO()
    pages = [Image.new("L", (64, 64), 255) for _ in range(frames)]
    pages[0].save(out, "TIFF", save_all=True, append_images=pages[1:])
    return out.getvalue()
