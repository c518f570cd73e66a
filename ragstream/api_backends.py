"""The bundled PostgreSQL server (``ragstream db start|stop|status``), re-exported for the CLI."""

from __future__ import annotations

from ragstream.store.postgres import server as postgres_server

__all__ = ["postgres_server"]
