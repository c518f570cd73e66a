"""``AgentPrompt``: what one agent asks and which answers it accepts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel


@dataclass(frozen=True)
class AgentPrompt:
    """A system/user template pair, the JSON output schema and the closed enums with their defaults.

    ``user_template`` is filled with ``str.format`` from the payload; payload values that are not
    strings are rendered as JSON. Enum fields are plain strings in ``output_schema`` so that an
    answer outside the allowed set still parses and is then clamped to the default.
    """

    name: str
    version: str
    system_template: str
    user_template: str
    output_schema: type[BaseModel]
    enums: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    defaults: Mapping[str, str] = field(default_factory=dict)

    def messages(self, payload: Mapping[str, Any]) -> list[dict[str, str]]:
        """The chat messages for ``payload``."""
        rendered = {key: value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                    for key, value in payload.items()}
        return [
            {"role": "system", "content": self.system_template.format(**self.enum_lists())},
            {"role": "user", "content": self.user_template.format(**rendered)},
        ]

    def enum_lists(self) -> dict[str, str]:
        """``{field}_values``: each enum's allowed values, comma-joined, for the templates."""
        return {f"{name}_values": ", ".join(values) for name, values in self.enums.items()}

    def clamp(self, name: str, value: object) -> tuple[str, bool]:
        """``(value, True)`` when ``value`` is allowed for enum ``name``, else ``(default, False)``.

        Matching ignores case and surrounding whitespace.
        """
        allowed = self.enums[name]
        if isinstance(value, str):
            wanted = value.strip().casefold()
            for option in allowed:
                if option.casefold() == wanted:
                    return option, True
        return self.defaults[name], False
