"""The SuperPrompt pipeline (docs/pipeline.md): eight memoryless stages from a raw prompt to ``prompt_ready``.

Use it through :meth:`ragstream.Ragstream.new_prompt`, ``run_stage`` and ``run_pipeline``, or the
:mod:`ragstream.pipeline.controller` directly. The stages are described once, in the stage registry
:mod:`ragstream.pipeline.stages`. Importing the package loads nothing else (the config imports the
registry), so ``SuperPrompt`` and ``ConversationPair`` load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragstream.pipeline.super_prompt import ConversationPair, SuperPrompt

__all__ = ["ConversationPair", "SuperPrompt"]


def __getattr__(name: str) -> Any:
    """``SuperPrompt`` and ``ConversationPair``, imported when first asked for."""
    if name in __all__:
        from ragstream.pipeline import super_prompt

        return getattr(super_prompt, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
