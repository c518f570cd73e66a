"""Shared reading of OpenDocument packages (.odt, .odp, .ods): their XML parts and the text of elements."""

from __future__ import annotations

import zipfile
from xml.etree.ElementTree import Element

from ragstream.documents.bounds import ReadBounds
from ragstream.documents.office.archive import open_zip
from ragstream.documents.office.xml_guard import parse_part
from ragstream.errors import EncryptedDocumentError

NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
}


def tag(qualified: str) -> str:
    """``text:p`` -> ``{urn:...text:1.0}p``."""
    prefix, local = qualified.split(":")
    return f"{{{NS[prefix]}}}{local}"


def attr(element: Element, qualified: str, default: str = "") -> str:
    """An attribute of ``element`` by its prefixed name."""
    return element.get(tag(qualified), default)


_SPACE = tag("text:s")
_TAB = tag("text:tab")
_BREAK = tag("text:line-break")
_MANIFEST = "META-INF/manifest.xml"
WHAT = "OpenDocument file"
# manifest:encryption-data: a part stored encrypted (a password-protected file)
_ENCRYPTION_DATA = "{urn:oasis:names:tc:opendocument:xmlns:manifest:1.0}encryption-data"
_MAX_SPACES = 100  # a text:s run of spaces is written at most this long (text:c="1000000000" costs nothing)
_SKIPPED = frozenset({tag("text:note"), tag("office:annotation"), tag("text:bookmark-ref")})


def parts(data: bytes, bounds: ReadBounds) -> tuple[Element, str | None]:
    """The package's ``content.xml`` root and the title in ``meta.xml`` (if any), each scanned within ``bounds``
    before it is parsed.

    Raises :class:`EncryptedDocumentError` when the manifest marks parts as encrypted (a password-protected file).
    """
    with open_zip(data, bounds.name) as package:
        title = checked_title(package, bounds)
        return parse_part(package, "content.xml", bounds, text=True, what=WHAT), title


def checked_title(package: zipfile.ZipFile, bounds: ReadBounds) -> str | None:
    """The title in ``meta.xml`` (if any), after checking the manifest marks no part as encrypted
    (:class:`EncryptedDocumentError`: a password-protected file)."""
    names = set(package.namelist())
    if _MANIFEST in names and any(element.tag == _ENCRYPTION_DATA
                                  for element in parse_part(package, _MANIFEST, bounds, what=WHAT).iter()):
        raise EncryptedDocumentError(f"{bounds.name}: the OpenDocument file is password-protected (encrypted); "
                                     "save an unprotected copy to index it")
    if "meta.xml" not in names:
        return None
    found = parse_part(package, "meta.xml", bounds, what=WHAT).find(".//dc:title", NS)
    return found.text if found is not None else None


def element_text(element: Element) -> str:
    """The text of a paragraph-like element: ``text:s`` spaces, tabs and line breaks kept; notes left out."""
    out = [element.text or ""]
    for child in element:
        if child.tag == _SPACE:
            out.append(" " * _count(child))
        elif child.tag == _TAB:
            out.append("\t")
        elif child.tag == _BREAK:
            out.append("\n")
        elif child.tag not in _SKIPPED:
            out.append(element_text(child))
        out.append(child.tail or "")
    return "".join(out)


def cell_text(cell: Element) -> str:
    """The displayed text of a table cell (its paragraphs joined by a space)."""
    return " ".join(element_text(paragraph) for paragraph in cell.iter(tag("text:p")))


def table_rows(table: Element, max_columns: int) -> list[list[str]]:
    """A text or slide table's rows as cell text (repeated cells expanded up to ``max_columns`` + 1)."""
    rows: list[list[str]] = []
    for row in table.iter(tag("table:table-row")):
        rows.append(row_cells(row, max_columns))
    return rows


def row_cells(row: Element, max_columns: int) -> list[str]:
    """A row's cell text; a repeated cell counts as its repeats, never past ``max_columns`` + 1 cells."""
    cells: list[str] = []
    for cell in row:
        if cell.tag not in (tag("table:table-cell"), tag("table:covered-table-cell")):
            continue
        text = cell_text(cell)
        repeat = _int(attr(cell, "table:number-columns-repeated", "1"))
        cells.extend([text] * min(repeat, max_columns + 1 - len(cells)))
        if len(cells) > max_columns:
            break
    return cells


def _count(element: Element) -> int:
    return min(_int(attr(element, "text:c", "1")), _MAX_SPACES)


def _int(value: str) -> int:
    try:
        return max(int(value), 1)
    except ValueError:
        return 1
