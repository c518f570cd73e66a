"""The HTTP API and web UI: a thin shell over :class:`ragstream.Ragstream` (``ragstream serve``)."""

from ragstream.server.app import create_app
from ragstream.server.run import serve, serve_workers

__all__ = ["create_app", "serve", "serve_workers"]
