"""Documentation-site Markdown dialects rewritten as plain Markdown structure.

Sites built with MkDocs (Material theme, Python-Markdown and PyMdown extensions) write markup
that is not prose. :func:`clean_markdown` rewrites it before chunking:

- heading attribute lists (``## Request Files { #request-files }``) and attribute lists after
  links or on their own line are dropped;
- admonitions (``!!! note "Title"`` / ``??? tip`` with an indented body, PyMdown blocks
  ``/// note | Title`` ... ``///``) and content tabs (``=== "Python"``) become a labelled
  paragraph, ``Note — Title: body ...``, whose body stays prose (code, lists and nested
  admonitions inside it are kept and cleaned too);
- include directives (``{* file.py hl[3:5] *}``, ``{! file !}``, ``--8<-- "file"``,
  ``{% include "file" %}``), and code fences holding nothing but them, become one reference
  line per file: ``Included file: `path```;
- HTML comments and Material icon shortcodes (``:material-alert:``) are removed.

Code fences are kept verbatim. The rewrite is idempotent, so stored text that was already
cleaned can be cleaned again (reindex).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragstream.documents.markdown_structure import ATTRIBUTE_LIST, Line, scan_lines

INCLUDE_LABEL = "Included file:"
"""How a reference line made from an include directive starts."""
LABEL_SEPARATOR = " — "
"""Between an admonition's kind and its title in the label (``Note — Technical Details``)."""

_INDENT_WIDTH = 4  # Python-Markdown: an admonition or tab body is indented by four spaces.
_BLOCK_OPEN = re.compile(r"^[ \t]*(?P<slashes>/{3,})[ \t]*(?P<kind>[A-Za-z][\w-]*)[ \t]*(?:\|[ \t]*(?P<title>.*?))?[ \t]*$")
_BLOCK_CLOSE = re.compile(r"^[ \t]*(?P<slashes>/{3,})[ \t]*$")
_BLOCK_OPTION = re.compile(r"^[ \t]{2,}[\w-]+:")
_INDENTED_OPEN = re.compile(
    r"""^(?P<indent>[ \t]*)(?:!!!|\?\?\?\+?)[ \t]+(?P<kind>[A-Za-z][\w-]*)(?:[ \t]+[\w-]+)*"""
    r"""(?:[ \t]+"(?P<title>[^"]*)")?[ \t]*$"""
)
_TAB_OPEN = re.compile(r"""^(?P<indent>[ \t]*)===\+?[ \t]+"(?P<title>[^"]*)"[ \t]*$""")
_INCLUDES = (
    re.compile(r"^[ \t]*\{\*[ \t]*(?P<path>[^\s*]\S*).*?\*\}[ \t]*$"),  # FastAPI {* file hl[3] *}
    re.compile(r"^[ \t]*\{!>?[ \t]*(?P<path>[^!\s][^!]*?)[ \t]*!\}[ \t]*$"),  # markdown-include {! file !}
    re.compile(r"""^[ \t]*-+8<-+[ \t]+(?P<q>["']?)(?P<path>[^"'\s][^"']*?)(?P=q)[ \t]*$"""),  # snippets
    re.compile(r"""^[ \t]*\{%-?[ \t]*include(?:_markdown)?[ \t]+(?P<q>["'])(?P<path>[^"']+)(?P=q).*?-?%\}[ \t]*$"""),
)
_SNIPPET_BLOCK = re.compile(r"^[ \t]*-+8<-+[ \t]*$")
_LINK_ATTRIBUTES = re.compile(rf"(?<=[)\]]){ATTRIBUTE_LIST.pattern}")
_ATTRIBUTE_LINE = re.compile(rf"^[ \t]*{ATTRIBUTE_LIST.pattern}[ \t]*$")
_NOT_A_PARAGRAPH = re.compile(r"^\s*(?:[-*+][ \t]|\d+[.)][ \t]|#|\||<|>|`{3,}|~{3,})")
# Kinds whose label is the title alone (a tab or a collapsible section names its content).
_TITLE_ONLY_KINDS = frozenset({"tab", "details", "admonition"})
# Kinds that only wrap content in HTML: no label.
_WRAPPER_KINDS = frozenset({"html", "div", "caption", "define"})
# Material for MkDocs icon shortcodes (``:material-alert:``, ``:octicons-mark-github-16:``).
_ICON = re.compile(r"[ \t]?:(?:material|octicons|fontawesome|simple)-[\w-]+:")
_COMMENT_OPEN = "<!--"
_SPACE_RUN = re.compile(r"(?<=\S)[ \t]{2,}(?=\S)")  # left where an inline comment was removed
_COMMENT_CLOSE = "-->"


