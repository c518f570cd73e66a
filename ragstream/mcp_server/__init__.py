"""ragstream as an MCP server (docs/mcp.md): the tools ``search``, ``ask``, ``list_documents`` and ``read``
(``ingest`` and ``delete`` for admins), documents as ``ragstream://documents/{id}`` resources and the
prompt "answer from my documents", over stdio (``ragstream mcp``) or streamable HTTP (``/mcp`` in
``ragstream serve``). A thin shell over :class:`ragstream.Ragstream`, like the CLI and the HTTP server.

Importing this package does not import the MCP SDK (the ``mcp`` extra); :func:`require_sdk` says
which extra to install when it is missing.
"""

from __future__ import annotations

import importlib.util

from ragstream.errors import ConfigError

SDK_MISSING = "the MCP server needs the MCP Python SDK: pip install 'ragstream[mcp]'"


def sdk_available() -> bool:
    """True when the MCP Python SDK (``mcp``, the ``ragstream[mcp]`` extra) can be imported."""
    try:
        return importlib.util.find_spec("mcp") is not None and importlib.util.find_spec("mcp.server.lowlevel") is not None
    except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules
        return False


def require_sdk() -> None:
    """Raise ConfigError naming the extra to install when the MCP SDK is missing."""
    if not sdk_available():
        raise ConfigError(SDK_MISSING)
