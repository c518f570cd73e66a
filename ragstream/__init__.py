"""ragstream: retrieval-augmented generation with cited, streamed answers."""

from ragstream.api import Ragstream
from ragstream.config import RagstreamConfig, load_config

__all__ = ["Ragstream", "RagstreamConfig", "load_config"]
__version__ = "0.1.0"
