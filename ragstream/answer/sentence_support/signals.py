"""Cheap, general signals of whether a passage supports a sentence (pure functions over short texts).

* numbers: the numbers, dates and quantities of a sentence (``5``, ``5.0``, ``5,000``, ``50%``, ``five``);
* entities: the names a sentence uses (a capitalised word inside it, an acronym ``HSV-2``, a CamelCase,
  snake_case or dotted identifier ``httpx.Timeout``, the words of inline code);
* negation: whether a sentence denies (``not``, ``no``, ``never``, ``n't``, ``without``, ``fails to``, ...);
* coverage: the share of a sentence's content words a passage holds;
* abstention: a sentence saying the sources do not hold the answer (nothing to check).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ragstream.documents.prose import INLINE_CODE
from ragstream.text_terms import STOPWORDS, words

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000, "million": 1e6,
    "billion": 1e9, "dozen": 12,
}
MIN_LAST_PART_CHARS = 4
"""The last part of a dotted name found alone names it (``httpx.Timeout`` -> ``Timeout``) when it is at least this
long (or a call): ``www.example.org`` is not named by an ``org``."""
PRONOUN_NUMBERS = frozenset({"one"})
"""Number words that mostly are not quantities ("one of", "the one"): a passage's count, a sentence's do not."""
_NUMBER = re.compile(r"(?<![\w.])(?<![A-Za-z]-)(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?!\.?\d)")
_NUMBER_WORD = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)
_IDENTIFIER = re.compile(r"[A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_]\w*)+(?:\(\))?|\b[A-Za-z_]\w*\(\)")
_SNAKE = re.compile(r"\b[A-Za-z][a-z0-9]*_\w+\b")
_CAMEL = re.compile(r"\b(?:[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*)\b")
_ACRONYM = re.compile(r"\b(?:[A-Z][A-Z0-9]+(?:-[A-Za-z0-9]+)*|[A-Za-z]+-?\d+[A-Za-z]*(?:-[A-Za-z0-9]+)*)\b")
_CAPITALISED = re.compile(r"(?<![\w.])[A-Z][a-z]{2,}\w*\b")
_CLAUSE_START = re.compile(r"(?:^|[:!?]\s+|\.\s+|[\"“(]\s*)$")
_CODE_WORD = re.compile(r"[A-Za-z_][\w.]*\w|[A-Za-z_]")
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|nobody|nowhere|neither|nor|without|cannot|unable|absent|absence|"
    r"fail(?:s|ed)?\s+to|lack(?:s|ed|ing)?)\b|n't\b", re.IGNORECASE)
_NOT_A_NEGATION = re.compile(r"\bnot\s+only\b|\bwhether\s+or\s+not\b|\bno\s+matter\b|\bno\s+longer\s+than\b",
                             re.IGNORECASE)
_ABSTENTION = re.compile(
    r"\b(?:attachments?|context|documents?|sources?|passages?|provided\s+(?:text|information)|information\s+provided)"
    r"\b[^.]{0,40}\b(?:do(?:es)?\s+not|don't|doesn't|did\s+not|didn't)\s+(?:\w+\s+)?(?:mention|contain|say|provide|"
    r"include|specify|discuss|state|describe|address|cover|explain|give)"
    r"|\bno\s+(?:information|mention|details?)\s+(?:about|on|regarding|of)\b"
    r"|\bI\s+(?:do\s+not|don't)\s+know\b|\bnot\s+(?:enough|sufficient)\s+information\b", re.IGNORECASE)
CODE_KEYWORDS = frozenset({"True", "False", "None", "self", "def", "return", "import", "from", "async", "await",
                           "with", "as", "in", "for", "if", "else", "class", "lambda", "print", "and", "or", "not",
                           "is", "null", "true", "false", "var", "let", "const"})
"""Words of inline code that name nothing a passage must hold."""
SENTENCE_OPENERS = frozenset({"The", "This", "That", "These", "Those", "However", "Yes", "Also", "Note", "For",
                              "When", "If", "You", "Your", "It", "In", "To", "By", "And", "But", "So", "Then", "Use",
                              "Set", "See", "An", "On", "As", "At", "With", "Without", "Each", "Every", "Some"})
"""Capitalised words that open a clause (after a colon, in a quote) rather than name something."""


@dataclass(frozen=True)
class Mention:
    """A number or entity of a sentence, as written and as compared."""

    text: str
    key: str | float
    in_code: bool = False


def code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the inline code spans of ``text``."""
    return [match.span() for match in INLINE_CODE.finditer(text)]


