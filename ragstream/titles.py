"""Document titles as a UI shows them: cut at a word to a length."""

from __future__ import annotations


def cut_title(title: str, max_chars: int) -> str:
    """``title`` cut at a word to ``max_chars`` (marked with an ellipsis)."""
    if len(title) <= max_chars:
        return title
    return title[:max_chars].rsplit(" ", 1)[0].rstrip(",;:") + "…"
