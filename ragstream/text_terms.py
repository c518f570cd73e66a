"""Words and topic terms of a text: the small vocabulary rules shared by query rewriting and reranking."""

from __future__ import annotations

import re

STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did do does doing done down during each else even ever every few for from further get
gets getting give go had has have having here how however i if in into is isn't it its itself just kind know
let like make many may me might more most much must my need no nor not now of off on once only or other our
out over own please rather really same say see set should show so some still such tell than that the their
them then there these they thing things this those through to too under until up upon us use used using very
want was way we well were what when where whether which while who whom why will with within without would yes
you your und oder aber auch was wie wo wer ist sind der die das ein eine mit mit für von zu im in den dem des
""".split())
"""Words that carry no topic (English and a few German ones)."""

_WORDS = re.compile(r"[\w][\w\-\.]*[\w]|\w", re.UNICODE)


def words(text: str) -> list[str]:
    """The words of ``text`` as written (dots and hyphens inside a word kept: ``allow_origins``, ``v1.2``)."""
    return _WORDS.findall(text)


def content_terms(text: str) -> set[str]:
    """The case-folded words of ``text`` that carry a topic (no stop words, no single letters)."""
    return {folded for folded in (token.casefold() for token in words(text))
            if folded not in STOPWORDS and (len(folded) > 1 or folded.isdigit())}
