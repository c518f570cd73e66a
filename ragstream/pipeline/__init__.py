"""The SuperPrompt pipeline (docs/pipeline.md): eight memoryless stages from a raw prompt to ``prompt_ready``.

Use it through :meth:`ragstream.Ragstream.new_prompt`, ``run_stage`` and ``run_pipeline``, or the
:mod:`ragstream.pipeline.controller` directly.
"""

from ragstream.pipeline.super_prompt import ConversationPair, SuperPrompt

__all__ = ["ConversationPair", "SuperPrompt"]
