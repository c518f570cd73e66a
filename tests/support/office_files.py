"""Office, CSV, image and scanned-PDF files made with the libraries people write them with, plus hostile ones.

Every maker returns the file's bytes. The text is about a lighthouse service so searches have words to find.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
import openpyxl
import pptx
import pptx.util
import xlsxwriter
from PIL import Image, ImageDraw, ImageFont

DATA = Path(__file__).resolve().parents[1] / "data" / "office"
LONG_TABLE_ROWS = 120
SCAN_LINES = ("Quarterly report of the lighthouse keepers", "The lamp at Skerryvore was relit on 12 March.",
              "Fuel consumption fell by eight percent.")


def handbook_docx(*, table_rows: int = 3) -> bytes:
    """A staff handbook: title in the core properties, Heading 1/2 sections, a bulleted list and a table."""
    document = docx.Document()
    document.core_properties.title = "Lighthouse Staff Handbook"
    document.add_paragraph("Lighthouse Staff Handbook", style="Title")
    document.add_heading("Leave", level=1)
    document.add_paragraph("Keepers take leave in rotation so that every light stays manned.")
    document.add_heading("Annual leave", level=2)
    document.add_paragraph("Each keeper has twenty-eight days of annual leave.")
    document.add_paragraph("Book leave a month ahead", style="List Bullet")
    document.add_paragraph("Swap shifts only with the principal keeper's consent", style="List Bullet")
    document.add_heading("Rosters", level=1)
    document.add_paragraph("# of keepers per station is set by the board.")
    table = document.add_table(rows=1, cols=3)
    for cell, name in zip(table.rows[0].cells, ("Station", "Keepers", "Relief day"), strict=True):
        cell.text = name
    for index in range(table_rows):
        row = table.add_row().cells
        row[0].text, row[1].text, row[2].text = f"Station {index}", str(3 + index % 2), f"Day {index % 7}"
    return _save(document)


def deck_pptx() -> bytes:
    """A two-slide briefing: titles, bullets, a table and speaker notes."""
    deck = pptx.Presentation()
    deck.core_properties.title = "Winter Briefing"
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Storm season"
    body = first.placeholders[1].text_frame
    body.text = "Gales expected from November"
    body.add_paragraph().text = "Double the fuel stock"
    first.notes_slide.notes_text_frame.text = "Remind the keepers about the foghorn drill."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Fuel stock"
    shape = second.shapes.add_table(3, 2, pptx.util.Inches(1), pptx.util.Inches(2), pptx.util.Inches(6), pptx.util.Inches(2))
    for row, values in enumerate((("Station", "Barrels"), ("Skerryvore", "40"), ("Bell Rock", "35"))):
        for column, value in enumerate(values):
            shape.table.cell(row, column).text = value
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def ledger_xlsx(*, rows: int = 3) -> bytes:
    """A workbook written like Excel writes it (XlsxWriter stores formula results): a visible ``Fuel`` sheet with a
    formula column whose cached values are set, a long ``Log`` sheet and a hidden ``Salaries`` sheet."""
    buffer = io.BytesIO()
    book = xlsxwriter.Workbook(buffer, {"in_memory": True})
    book.set_properties({"title": "Fuel Ledger"})
    fuel = book.add_worksheet("Fuel")
    fuel.write_row(0, 0, ["Station", "Barrels", "Price", "Cost"])
    for index, (station, barrels, price) in enumerate((("Skerryvore", 40, 12.5), ("Bell Rock", 35, 12.5))):
        fuel.write_row(index + 1, 0, [station, barrels, price])
        fuel.write_formula(index + 1, 3, f"=B{index + 2}*C{index + 2}", None, barrels * price)
    log = book.add_worksheet("Log")
    log.write_row(0, 0, ["Day", "Keeper", "Entry"])
    for index in range(rows):
        log.write_row(index + 1, 0, [index + 1, f"Keeper {index % 4}", f"Lamp trimmed and lit at dusk, entry {index}"])
    secret = book.add_worksheet("Salaries")
    secret.write_row(0, 0, ["Keeper", "Salary"])
    secret.write_row(1, 0, ["Principal keeper", 31000])
    secret.hide()
    book.close()
    return buffer.getvalue()


def openpyxl_xlsx(rows: list[list[object]], title: str = "Sheet") -> bytes:
    """A one-sheet workbook written by openpyxl."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = title
    for row in rows:
        sheet.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def million_row_xlsx(rows: int = 1_000_000) -> bytes:
    """A workbook whose one sheet has ``rows`` rows: openpyxl's package with the sheet XML written directly
    (writing a million rows through openpyxl takes minutes; the XML is what Excel writes)."""
    base = openpyxl_xlsx([["n"]])
    sheet = b"".join([b'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/'
                      b'spreadsheetml/2006/main"><sheetData>',
                      *(b'<row r="%d"><c r="A%d"><v>%d</v></c></row>' % (n, n, n) for n in range(1, rows + 1)),
                      b"</sheetData></worksheet>"])
    return replace_entry(base, "xl/worksheets/sheet1.xml", sheet)


