"""ragstream: retrieval-augmented generation with cited, streamed answers.

``Ragstream``, ``Scope`` (who reads which collections), ``RagstreamConfig`` and ``load_config`` are imported on first use, so that light
entry points (``ragstream --help``, ``ragstream.errors``) do not pay for the models and the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragstream.lazy import lazy_getattr

if TYPE_CHECKING:
    from ragstream.api import Ragstream
    from ragstream.config import RagstreamConfig, load_config
    from ragstream.models import Scope

__all__ = ["Ragstream", "RagstreamConfig", "Scope", "load_config"]
__version__ = "0.1.0"

_LAZY = {"Ragstream": "ragstream.api", "RagstreamConfig": "ragstream.config", "load_config": "ragstream.config",
         "Scope": "ragstream.models"}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