def _inside(position: int, spans: Iterable[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


def numbers(text: str, *, pronouns: bool = False) -> list[Mention]:
    """The numbers of ``text`` (digits, thousands separators and decimals read as values; number words too,
    "one" only with ``pronouns``)."""
    spans = code_spans(text)
    found = [Mention(match.group(0), float(match.group(0).replace(",", "")), _inside(match.start(), spans))
             for match in _NUMBER.finditer(text)]
    found += [Mention(match.group(0), float(NUMBER_WORDS[match.group(1).lower()]), _inside(match.start(), spans))
              for match in _NUMBER_WORD.finditer(text) if pronouns or match.group(1).lower() not in PRONOUN_NUMBERS]
    return found


def number_values(text: str) -> set[float]:
    """The values of every number ``text`` holds ("one" included)."""
    return {float(mention.key) for mention in numbers(text, pronouns=True)}


def entities(text: str) -> list[Mention]:
    """The names ``text`` uses, once each: identifiers, acronyms, CamelCase, capitalised words inside a
    clause, and the words of inline code (keywords and values left out)."""
    found: dict[str, Mention] = {}

    def add(name: str, in_code: bool = False) -> None:
        name = name.strip(".")
        if len(name) < 2 or name in CODE_KEYWORDS or _NUMBER.fullmatch(name):
            return
        if any(name.removesuffix("()") in mention.text for mention in found.values()):
            return  # part of a name already found ("follow_redirects" in "client.follow_redirects")
        found.setdefault(name.casefold(), Mention(name, squeeze(name), in_code))

    spans = code_spans(text)
    for match in INLINE_CODE.finditer(text):
        for word in _CODE_WORD.findall(match.group(2)):
            add(word, in_code=True)
    prose = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), text)
    for pattern in (_IDENTIFIER, _SNAKE, _CAMEL, _ACRONYM):
        for match in pattern.finditer(prose):
            add(match.group(0))
    for match in _CAPITALISED.finditer(prose):
        word = match.group(0)
        if word in SENTENCE_OPENERS or _CLAUSE_START.search(prose[: match.start()]) or _inside(match.start(), spans):
            continue
        add(word)
    return list(found.values())


def squeeze(text: str) -> str:
    """``text`` case-folded with everything but letters and digits removed (``HSV-2`` -> ``hsv2``)."""
    return re.sub(r"[\W_]+", "", text.casefold())


def squeezed_tokens(text: str) -> set[str]:
    """The :func:`squeeze` of each whitespace-separated token of ``text`` (``PD-1`` -> ``pd1``, whatever its hyphen)."""
    return {squeezed for token in text.split() if (squeezed := squeeze(token))}


def entity_in(entity: Mention, haystack: str, squeezed: str, tokens: set[str] | None = None) -> bool:
    """Whether ``haystack`` (with ``squeezed``, its :func:`squeeze`, and ``tokens``, its :func:`squeezed_tokens`)
    names ``entity``: as written (case-insensitive, whole words, or a token with the same letters and digits), its
    last dotted part (``httpx.Timeout`` -> ``Timeout``), or its letters and digits
    (``HSV-2`` = ``HSV 2``); a plural matches its singular."""
    name = entity.text.removesuffix("()")
    last = name.rsplit(".", 1)[-1].rsplit("::", 1)[-1]
    variants = {name, last} if len(last) >= MIN_LAST_PART_CHARS or entity.text.endswith("()") else {name}
    variants |= {variant[:-1] for variant in variants if variant.endswith("s") and len(variant) > 3}
    for variant in variants:
        key = squeeze(variant)
        if len(key) > 3 and key in squeezed:
            return True
        if key and re.search(rf"(?<![^\W_]){re.escape(variant.casefold())}(?![^\W_])", haystack.casefold()):
            return True
        if key and tokens is not None and key in tokens:  # "PD1" names a passage's "PD-1" written with a Unicode hyphen
            return True
    return False


