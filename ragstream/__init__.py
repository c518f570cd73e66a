"""ragstream: retrieval-augmented generation with cited, streamed answers.

``Ragstream``, ``RagstreamConfig`` and ``load_config`` are imported on first use, so that light
entry points (``ragstream --help``, ``ragstream.errors``) do not pay for the models and the store.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragstream.api import Ragstream
    from ragstream.config import RagstreamConfig, load_config

__all__ = ["Ragstream", "RagstreamConfig", "load_config"]
__version__ = "0.1.0"

_LAZY = {"Ragstream": "ragstream.api", "RagstreamConfig": "ragstream.config", "load_config": "ragstream.config"}


def __getattr__(name: str) -> Any:
    """Import the public names on first access."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ragstream' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