def replace_entry(package: bytes, name: str, content: bytes) -> bytes:
    """``package`` with entry ``name`` replaced by ``content``."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(package)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info, content if info.filename == name else source.read(info.filename))
    return out.getvalue()


def zip_bomb(kind_of: bytes, *, inflated_bytes: int) -> bytes:
    """A real package (``kind_of``) with one more entry of ``inflated_bytes`` zeros: kilobytes on disk."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(kind_of)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target:
        for info in source.infolist():
            target.writestr(info, source.read(info.filename))
        with target.open("word/media/padding.bin", "w", force_zip64=True) as entry:
            chunk = bytes(1 << 20)
            for _ in range(inflated_bytes // len(chunk)):
                entry.write(chunk)
    return out.getvalue()


def many_entries(kind_of: bytes, entries: int) -> bytes:
    """A real package with ``entries`` more (empty) entries."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(kind_of)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(info, source.read(info.filename))
        for index in range(entries):
            target.writestr(f"customXml/item{index}.xml", b"")
    return out.getvalue()


def lying_sizes(kind_of: bytes, entry: str, declared: int) -> bytes:
    """A package whose ``entry`` declares ``declared`` bytes uncompressed but inflates to more: a bomb that
    passes a size check on the headers. Python's zipfile stops inflating at the declared size."""
    data = bytearray(kind_of)
    with zipfile.ZipFile(io.BytesIO(kind_of)) as package:
        info = package.getinfo(entry)
    assert info.file_size > declared
    local = info.header_offset
    data[local + 22:local + 26] = declared.to_bytes(4, "little")  # local header: uncompressed size
    central = data.find(b"PK\x01\x02")
    while central >= 0:
        name_length = int.from_bytes(data[central + 28:central + 30], "little")
        if data[central + 46:central + 46 + name_length] == entry.encode():
            data[central + 24:central + 28] = declared.to_bytes(4, "little")
            break
        central = data.find(b"PK\x01\x02", central + 46)
    return bytes(data)


def encrypted(plain: bytes, password: str = "pass") -> bytes:
    """``plain`` (an OOXML file) encrypted with ``password`` as Office does (an OLE file with EncryptedPackage)."""
    from msoffcrypto.format.ooxml import OOXMLFile

    out = io.BytesIO()
    OOXMLFile(io.BytesIO(plain)).encrypt(password, out)
    return out.getvalue()


def text_image(lines: tuple[str, ...] = SCAN_LINES, *, size: tuple[int, int] = (1240, 1754)) -> Image.Image:
    """A white A4 page at 150 dpi with ``lines`` of black type: what a scanner gives."""
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=40)
    for index, line in enumerate(lines):
        draw.text((100, 150 + index * 80), line, fill=0, font=font)
    return image


def image_bytes(image: Image.Image, fmt: str) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt)
    return buffer.getvalue()


def scanned_pdf(pages: list[Image.Image]) -> bytes:
    """A PDF whose pages are only images (no text layer), as a scanner writes it."""
    buffer = io.BytesIO()
    pages[0].save(buffer, "PDF", resolution=150, save_all=True, append_images=pages[1:])
    return buffer.getvalue()


def _save(document: object) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)  # type: ignore[attr-defined]
    return buffer.getvalue()
