"""The qdrant-edge shard behind an embedded store held in this process, for tests that rewrite a shard as an older
version of ragstream wrote it."""

from __future__ import annotations

from typing import Any


def local_shard(store: Any) -> Any:
    """The shard of ``store``: a QdrantEdgeStore, or an EdgeProcessStore still holding its shard here
    (``store.edge_process = auto`` before the first index build)."""
    inner = getattr(store, "_child", None)
    return (inner.store if inner is not None else store)._shard
