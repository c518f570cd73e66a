"""A PDF's outline (bookmarks) as a flat list of headings: level, title, page and where on the page it points.

The outline tree is walked without recursion, each entry object at most once (an outline whose ``/Next`` or
``/First`` leads back to an entry already seen stops there), at most ``max_entries`` entries and ``max_depth``
levels deep: a crafted outline costs bounded work. Entries whose destination is not a page of the document (a
remote file, a missing named destination, a broken reference) are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pypdf import PdfReader
from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject

_TOP_AT = {"/XYZ": 3, "/FitH": 2, "/FitBH": 2, "/FitR": 5}
"""Where a destination array keeps its top coordinate, by fit type (PDF 32000-1, table 151)."""


@dataclass(frozen=True)
class OutlineEntry:
    """One bookmark: its level (1 = top), title, 1-based page number and, when it says, the top coordinate."""

    level: int
    title: str
    page: int
    top: float | None


def read_outline(reader: PdfReader, *, max_entries: int, max_depth: int) -> list[OutlineEntry]:
    """The outline's entries in document (pre-)order; ``[]`` without an outline."""
    if max_entries <= 0:
        return []
    root = reader.root_object.get("/Outlines")
    root = root.get_object() if root is not None else None
    if not isinstance(root, DictionaryObject):
        return []
    pages = {page.indirect_reference.idnum: number for number, page in enumerate(reader.pages, start=1)
             if page.indirect_reference is not None}
    resolver = _Destinations(reader, pages)
    entries: list[OutlineEntry] = []
    seen: set[Any] = set()
    walked = 0
    stack: list[tuple[Any, int]] = [(root.raw_get("/First"), 1)] if "/First" in root else []
    while stack and walked < max_entries:
        reference, level = stack.pop()
        key = (reference.idnum, reference.generation) if isinstance(reference, IndirectObject) else id(reference)
        node = reference.get_object() if reference is not None else None
        if key in seen or not isinstance(node, DictionaryObject):
            continue
        seen.add(key)
        walked += 1
        if "/Next" in node:
            stack.append((node.raw_get("/Next"), level))
        if "/First" in node and level < max_depth:
            stack.append((node.raw_get("/First"), level + 1))
        title = " ".join(str(node.get("/Title") or "").split())
        target = resolver.target(node)
        if title and target is not None:
            entries.append(OutlineEntry(level=level, title=title, page=target[0], top=target[1]))
    return entries


class _Destinations:
    """Resolves an outline entry's destination (``/Dest`` or a ``/GoTo`` action; an array or a name) to a page."""

    def __init__(self, reader: PdfReader, pages: dict[int, int]) -> None:
        self._reader = reader
        self._pages = pages
        self._named: dict[str, Any] | None = None

    def target(self, node: DictionaryObject) -> tuple[int, float | None] | None:
        """The 1-based page number and top coordinate the entry points at, if it points into this document."""
        dest = node.get("/Dest")
        if dest is None:
            action = node.get("/A")
            action = action.get_object() if action is not None else None
            if isinstance(action, DictionaryObject) and action.get("/S") == "/GoTo":
                dest = action.get("/D")
        dest = dest.get_object() if dest is not None else None
        if isinstance(dest, DictionaryObject):
            dest = dest.get("/D")
        if isinstance(dest, str):
            return self._named_target(dest)
        if isinstance(dest, ArrayObject) and dest:
            return self._array_target(dest)
        return None

    def _array_target(self, dest: ArrayObject) -> tuple[int, float | None] | None:
        page_ref = dest.raw_get(0) if hasattr(dest, "raw_get") else dest[0]
        if isinstance(page_ref, IndirectObject):
            page = self._pages.get(page_ref.idnum)
        else:
            return None
        if page is None:
            return None
        fit = str(dest[1]) if len(dest) > 1 else ""
        at = _TOP_AT.get(fit)
        return page, _number(dest[at]) if at is not None and len(dest) > at else None

    def _named_target(self, name: str) -> tuple[int, float | None] | None:
        if self._named is None:
            self._named = dict(self._reader.named_destinations)
        found = self._named.get(name)
        if found is None:
            return None
        page_ref = found.raw_get("/Page") if hasattr(found, "raw_get") else None
        page = self._pages.get(page_ref.idnum) if isinstance(page_ref, IndirectObject) else None
        return (page, _number(found.get("/Top"))) if page is not None else None


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
