"""The prose check: is a quotable sentence a sentence a person can use?

An extractive answer quotes sentences; headings, navigation lists, link-only list items and
table-of-contents fragments read as sentences to the splitter but answer nothing ("field before
validators [3]"). :func:`is_prose` keeps a sentence when it has enough words, holds a verb, and its
paragraph or list item (a :class:`~ragstream.documents.prose.ReadableUnit`) is neither mostly link
text nor a run of short list items. The verb test is a closed lexicon (auxiliaries, modals and
the verbs documentation uses, in their inflected forms) plus the ``-ed`` / ``-ing`` endings: no
tagger, so it is deterministic and costs microseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragstream.config.prose import ProseConfig
from ragstream.documents.prose import INLINE_CODE, ReadableUnit

_AUXILIARIES = frozenset(
    "am is are was were be been being isn't aren't wasn't weren't 's 're 've 'll 'd "
    "do does did done don't doesn't didn't have has had haven't hasn't hadn't "
    "can could may might must shall should will would can't cannot couldn't won't wouldn't shouldn't "
    "let lets need needs".split())
# Base forms of the verbs documentation sentences use; their -s, -ed and -ing forms count too.
_VERBS = frozenset(
    "accept access add allow apply ask assign avoid become begin build call change check choose close "
    "come configure connect contain convert create customize declare decode define delete depend "
    "describe detect disable display enable encode ensure exist expect explain fail fetch find follow "
    "get give go handle happen help hold ignore implement import include inherit install keep know "
    "learn leave limit list load look make mark match mean mount move notice open override parse pass "
    "point prefer prevent print process provide put raise read receive redirect reject remove replace "
    "require respond return reuse run save say see select send serve set show skip specify start stop "
    "store stream support take tell test think try turn understand update upload use validate verify "
    "want work wrap write yield".split())
_IRREGULAR = frozenset(
    "became began built came chose found gave got gotten went gone held kept knew known left made meant "
    "put read ran said saw seen sent set shown spoke taken took told thought understood wrote written".split())
_WORD = re.compile(r"[A-Za-z][A-Za-z']*")


@dataclass(frozen=True)
class ProseVerdict:
    """Whether a sentence may be quoted, and if not, which rule turned it down."""

    ok: bool
    reason: str = ""


def has_verb(sentence: str) -> bool:
    """True when ``sentence`` (inline code left out) holds a word the verb test knows."""
    for word in _WORD.findall(INLINE_CODE.sub(" ", sentence)):
        lower = word.casefold()
        if lower in _AUXILIARIES or lower in _IRREGULAR or _verb_stem(lower) in _VERBS:
            return True
        if len(lower) > 5 and lower.endswith(("ed", "ing")):
            return True
    return False


def _verb_stem(word: str) -> str:
    """The base form ``word`` may inflect (uses -> use, passes -> pass, applied -> apply, setting -> set)."""
    if word in _VERBS:
        return word
    for suffix, replacement in (("ies", "y"), ("ied", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"),
                                ("ing", ""), ("ing", "e")):
        if word.endswith(suffix):
            stem = word[: -len(suffix)] + replacement
            if stem in _VERBS:
                return stem
            if len(stem) > 2 and stem[-1] == stem[-2] and stem[:-1] in _VERBS:  # setting -> set
                return stem[:-1]
    return word


def check_prose(sentence: str, unit: ReadableUnit, config: ProseConfig) -> ProseVerdict:
    """The prose check of one sentence of ``unit`` under ``config`` (always ok when the check is off)."""
    if not config.enabled:
        return ProseVerdict(True)
    if len(sentence.split()) < config.min_words:
        return ProseVerdict(False, "too few words")
    if unit.link_share > config.max_link_share:
        return ProseVerdict(False, "mostly link text")
    if sum(1 for words in unit.items if words <= config.short_item_words) > config.max_short_items:
        return ProseVerdict(False, "a list of short items")
    if config.require_verb and not has_verb(sentence):
        return ProseVerdict(False, "no verb")
    return ProseVerdict(True)


def is_prose(sentence: str, unit: ReadableUnit, config: ProseConfig) -> bool:
    """True when ``sentence`` (of ``unit``) passes the prose check."""
    return check_prose(sentence, unit, config).ok
