"""What every config section shares."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ConfigSection(BaseModel):
    """Base of every config section: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")
