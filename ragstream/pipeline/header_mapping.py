"""The deterministic header-mapping ladder of A0 (docs/pipeline.md)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ragstream.pipeline.prompt_schema import PromptSchema

LADDER = ("exact", "alias", "tiny-typo", "bilingual", "templates", "keyword", "unknown")
_STRIP = re.compile(r"[#*`:]+")
_SEPARATORS = re.compile(r"[\s_\-]+")


@dataclass(frozen=True)
class Mapping:
    """Where one header landed: the canonical key (``None`` if unknown) and the ladder step."""

    header: str
    normalized: str
    key: str | None
    step: str

    def as_dict(self) -> dict[str, str | None]:
        return {"header": self.header, "normalized": self.normalized, "key": self.key, "step": self.step}


def normalize_header(header: str) -> str:
    """casefold, drop Markdown/colon marks, one space for runs of whitespace, '-' and '_'."""
    return _SEPARATORS.sub(" ", _STRIP.sub(" ", header.casefold())).strip()


class HeaderMapper:
    """Maps header text to canonical keys by walking the ladder in order."""

    def __init__(self, schema: PromptSchema) -> None:
        self._schema = schema
        self._canonical = set(schema.canonical_keys)
        self._aliases = {alias: key for key, names in schema.aliases.items() for alias in names}
        self._typo_targets = sorted(self._canonical | set(self._aliases))
        self._templates = [(re.compile(t.pattern), t.key) for t in schema.templates]
        self._keywords = {word: key for key, words in schema.keywords.items() for word in words}

    def map(self, header: str) -> Mapping:
        """The mapping of ``header``; ``step`` names the rung that matched (``unknown`` if none)."""
        norm = normalize_header(header)
        for step, find in (
            ("exact", self._exact), ("alias", self._alias), ("tiny-typo", self._typo),
            ("bilingual", self._bilingual), ("templates", self._template), ("keyword", self._keyword),
        ):
            key = find(norm)
            if key is not None:
                return Mapping(header, norm, key, step)
        return Mapping(header, norm, None, "unknown")

    def _exact(self, norm: str) -> str | None:
        return norm if norm in self._canonical else None

    def _alias(self, norm: str) -> str | None:
        return self._aliases.get(norm)

    def _typo(self, norm: str) -> str | None:
        if len(norm) < self._schema.typo.min_length:
            return None
        close = difflib.get_close_matches(norm, self._typo_targets, n=1, cutoff=self._schema.typo.cutoff)
        if not close:
            return None
        return close[0] if close[0] in self._canonical else self._aliases[close[0]]

    def _bilingual(self, norm: str) -> str | None:
        return self._schema.bilingual.get(norm)

    def _template(self, norm: str) -> str | None:
        return next((key for pattern, key in self._templates if pattern.fullmatch(norm)), None)

    def _keyword(self, norm: str) -> str | None:
        return next((self._keywords[word] for word in norm.split() if word in self._keywords), None)
