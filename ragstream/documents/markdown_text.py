"""Markdown-specific extraction: YAML front matter and the document title."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import yaml

from ragstream.documents.markdown_dialects import clean_markdown
from ragstream.documents.markdown_structure import scan_lines, strip_attribute_list
from ragstream.models import LoadedDocument

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)

Scalar = str | int | float | bool
MARKDOWN_MIME = "text/markdown"


def split_front_matter(text: str) -> tuple[str, dict[str, Scalar]]:
    """Strip a leading YAML front-matter block; return the body and its scalar keys.

    Text that merely starts with a ``---`` rule (not a YAML mapping) is left untouched.
    Dates become ISO 8601 strings; lists, mappings and nulls are dropped.
    """
    match = _FRONT_MATTER.match(text)
    if match is None:
        return text, {}
    try:
        parsed = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return text, {}
    if not isinstance(parsed, dict):
        return text, {}
    scalars = {str(key): value for key, value in ((k, _scalar(v)) for k, v in parsed.items()) if value is not None}
    return text[match.end():], scalars


def first_h1(text: str) -> str | None:
    """The title of the first ``# `` heading outside code fences, comments and admonitions, if any.

    A trailing attribute list (``# First Steps { #first-steps }``) is not part of the title.
    """
    for line in scan_lines(clean_markdown(text)):
        if line.heading_level == 1 and line.heading_title:
            return line.heading_title
    return None


def refresh_title(doc: LoadedDocument) -> LoadedDocument:
    """A stored Markdown document with its title cleaned as a fresh load would clean it.

    Documents stored by an earlier version kept a heading attribute list in their title
    (``First Steps { #first-steps }``); re-chunking from the stored text drops it.
    """
    if doc.mime != MARKDOWN_MIME:
        return doc
    title = strip_attribute_list(doc.title)
    return doc if title == doc.title or not title else doc.model_copy(update={"title": title})


def _scalar(value: Any) -> Scalar | None:
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return None
