"""Hostile documents made byte by byte: small files that cost a careless reader deep recursion, gigabytes or minutes.

Each maker returns the file's bytes. The tests of the readers' bounds (tests/documents/test_hostile_readers.py) and
``bench/hostile_files.py`` use the same makers, so the bench measures what the tests refuse.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterable

from support.office_files import deck_pptx, handbook_docx, replace_entry

ODT_MIMETYPE = b"application/vnd.oasis.opendocument.text"
_ODF_OPEN = (b'<?xml version="1.0" encoding="UTF-8"?><office:document-content '
             b'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
             b'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>')
_ODF_CLOSE = b"</office:text></office:body></office:document-content>"
# The nesting element and its closing tag of each kind of deep OpenDocument text.
_ODF_NESTING = {
    "span": (b"<text:p>", b"<text:span>", b"</text:span>", b"</text:p>"),
    "list": (b"", b"<text:list><text:list-item>", b"</text:list-item></text:list>", b""),
    "section": (b"", b'<text:section text:name="s">', b"</text:section>", b""),
}
_W = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
DEFLATE64 = 9  # the zip compression method number of Deflate64, which Python's zipfile cannot read


def odt(body: bytes) -> bytes:
    """An OpenDocument text whose ``office:text`` holds ``body`` (as LibreOffice stores it: ``mimetype`` first)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr(zipfile.ZipInfo("mimetype"), ODT_MIMETYPE, compress_type=zipfile.ZIP_STORED)
        package.writestr("content.xml", _ODF_OPEN + body + _ODF_CLOSE)
        package.writestr("META-INF/manifest.xml", b'<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
                         b'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"/>')
    return out.getvalue()


def deep_odt(depth: int = 5000, kind: str = "span") -> bytes:
    """A ~1 KB OpenDocument text of ``depth`` nested spans, lists or sections around one word."""
    before, opening, closing, after = _ODF_NESTING[kind]
    inner = b"lighthouse" if kind == "span" else b"<text:p>lighthouse</text:p>"
    return odt(before + opening * depth + inner + closing * depth + after)


def odd_entry(package: bytes, entry: str, how: str) -> bytes:
    """``package`` with ``entry`` made unreadable the way zip tools do it: ``encrypted`` (the entry's encryption flag
    set), ``deflate64`` (its compression method set to Deflate64) or ``corrupt`` (its deflate stream overwritten)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(package)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            compress = zipfile.ZIP_DEFLATED if info.filename == entry else info.compress_type
            target.writestr(info.filename, source.read(info.filename), compress_type=compress)
    data = bytearray(out.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as written:
        info = written.getinfo(entry)
    local = info.header_offset
    central = _central_record(data, entry)
    if how == "encrypted":
        data[local + 6] |= 0x01
        data[central + 8] |= 0x01
    elif how == "deflate64":
        struct.pack_into("<H", data, local + 8, DEFLATE64)
        struct.pack_into("<H", data, central + 10, DEFLATE64)
    elif how == "corrupt":
        name_length, extra_length = struct.unpack_from("<HH", data, local + 26)
        start = local + 30 + name_length + extra_length
        data[start:start + min(info.compress_size, 8)] = b"\xff" * min(info.compress_size, 8)  # block type 3: invalid
    else:
        raise ValueError(how)
    return bytes(data)


def _central_record(data: bytearray, entry: str) -> int:
    position = data.find(b"PK\x01\x02")
    while position >= 0:
        name_length = struct.unpack_from("<H", data, position + 28)[0]
        if data[position + 46:position + 46 + name_length] == entry.encode():
            return position
        position = data.find(b"PK\x01\x02", position + 46)
    raise KeyError(entry)


def ods(rows: Iterable[bytes]) -> bytes:
    """An OpenDocument spreadsheet of one sheet whose ``table:table`` holds ``rows`` (XML of ``table:table-row``)."""
    content = b"".join([
        b'<?xml version="1.0" encoding="UTF-8"?><office:document-content '
        b'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        b'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
        b'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"><office:body><office:spreadsheet>'
        b'<table:table table:name="Log">', *rows, b"</table:table></office:spreadsheet></office:body>"
        b"</office:document-content>"])
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr(zipfile.ZipInfo("mimetype"), b"application/vnd.oasis.opendocument.spreadsheet",
                         compress_type=zipfile.ZIP_STORED)
        package.writestr("content.xml", content)
    return out.getvalue()


def word_body(body: bytes) -> bytes:
    """A real .docx (python-docx's package) whose ``word/document.xml`` body is ``body``."""
    document = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ' + _W + b"><w:body>" + body
                + b"</w:body></w:document>")
    return replace_entry(handbook_docx(), "word/document.xml", document)


