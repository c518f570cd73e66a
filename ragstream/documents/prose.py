"""The prose of chunk text: fenced code set apart, heading lines dropped, sentences split."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragstream.documents.markdown_dialects import LABEL_SEPARATOR

CODE_BLOCK = re.compile(r"(```|~~~).*?(\1|$)", re.DOTALL)
"""A fenced code block (an unclosed fence runs to the end of the text)."""
_HEADING_LINE = re.compile(r"^\s*#.*$", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def prose_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (which holds no code blocks): heading lines removed, whitespace collapsed."""
    return _SENTENCE_END.split(" ".join(_HEADING_LINE.sub(" ", text).split()))


# -- readable sentences (the extractive answer quotes them) ---------------------------------------

_LIST_ITEM = re.compile(r"^\s*(?:(?:[-*+]|\d+[.)])\s+|[\u2022\u2023\u2043\u25aa\u25cf\u25e6\u25a0\u25cb\u00b7\uf0b7]\s*)(?=\S)")
"""A list item's marker: Markdown's ``-``, ``*``, ``+`` and ``1.``, and the bullets PDF and office text layers keep
(``•``, ``▪``, ``◦``, Symbol-font ``\uf0b7``...), so a quoted item never shows its own bullet after the answer's."""
_BLOCKQUOTE = re.compile(r"^\s*(?:>\s?)+")
_SKIPPED_LINE = re.compile(
    r"^\s*(?:#|\|"  # headings, table rows
    r"|</?[A-Za-z][^>]*>\s*$"  # a line that is only an HTML tag
    r"|\[[^\]\n]+\]:\s+\S"  # a link reference definition
    r"|(?:[-*_]\s*){3,}$)"  # a horizontal rule
)
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
"""An inline code span (its backtick run closes it)."""
_IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)(?:\{[^}\n]*\})?")
_LINK = re.compile(r"\[([^\]\n]+)\](?:\([^)\n]*\)|\[[^\]\n]*\])")
_AUTOLINK = re.compile(r"<((?:https?|mailto|ftp):[^>\s]+)>")
_HTML_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])")
# A sentence ends at . ! or ? before a space, unless the period closes "e.g.", "i.e.", "vs." or "cf.".
READABLE_SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)(?<!\bcf\.)(?<=[.!?])\s+")


def readable_sentences(text: str, skip_prefixes: tuple[str, ...] = ()) -> list[str]:
    """The sentences of ``text`` (which holds no code blocks) as a person reads them.

    Each paragraph and each list item is read on its own (list markers and blockquote ``>``
    dropped), except that an item starting in lower case continues the text before it. Headings,
    table rows, HTML-only lines, link definitions, rules and lines starting with one of
    ``skip_prefixes`` are left out. Links keep their text (``[text](url)`` ->
    ``text``), images and HTML tags go, emphasis markers go, and inline code stays as written.
    """
    return [sentence for unit in readable_units(text, skip_prefixes) for sentence in unit.sentences]


@dataclass(frozen=True)
class ReadableUnit:
    """A paragraph or list item (with the lower-case items continuing it) and what its markup said.

    ``link_words`` counts the words inside link texts and bare URLs, ``words`` all words, both as read;
    ``items`` holds the word count of each list item joined into the unit (empty for a paragraph).
    """

    sentences: tuple[str, ...]
    words: int
    link_words: int
    items: tuple[int, ...]

    @property
    def link_share(self) -> float:
        """The share of the unit's words that are link text (0 for an empty unit)."""
        return self.link_words / self.words if self.words else 0.0


def readable_units(text: str, skip_prefixes: tuple[str, ...] = ()) -> list[ReadableUnit]:
    """The paragraphs and list items of ``text`` (no code blocks) read as :func:`readable_sentences` reads them."""
    found: list[ReadableUnit] = []
    for pieces in _units(text, skip_prefixes):
        raw = " ".join(piece for piece, _ in pieces)
        readable = " ".join(_readable(raw).split())
        link_words = sum(len(_readable(m.group(1)).split()) for m in _LINK.finditer(_IMAGE.sub("", raw)))
        link_words += len(_AUTOLINK.findall(raw))
        items = tuple(len(_readable(piece).split()) for piece, listed in pieces if listed)
        found.append(ReadableUnit(tuple(part for part in READABLE_SENTENCE_END.split(readable) if part),
                                  len(readable.split()), link_words, items))
    return found


def _units(text: str, skip_prefixes: tuple[str, ...]) -> list[list[tuple[str, bool]]]:
    """Paragraphs and list items: the lines of each, each with whether it is a list item."""
    units: list[list[tuple[str, bool]]] = []
    current: list[tuple[str, bool]] | None = None
    for raw in text.split("\n"):
        line = _BLOCKQUOTE.sub("", raw)
        if not line.strip() or _SKIPPED_LINE.match(line) or line.strip().startswith(skip_prefixes):
            current = None
            continue
        item = _LIST_ITEM.match(line)
        text = line[item.end():] if item else line
        if item and units and text[:1].islower():
            current = units[-1]  # "... when they:" / "* don't have ..." continues the sentence
        elif item or current is None:
            current = []
            units.append(current)
        current.append((text, bool(item)))
    return units


def _readable(text: str) -> str:
    """Markdown inline markup turned into reading text; inline code spans are kept verbatim.

    Links and images are read first (a link's text may hold code: ``[the `X` class](url)``).
    """
    text = _LINK.sub(r"\1", _IMAGE.sub("", text))
    out: list[str] = []
    position = 0
    for code in INLINE_CODE.finditer(text):
        out.append(_plain(text[position:code.start()]))
        out.append(code.group(0))
        position = code.end()
    out.append(_plain(text[position:]))
    return "".join(out)


def _plain(text: str) -> str:
    text = _AUTOLINK.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    text = _STRONG.sub(r"\2", text)
    return _EMPHASIS.sub(r"\1", text)


# An admonition label ("Note: ", "Note — Technical Details: "): the same sentence under another label is no news.
_LEADING_LABEL = re.compile(rf"^\w[\w ]*(?:{LABEL_SEPARATOR}[^:]+)?: ")
_TRAILING_PUNCTUATION = re.compile(r"[\s.!?:;,]+$")


def sentence_key(sentence: str) -> str:
    """What two copies of one sentence share (overlapping chunks repeat text): compared without case,
    spacing, end punctuation or a leading admonition label."""
    return _TRAILING_PUNCTUATION.sub("", _LEADING_LABEL.sub("", " ".join(sentence.casefold().split())))
