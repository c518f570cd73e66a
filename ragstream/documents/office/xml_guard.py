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
    """Scan every XML part of an OOXML package (what python-docx and python-pptx parse on opening it); the parts
    ``text_parts`` names count their text too."""
    for info in package.infolist():
        if info.filename.endswith(_XML_SUFFIXES) and not info.is_dir():
            scan(stream_entry(package, info.filename, bounds.name), info.filename, bounds,
                 text=text_parts(info.filename), what=what)