def many_paragraphs_docx(paragraphs: int = 1_850_000) -> bytes:
    """A ~200 KB .docx whose document XML holds ``paragraphs`` one-letter paragraphs."""
    return word_body(b"<w:p><w:r><w:t>x</w:t></w:r></w:p>" * paragraphs)


def entity_docx() -> bytes:
    """A .docx whose run holds an entity declared in the part's DTD (never resolved: the XML parser does not expand
    entities) between two words."""
    document = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><!DOCTYPE w:document '
                b'[<!ENTITY keeper "principal keeper">]><w:document ' + _W + b"><w:body><w:p><w:r>"
                b"<w:t xml:space=\"preserve\">Before the entity &keeper; after the entity foghorn</w:t>"
                b"</w:r></w:p></w:body></w:document>")
    return replace_entry(handbook_docx(), "word/document.xml", document)


def nested_table_docx() -> bytes:
    """A .docx with a table nested in a table cell (as Word writes it: a ``w:tbl`` inside a ``w:tc``)."""
    import docx

    document = docx.Document()
    document.add_paragraph("Rosters of the rock stations.")
    outer = document.add_table(rows=1, cols=2)
    outer.cell(0, 0).text = "Skerryvore"
    inner = outer.cell(0, 1).add_table(rows=2, cols=2)
    for row, values in enumerate((("Keeper", "Watch"), ("Anne Brodie", "midnight lantern"))):
        for column, value in enumerate(values):
            inner.cell(row, column).text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def many_shapes_pptx(shapes: int = 80_000) -> bytes:
    """A real deck (python-pptx's) whose first slide holds ``shapes`` one-letter text boxes."""
    shape = (b'<p:sp><p:nvSpPr><p:cNvPr id="%d" name="t"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr><p:spPr/>'
             b"<p:txBody><a:bodyPr/><a:p><a:r><a:t>x</a:t></a:r></a:p></p:txBody></p:sp>")
    slide = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:sld '
             b'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
             b'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
             b'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree><p:nvGrpSpPr>'
             b'<p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>'
             + b"".join(shape % (n + 2) for n in range(shapes)) + b"</p:spTree></p:cSld></p:sld>")
    return replace_entry(deck_pptx(), "ppt/slides/slide1.xml", slide)


def nested_html(depth: int = 40_000, tag: str = "div") -> bytes:
    """An HTML page whose body holds ``depth`` nested ``tag`` elements around one sentence."""
    return (b"<!doctype html><html><head><title>Deep</title></head><body>" + f"<{tag}>".encode() * depth
            + b"<p>The lamp is lit at dusk.</p>" + f"</{tag}>".encode() * depth + b"</body></html>")


def epub(chapters: list[bytes], title: str = "Lighthouse Tales") -> bytes:
    """An EPUB 3 book of XHTML ``chapters`` in spine order."""
    items = "".join(f'<item id="c{n}" href="c{n}.xhtml" media-type="application/xhtml+xml"/>' for n in range(len(chapters)))
    spine = "".join(f'<itemref idref="c{n}"/>' for n in range(len(chapters)))
    opf = (f'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata '
           f'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title></metadata><manifest>{items}'
           f"</manifest><spine>{spine}</spine></package>")
    container = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
                 '<rootfiles><rootfile full-path="OEBPS/book.opf" media-type="application/oebps-package+xml"/>'
                 "</rootfiles></container>")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr(zipfile.ZipInfo("mimetype"), b"application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml", container)
        book.writestr("OEBPS/book.opf", opf)
        for number, chapter in enumerate(chapters):
            book.writestr(f"OEBPS/c{number}.xhtml", chapter)
    return out.getvalue()


def one_line_csv(size: int = 50 * 1024 * 1024 - 1024) -> bytes:
    """A CSV of one header line and one data line of ``size`` bytes: short numeric fields."""
    return b"n\n" + (b"123456," * (size // 7))[:size] + b"\n"


def huge_png(width: int = 50_000, height: int = 50_000) -> bytes:
    """A PNG whose header declares ``width`` x ``height`` pixels (a few hundred bytes: one short image row follows)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00" * 1024))
            + chunk(b"IEND", b""))