def _prose_of(text: str) -> str:
    """``text`` without its inline code and the phrases that only look like negations."""
    return _NOT_A_NEGATION.sub(" ", INLINE_CODE.sub(" ", text))


def negated(text: str) -> bool:
    """Whether ``text`` holds a negation outside inline code (``None`` in code, ``not only``, ``whether or not``
    do not count)."""
    return _NEGATION.search(_prose_of(text)) is not None


NEGATION_SCOPE_WORDS = 3
"""Words after a negation that it denies ("not *followed by default*"), function words not counted."""
FUNCTION_WORDS = frozenset("""
a an the be been being is are was were am to of that which who whom whose it its this these those so as at by in on
for with and or any all some then there than very also just even
""".split())


def negation_scopes(text: str) -> list[list[str]]:
    """For each negation of ``text``, the first :data:`NEGATION_SCOPE_WORDS` words after it that are not function
    words, case-folded ("HTTPX will not follow redirects by default" -> [["follow", "redirects", "default"]])."""
    cleaned = _prose_of(text)
    scopes = []
    for match in _NEGATION.finditer(cleaned):
        after = [w.casefold() for w in words(cleaned[match.end() :]) if w.casefold() not in FUNCTION_WORDS]
        scopes.append(after[:NEGATION_SCOPE_WORDS])
    return scopes


def abstains(text: str) -> bool:
    """Whether ``text`` says the sources do not hold the answer ("The attachments do not mention X", "I don't know")."""
    return _ABSTENTION.search(text) is not None


EXPLAINING_WORDS = frozenset("""
approach argument arguments code example examples following function functions method methods option options
parameter parameters setting settings snippet specify value values way ways here's let's you'll you're it's
""".split())
"""Words an answer uses to explain rather than to say what a passage says ("use the `json` parameter of the
`post` method"): a passage need not hold them."""


def content_words(text: str) -> list[str]:
    """The case-folded content words of ``text`` in order, once each (stopwords, explaining words and single
    letters left out)."""
    seen: dict[str, None] = {}
    for token in words(text):
        folded = token.casefold().strip("._-")
        if folded and folded not in STOPWORDS and folded not in EXPLAINING_WORDS and (len(folded) > 1 or folded.isdigit()):
            seen.setdefault(folded)
    return list(seen)


class WordIndex:
    """The content words of a passage, to look a sentence's words up in (whole, or by their first letters)."""

    def __init__(self, text: str, prefix_chars: int) -> None:
        self.words = set(content_words(text))
        for word in list(self.words):  # "httpx.Timeout" also holds "httpx" and "timeout"
            self.words.update(part for part in re.split(r"[._-]+", word) if part)
        self._prefix_chars = prefix_chars
        self._prefixes = {word[:prefix_chars] for word in self.words if len(word) >= prefix_chars}

    def holds(self, word: str) -> bool:
        """Whether the passage has ``word``, or a word sharing its first ``prefix_chars`` letters."""
        if word in self.words:
            return True
        if any(part in self.words for part in re.split(r"[._-]+", word) if part) and re.search(r"[._-]", word):
            return all(part in self.words for part in re.split(r"[._-]+", word) if part)
        return len(word) >= self._prefix_chars and word[: self._prefix_chars] in self._prefixes

    def coverage(self, sentence_words: list[str]) -> float:
        """The share of ``sentence_words`` the passage holds (1.0 for none)."""
        if not sentence_words:
            return 1.0
        return sum(self.holds(word) for word in sentence_words) / len(sentence_words)
