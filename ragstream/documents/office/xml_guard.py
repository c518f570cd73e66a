"""XML parts of zipped documents read within bounds, before any document model is built from them.

:func:`scan` streams a part through expat (a megabyte at a time, straight from the zip) and counts its elements,
its nesting depth and, for parts that hold the document's text, the characters of text, in the document's
:class:`~ragstream.documents.bounds.ReadBounds`. The scan stops at the first element, level or character past a
bound, so a 200 KB file holding two million paragraphs, or a 1 KB file of 5,000 nested spans, costs a fraction of a
second and no tree. Only a part that passes is parsed (by ElementTree here, by python-docx or python-pptx's lxml),
and the readers' recursion over a tree is then no deeper than ``limits.max_xml_depth``.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterable
from xml.etree import ElementTree
from xml.etree.ElementTree import Element
from xml.parsers import expat

from ragstream.documents.bounds import ReadBounds
from ragstream.documents.office.archive import read_entry, stream_entry
from ragstream.errors import CorruptDocumentError

_XML_SUFFIXES = (".xml", ".rels")
_XML_TYPE_ENDINGS = ("+xml", "/xml")
_CONTENT_TYPES = "[Content_Types].xml"
_CT_NS = "{http://schemas.openxmlformats.org/package/2006/content-types}"


def scan(chunks: Iterable[bytes], part: str, bounds: ReadBounds, *, text: bool = False, what: str = "document") -> None:
    """Count the elements and depth of the XML in ``chunks`` (and its non-blank text when ``text``) in ``bounds``.

    Raises :class:`DocumentTooLargeError` past a bound, :class:`CorruptDocumentError` for XML that does not parse.
    """
    parser = expat.ParserCreate()
    parser.buffer_text = True
    depth = 0

    def start(_tag: str, _attributes: object) -> None:
        nonlocal depth
        depth += 1
        bounds.element(depth)

    def end(_tag: str) -> None:
        nonlocal depth
        depth -= 1

    def characters(data: str) -> None:
        if not data.isspace():
            bounds.text(len(data))

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    if text:
        parser.CharacterDataHandler = characters
    try:
        for chunk in chunks:
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except expat.ExpatError as exc:
        raise _broken(bounds, what, part, exc) from exc


def parse_part(package: zipfile.ZipFile, part: str, bounds: ReadBounds, *, text: bool = False,
               what: str = "document") -> Element:
    """The part's XML tree, after :func:`scan` passed it (``what`` names the kind of document in errors)."""
    scan(stream_entry(package, part, bounds.name), part, bounds, text=text, what=what)
    try:
        return ElementTree.fromstring(read_entry(package, part, bounds.name))
    except ElementTree.ParseError as exc:
        raise _broken(bounds, what, part, exc) from exc


def _broken(bounds: ReadBounds, what: str, part: str, exc: Exception) -> CorruptDocumentError:
    return CorruptDocumentError(f"{bounds.name}: cannot read the {what}: its XML part {part} is broken: {exc}")


def scan_package(package: zipfile.ZipFile, bounds: ReadBounds, *, text_parts: Callable[[str], bool],
                 what: str = "document") -> None:
    """Scan every XML part of an OOXML package (what python-docx and python-pptx parse on opening it): entries named
    ``.xml`` or ``.rels``, and any other whose content type in ``[Content_Types].xml`` is XML (a main part may be
    named anything). The parts ``text_parts`` names count their text too."""
    xml_types = _xml_content_types(package, bounds, what)
    for info in package.infolist():
        name = info.filename
        if info.is_dir() or name == _CONTENT_TYPES:
            continue
        if name.endswith(_XML_SUFFIXES) or xml_types(name):
            scan(stream_entry(package, name, bounds.name), name, bounds, text=text_parts(name), what=what)


def _xml_content_types(package: zipfile.ZipFile, bounds: ReadBounds, what: str) -> Callable[[str], bool]:
    """Whether an entry's content type (its override, else its extension's default) is an XML one."""
    if _CONTENT_TYPES not in package.namelist():
        return lambda _name: False
    root = parse_part(package, _CONTENT_TYPES, bounds, what=what)
    defaults = {(element.get("Extension") or "").lower(): element.get("ContentType") or ""
                for element in root.iter(f"{_CT_NS}Default")}
    overrides = {(element.get("PartName") or "").lstrip("/"): element.get("ContentType") or ""
                 for element in root.iter(f"{_CT_NS}Override")}

    def is_xml(name: str) -> bool:
        content_type = overrides.get(name) or defaults.get(name.rsplit(".", 1)[-1].lower() if "." in name else "", "")
        return content_type.endswith(_XML_TYPE_ENDINGS)

    return is_xml
