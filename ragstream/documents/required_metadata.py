"""Metadata completeness: reject a document missing a key of ``ingest.required_metadata``."""

from __future__ import annotations

from collections.abc import Sequence

from ragstream.errors import InvalidDocumentError
from ragstream.models import LoadedDocument


def check_required_metadata(doc: LoadedDocument, required: Sequence[str]) -> None:
    """Raise InvalidDocumentError naming every key of ``required`` that ``doc.metadata`` lacks or leaves empty."""
    missing = [key for key in required if doc.metadata.get(key) in (None, "")]
    if missing:
        raise InvalidDocumentError(f"{doc.source}: missing required metadata {', '.join(missing)}")
