"""OpenDocument text (.odt) and presentations (.odp), read from ``content.xml`` with the standard XML parser.

Text: ``text:h`` headings (with their outline level) become ``#`` lines, paragraphs and lists follow in
order, tables become Markdown tables; a table of contents is left out (it repeats the headings).
Presentations: one page per slide (``draw:page``) numbered like the slide, its title frame as the
``#`` heading, and its notes under ``## Speaker notes``, as for PowerPoint. Spreadsheets: see
:mod:`ragstream.documents.office.ods`. The title is ``dc:title`` from ``meta.xml``.
"""

from __future__ import annotations

from collections.abc import Iterator
from xml.etree.ElementTree import Element

from ragstream.documents import mimes
from ragstream.documents.bounds import ReadBounds
from ragstream.documents.office import text as md
from ragstream.documents.office.odf_xml import NS, attr, element_text, parts, table_rows, tag
from ragstream.documents.office.pptx import NOTES_HEADING
from ragstream.models import Page

_NS = {"office": NS["office"]}
_H = tag("text:h")
_P = tag("text:p")
_LIST = tag("text:list")
_TABLE = tag("table:table")
_CONTAINERS = frozenset({tag("text:section"), tag("text:list-item"), tag("text:list-header"), tag("draw:text-box")})
_LEFT_OUT = frozenset({tag("text:table-of-content"), tag("text:alphabetical-index"), tag("text:illustration-index"),
                       tag("office:forms"), tag("text:sequence-decls"), tag("office:annotation")})


def read_odf(data: bytes, bounds: ReadBounds, mime: str, *, max_rows: int, max_columns: int,
             hidden_sheets: bool) -> md.Extracted:
    """An OpenDocument file as Markdown pages and its title; its XML is read within ``bounds`` (elements, depth,
    characters) before any tree is built."""
    if mime == mimes.ODS:
        from ragstream.documents.office.ods import read_ods

        return read_ods(data, bounds, max_rows=max_rows, max_columns=max_columns, hidden_sheets=hidden_sheets)
    content, title = parts(data, bounds)
    body = content.find("office:body", _NS)
    if mime == mimes.ODP:
        slides = _slides(body, max_columns) if body is not None else []
        first = next((slide_title for slide_title, _ in slides if slide_title), None)
        pages = tuple(Page(number=number, text=text) for number, (_, text) in enumerate(slides, start=1) if text)
        return md.Extracted(pages=pages, title=md.pick_title(title, first))
    text_body = body.find("office:text", _NS) if body is not None else None
    blocks = list(_blocks(text_body, max_columns)) if text_body is not None else []
    headings = [element_text(h) for h in text_body.iter(_H)] if text_body is not None else []
    return md.Extracted(pages=(Page(number=None, text=md.join_blocks(blocks)),),
                        title=md.pick_title(title, *headings[:1]))


def _blocks(container: Element, max_columns: int, depth: int = 0) -> Iterator[str]:
    """The Markdown blocks of a text container, in document order."""
    for child in container:
        if child.tag == _H:
            level_text = attr(child, "text:outline-level", "1")
            level = int(level_text) if level_text.isdigit() else 1
            if element_text(child).strip():
                yield md.heading(level, element_text(child))
        elif child.tag == _P:
            yield md.paragraph(element_text(child))
        elif child.tag == _LIST:
            yield "\n".join(_list_items(child, depth))
        elif child.tag == _TABLE:
            yield md.table(md.trim_grid(table_rows(child, max_columns)))
        elif child.tag in _CONTAINERS:
            yield from _blocks(child, max_columns, depth)
        elif child.tag not in _LEFT_OUT:
            yield from _blocks(child, max_columns, depth)


def _list_items(element: Element, depth: int) -> Iterator[str]:
    for item in element:
        for child in item:
            if child.tag in (_P, _H) and element_text(child).strip():
                yield md.list_item(element_text(child), depth)
            elif child.tag == _LIST:
                yield from _list_items(child, depth + 1)


def _slides(body: Element, max_columns: int) -> list[tuple[str, str]]:
    """Each slide's title and Markdown (body frames, tables, then notes)."""
    slides: list[tuple[str, str]] = []
    for presentation in body.iter(tag("office:presentation")):
        for page in presentation.iter(tag("draw:page")):
            title = ""
            blocks: list[str] = []
            for frame in page.findall(tag("draw:frame")):
                role = attr(frame, "presentation:class")
                if role == "title" and not title:
                    title = md.squash(" ".join(element_text(p) for p in frame.iter(_P)))
                    continue
                blocks.extend(_blocks(frame, max_columns))
            notes = [element_text(p) for note in page.iter(tag("presentation:notes")) for p in note.iter(_P)]
            notes = [line for line in notes if line.strip()]
            if notes:
                blocks += [md.heading(2, NOTES_HEADING), md.paragraph("\n".join(notes))]
            heading = md.heading(1, title or f"Slide {len(slides) + 1}")
            content = md.join_blocks(blocks)
            slides.append((title, md.join_blocks([heading, content]) if title or content else ""))
    return slides
