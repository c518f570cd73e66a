"""Schema-validated JSON from a chat model: the instruction that asks for it, and the parsing of its answer."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ragstream.errors import LLMOutputError

Message = Mapping[str, Any]
M = TypeVar("M", bound=BaseModel)

JSON_INSTRUCTION = (
    "Reply with one JSON object only, no prose and no code fences. "
    "It must validate against this JSON Schema:\n{schema}"
)


def with_system_instruction(messages: Sequence[Message], instruction: str) -> list[dict[str, Any]]:
    """``messages`` with ``instruction`` added to the leading system message (or as a new one)."""
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0]["content"] = f"{out[0]['content']}\n\n{instruction}"
    else:
        out.insert(0, {"role": "system", "content": instruction})
    return out


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object embedded in ``text`` (prose and code fences around it are skipped)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def parse_json_output(text: str, schema: type[M]) -> M:
    """Validate the first JSON object of ``text`` against ``schema``; :class:`LLMOutputError` if none fits."""
    data = extract_json_object(text)
    if data is None:
        raise LLMOutputError(f"LLM answer holds no JSON object: {text[:200]!r}", text=text)
    try:
        return schema.model_validate(data)
    except ValidationError as error:
        raise LLMOutputError(
            f"LLM JSON does not match {schema.__name__}: {error.error_count()} error(s): {error.errors()[0]['msg']}",
            text=text,
        ) from error
