"""Load and validate ``prompt_schema.json`` (the packaged one, or ``preprocessing.prompt_schema``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, model_validator

from ragstream.errors import ConfigError

PACKAGED_SCHEMA = "prompt_schema.json"


class TypoRule(BaseModel):
    cutoff: float = Field(description="difflib similarity ratio at or above which a header is a typo of a key.")
    min_length: int = Field(description="Shorter headers are never typo-matched.")


class TemplateRule(BaseModel):
    pattern: str = Field(description="Regex matched against the whole normalized header.")
    key: str


class FormatKind(BaseModel):
    keywords: list[str]
    spec: str
    example_shape: str = ""


class FormatRules(BaseModel):
    default: str
    kinds: dict[str, FormatKind] = Field(description="In priority order: the first kind with a keyword wins.")


class PromptSchema(BaseModel):
    """The parsed schema; see the ``_doc`` lines of the packaged JSON for the meaning of each part."""

    version: int
    canonical_keys: list[str]
    must_keys: list[str]
    defaults: dict[str, str]
    task_from_context: str
    aliases: dict[str, list[str]]
    bilingual: dict[str, str]
    header_max_chars: int = Field(description="A 'Key:' longer than this is prompt text, not a header.")
    typo: TypoRule
    templates: list[TemplateRule]
    keywords: dict[str, list[str]]
    modes: dict[str, bool]
    formats: FormatRules

    @model_validator(mode="after")
    def _keys_are_canonical(self) -> PromptSchema:
        known = set(self.canonical_keys)
        mapped = [*self.must_keys, *self.defaults, *self.aliases, *self.bilingual.values(),
                  *(t.key for t in self.templates), *self.keywords]
        unknown = sorted(set(mapped) - known)
        if unknown:
            raise ValueError(f"keys not in canonical_keys: {unknown}")
        if self.formats.default not in self.formats.kinds:
            raise ValueError(f"formats.default {self.formats.default!r} is not a format kind")
        return self


def load_prompt_schema(path: Path | None = None) -> PromptSchema:
    """The schema at ``path``, or the packaged one; raises ConfigError when it is invalid."""
    try:
        text = path.read_text(encoding="utf-8") if path else (
            resources.files("ragstream.pipeline") / PACKAGED_SCHEMA).read_text(encoding="utf-8")
        return PromptSchema.model_validate_json(text)
    except (OSError, ValidationError) as error:
        raise ConfigError(f"invalid prompt schema {path or PACKAGED_SCHEMA}: {error}") from error
