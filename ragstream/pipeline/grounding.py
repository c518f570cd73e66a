"""Grounding: an agent may rephrase, never add. Named things it writes must come from the prompt or
the attachments.

A "named thing" is a capitalised word that does not open a sentence, or a word with a digit or an
inner capital (``Flask``, ``Flask-Cors``, ``v2.1``, ``FastAPI``): the content an agent could invent.
Ordinary lower-case words pass, so rephrasing stays free.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_TOKEN = re.compile(r"[^\W_][\w\-.+#]*[\w+#]|[^\W_]")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)\s*(?:[-*•#>]+|\d+[.)])?\s*[\"'(*_`\[]*$")
_SEPARATORS = re.compile(r"[\-.+#]")
_CITATION = re.compile(r"\[\d+(?:\s*[,;-]\s*\d+)*\]")


def vocabulary(texts: Iterable[str]) -> set[str]:
    """The casefolded words (and their hyphen/dot parts) of ``texts``."""
    words: set[str] = set()
    for text in texts:
        for match in _TOKEN.finditer(text):
            words.add(match.group(0).casefold())
            words.update(_parts(match.group(0)))
    return words


def ungrounded(text: str, known: set[str]) -> list[str]:
    """The named things in ``text`` that ``known`` (from :func:`vocabulary`) lacks."""
    missing: list[str] = []
    text = _CITATION.sub(" ", text)  # citation markers are the agent's own, not content
    for match in _TOKEN.finditer(text):
        word = match.group(0)
        named = (word[0].isupper() and not _SENTENCE_START.search(text[: match.start()])) \
            or any(ch.isdigit() for ch in word) or any(ch.isupper() for ch in word[1:])
        if named and word.casefold() not in known and not all(part in known for part in _parts(word)):
            missing.append(word)
    return missing


def _parts(word: str) -> list[str]:
    return [part for part in _SEPARATORS.split(word.casefold()) if part]