def clean_markdown(text: str) -> str:
    """Rewrite MkDocs / Python-Markdown dialect in ``text`` as plain Markdown (see the module doc)."""
    lines = _rewrite(_drop_comments(text.split("\n")))
    return "\n".join(_squeeze_blank_lines(lines)).strip("\n")


def include_reference(path: str) -> str:
    """The reference line that stands for an included file."""
    return f"{INCLUDE_LABEL} `{path.strip()}`"


def _drop_comments(lines: list[str]) -> list[str]:
    """Remove ``<!-- ... -->`` (possibly spanning lines) outside code fences and inline code."""
    kept: list[str] = []
    in_comment = False
    for line in scan_lines("\n".join(lines)):
        if line.fence and not in_comment:
            kept.append(line.text)
            continue
        text, in_comment, removed = _strip_comment_spans(line.text, in_comment)
        if not (removed and not text.strip()):
            kept.append(text)
    return kept


def _strip_comment_spans(text: str, in_comment: bool) -> tuple[str, bool, bool]:
    """(text outside comments, still inside a comment at the end, whether anything was removed)."""
    out: list[str] = []
    removed = in_comment
    position = 0
    while position <= len(text):
        if in_comment:
            end = text.find(_COMMENT_CLOSE, position)
            if end == -1:
                return "".join(out), True, True
            position, in_comment = end + len(_COMMENT_CLOSE), False
            continue
        start = text.find(_COMMENT_OPEN, position)
        while start != -1 and text.count("`", 0, start) % 2:  # inside an inline code span
            start = text.find(_COMMENT_OPEN, start + 1)
        if start == -1:
            out.append(text[position:])
            break
        out.append(text[position:start])
        position, in_comment, removed = start + len(_COMMENT_OPEN), True, True
    if not removed:
        return "".join(out), in_comment, False
    return _SPACE_RUN.sub(" ", "".join(out)).rstrip(), in_comment, True


@dataclass(frozen=True)
class _Step:
    """What one construct starting at a line turned into, and the index after it."""

    lines: list[str]
    end: int


def _rewrite(lines: list[str]) -> list[str]:
    """Rewrite the constructs of ``lines`` (recursively inside admonition bodies)."""
    scanned = scan_lines("\n".join(lines))
    out: list[str] = []
    i = 0
    while i < len(scanned):
        step = _construct(scanned, i)
        out.extend(step.lines)
        i = step.end
    return out


def _construct(scanned: Sequence[Line], i: int) -> _Step:
    """The construct starting at ``scanned[i]``: a fence, heading, admonition, include or line."""
    line = scanned[i]
    raw = line.text
    if line.fence == "open":
        return _fence(scanned, i)
    if line.fence:
        return _Step([raw], i + 1)
    if line.heading_level is not None:
        title = _ICON.sub("", line.heading_title).strip()
        return _Step([f"{'#' * line.heading_level} {title}" if title else raw], i + 1)
    if (block := _BLOCK_OPEN.match(raw)) and (close := _block_close(scanned, i, block["slashes"])) is not None:
        body = [entry.text for entry in scanned[i + 1 : close]]
        while body and _BLOCK_OPTION.match(body[0]):
            body.pop(0)
        return _Step(_labelled(block["kind"], block["title"], body), close + 1)
    if admonition := _INDENTED_OPEN.match(raw):
        body, end = _indented_body(scanned, i, admonition["indent"])
        return _Step(_labelled(admonition["kind"], admonition["title"], body), end)
    if tab := _TAB_OPEN.match(raw):
        body, end = _indented_body(scanned, i, tab["indent"])
        return _Step(_labelled("tab", tab["title"], body), end)
    if _SNIPPET_BLOCK.match(raw):
        return _snippet_block(scanned, i)
    if (path := _include_path(raw)) is not None:
        return _Step(["", include_reference(path), ""], i + 1)
    if _BLOCK_CLOSE.match(raw) or _ATTRIBUTE_LINE.match(raw):
        return _Step([], i + 1)  # a stray block close, or an attribute list on its own line
    return _Step([_ICON.sub("", _LINK_ATTRIBUTES.sub("", raw))], i + 1)


