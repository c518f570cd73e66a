"""PowerPoint (.pptx, .pptm, .ppsx, .potx) with python-pptx: one section per slide.

Each slide is a page numbered like the slide: a ``#`` heading with its title (``Slide N`` when it has
none), then its text frames in reading order (top to bottom, left to right; grouped shapes too), body
placeholders as bulleted lists, tables as Markdown tables, and its speaker notes under a
``## Speaker notes`` heading, so notes chunks carry ``Speaker notes`` as their section. The title is
the core properties' title, else the first slide's. Macro-enabled decks are read like any other: the
VBA project is never loaded.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER
from pptx.package import Package
from pptx.parts.presentation import PresentationPart

from ragstream.documents.bounds import ReadBounds
from ragstream.documents.office import text as md
from ragstream.documents.office.archive import open_zip
from ragstream.documents.office.xml_guard import scan_package
from ragstream.errors import CorruptDocumentError, DocumentError
from ragstream.models import Page

NOTES_HEADING = "Speaker notes"
_TEXT_PARTS = ("ppt/slides/", "ppt/notesSlides/")
_BULLET_PLACEHOLDERS = frozenset({PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT})
_TITLE_PLACEHOLDERS = frozenset({PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE, PP_PLACEHOLDER.VERTICAL_TITLE})


def read_pptx(data: bytes, bounds: ReadBounds) -> md.Extracted:
    """The deck as one Markdown page per slide and its title; :class:`CorruptDocumentError` when unreadable.

    Every XML part is scanned within ``bounds`` (elements, depth, the slides' and notes' characters) before
    python-pptx parses any of them.
    """
    name = bounds.name
    with open_zip(data, name) as package:
        scan_package(package, bounds, text_parts=lambda part: part.startswith(_TEXT_PARTS), what="presentation")
    try:
        part = Package.open(io.BytesIO(data)).main_document_part
        if not isinstance(part, PresentationPart):
            raise CorruptDocumentError(f"{name}: the package's main part is {part.content_type}, not a presentation")
        presentation = part.presentation
        pages: list[Page] = []
        slide_titles: list[str] = []
        for number, slide in enumerate(presentation.slides, start=1):
            title, body = _slide(slide, bounds)
            slide_titles.append(title)
            if title or body:  # a slide without any text (a picture) adds no chunk
                pages.append(Page(number=number, text=md.join_blocks([md.heading(1, title or f"Slide {number}"), body])))
        core_title = presentation.core_properties.title
    except DocumentError:
        raise
    # python-pptx and lxml raise many types (KeyError, ValueError, XMLSyntaxError...) on damaged parts.
    except Exception as exc:
        raise CorruptDocumentError(f"{name}: cannot read the presentation: {exc}") from exc
    return md.Extracted(pages=tuple(pages), title=md.pick_title(core_title, *(t for t in slide_titles if t)))


def _slide(slide: Any, bounds: ReadBounds) -> tuple[str, str]:
    """The slide's title and its body (shapes, then speaker notes) as Markdown."""
    title = ""
    blocks: list[str] = []
    for shape in _reading_order(slide.shapes):
        bounds.tick()
        if not title and _is_title(shape):
            title = md.squash(shape.text_frame.text)
            continue
        blocks.extend(_shape_blocks(shape))
    notes = _notes(slide)
    if notes:
        blocks += [md.heading(2, NOTES_HEADING), md.paragraph(notes)]
    return title, md.join_blocks(blocks)


def _shape_blocks(shape: Any) -> Iterator[str]:
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        for inner in _reading_order(shape.shapes):
            yield from _shape_blocks(inner)
    elif getattr(shape, "has_table", False):
        rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
        yield md.table(md.trim_grid(rows))
    elif getattr(shape, "has_text_frame", False):
        paragraphs = [(paragraph.text, paragraph.level) for paragraph in shape.text_frame.paragraphs]
        paragraphs = [(text, level) for text, level in paragraphs if text.strip()]
        if _is_bulleted(shape):
            yield "\n".join(md.list_item(text, level) for text, level in paragraphs)
        else:
            yield md.paragraph("\n".join(text for text, _ in paragraphs))


def _notes(slide: Any) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    return frame.text.strip() if frame is not None else ""


def _is_title(shape: Any) -> bool:
    return bool(shape.is_placeholder and shape.placeholder_format.type in _TITLE_PLACEHOLDERS
                and shape.has_text_frame and shape.text_frame.text.strip())


def _is_bulleted(shape: Any) -> bool:
    return bool(shape.is_placeholder and shape.placeholder_format.type in _BULLET_PLACEHOLDERS)


def _reading_order(shapes: Iterable[Any]) -> list[Any]:
    """Shapes top to bottom, then left to right (shapes without a position first, in their own order)."""
    return sorted(shapes, key=lambda shape: (shape.top or 0, shape.left or 0))
