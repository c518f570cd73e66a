"""Errors only the MCP server raises; every tool error carries a code (docs/mcp.md, Errors)."""

from __future__ import annotations

from ragstream.errors import InvalidQueryError, RagstreamError


class InvalidArgumentsError(InvalidQueryError):
    """A tool call's arguments do not match its input schema (an unknown argument, a wrong type, a missing one)."""

    code = "invalid_arguments"


class UnknownFilterFieldError(InvalidQueryError):
    """A search filter names a field that neither the chunks nor the caller's documents have."""

    code = "unknown_filter_field"


class UnknownToolError(RagstreamError):
    """A call names a tool this server does not offer to the caller."""

    code = "unknown_tool"


class ChunkNotFoundError(RagstreamError):
    """The document has no chunk with that id in its live version (it may have changed since)."""

    code = "chunk_not_found"


class ResourceNotFoundError(RagstreamError):
    """A resource URI that names no resource of this server."""

    code = "resource_not_found"


class ReportedError(RagstreamError):
    """An error that reached us as data (a stream's ``error`` event), under its own code."""

    def __init__(self, code: str, error_type: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.error_type = error_type

    def to_dict(self) -> dict[str, str]:
        """The error with the type it was reported under."""
        return {"code": self.code, "type": self.error_type, "message": self.message}