def _fence(scanned: Sequence[Line], i: int) -> _Step:
    """A code fence, verbatim, unless it holds nothing but include directives."""
    end = i + 1
    while end < len(scanned) and scanned[end].fence == "inside":
        end += 1
    if end < len(scanned) and scanned[end].fence == "close":
        end += 1
    body = [entry.text for entry in scanned[i + 1 : end] if entry.fence == "inside" and entry.text.strip()]
    paths = [_include_path(text) for text in body]
    if body and all(path is not None for path in paths):
        return _Step(["", *(include_reference(path) for path in paths if path is not None), ""], end)
    return _Step([entry.text for entry in scanned[i:end]], end)


def _block_close(scanned: Sequence[Line], i: int, slashes: str) -> int | None:
    """The index of the line closing the PyMdown block opened at ``i`` (outside code), if any."""
    for j in range(i + 1, len(scanned)):
        close = _BLOCK_CLOSE.match(scanned[j].text)
        if scanned[j].fence is None and close and close["slashes"] == slashes:
            return j
    return None


def _indented_body(scanned: Sequence[Line], i: int, indent: str) -> tuple[list[str], int]:
    """The dedented body under the line at ``i`` and the index after it (trailing blanks excluded)."""
    width = len(indent.expandtabs(_INDENT_WIDTH)) + _INDENT_WIDTH
    end = i + 1
    last = i
    while end < len(scanned):
        text = scanned[end].text.expandtabs(_INDENT_WIDTH)
        if text.strip():
            if len(text) - len(text.lstrip()) < width and scanned[end].fence != "inside":
                break
            last = end
        end += 1
    body = [scanned[j].text.expandtabs(_INDENT_WIDTH)[width:] for j in range(i + 1, last + 1)]
    return body, last + 1


def _snippet_block(scanned: Sequence[Line], i: int) -> _Step:
    """A ``--8<--`` block listing one file per line up to the next ``--8<--``."""
    paths: list[str] = []
    for j in range(i + 1, len(scanned)):
        text = scanned[j].text.strip()
        if _SNIPPET_BLOCK.match(text):
            return _Step(["", *(include_reference(path) for path in paths), ""], j + 1)
        if text:
            paths.append(text.strip("\"'"))
    return _Step([scanned[i].text], i + 1)  # never closed: not a snippet block


def _include_path(text: str) -> str | None:
    """The file an include directive line names, or None for any other line."""
    for pattern in _INCLUDES:
        if match := pattern.match(text):
            return match["path"]
    return None


def _labelled(kind: str, title: str | None, raw_body: list[str]) -> list[str]:
    """An admonition as a paragraph: its label, then its cleaned body.

    The label leads the body's first paragraph, or stands on its own line when the body starts
    with anything else (code, a list, a nested admonition).
    """
    first = next((text for text in raw_body if text.strip()), "")
    nested = any(pattern.match(first) for pattern in (_BLOCK_OPEN, _INDENTED_OPEN, _TAB_OPEN))
    body = _rewrite(raw_body)
    while body and not body[0].strip():
        body.pop(0)
    while body and not body[-1].strip():
        body.pop()
    label = _label(kind.lower(), _ICON.sub("", title or "").strip())
    if not label:
        return ["", *body, ""]
    if not body:
        return ["", label, ""]
    if nested or _NOT_A_PARAGRAPH.match(body[0]) or body[0].startswith(INCLUDE_LABEL):
        return ["", f"{label}:", *body, ""]
    return ["", f"{label}: {body[0].strip()}", *body[1:], ""]


def _label(kind: str, title: str) -> str:
    """``Note — Technical Details``, ``Note``, or the title alone for tabs and collapsibles."""
    if kind in _WRAPPER_KINDS:
        return ""
    name = kind.replace("-", " ").replace("_", " ").capitalize()
    if kind in _TITLE_ONLY_KINDS:
        return title or name
    if not title or title.casefold() == kind.casefold():
        return name
    return f"{name}{LABEL_SEPARATOR}{title}"


def _squeeze_blank_lines(lines: list[str]) -> list[str]:
    """Collapse runs of blank lines outside code fences to one."""
    out: list[str] = []
    for line in scan_lines("\n".join(lines)):
        if not line.fence and not line.text.strip():
            if out and not out[-1].strip():
                continue
            out.append("")
        else:
            out.append(line.text)
    return out
