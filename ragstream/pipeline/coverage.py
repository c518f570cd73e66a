"""Coverage: among candidates of comparable score, the final selection prefers a file it does not hold yet.

A pure rule over a ranked list (docs/ranking.md, "Coverage"): walk the candidates best first; when the next
one comes from a file already selected, the best-scored later candidate from a file not yet selected takes
its place if its score is within ``margin`` of it. The passed-over candidate keeps its place in the queue, so
nothing is dropped, only reordered; with ``margin`` 0 (or less) the order is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

Item = TypeVar("Item")


def cover_files(ranked: Sequence[Item], scores: Sequence[float], file_of: Callable[[Item], Hashable],
                margin: float) -> list[Item]:
    """``ranked`` (best first, each with its score in ``scores``) reordered so that a candidate of an uncovered
    file scoring at least the next candidate's score minus ``margin`` comes before a second candidate of an
    already covered file. Raises ValueError when the lengths differ."""
    if len(ranked) != len(scores):
        raise ValueError(f"{len(ranked)} candidates but {len(scores)} scores")
    if margin <= 0:
        return list(ranked)
    pending = list(range(len(ranked)))
    covered: set[Hashable] = set()
    order: list[Item] = []
    while pending:
        head = pending[0]
        chosen = head
        if file_of(ranked[head]) in covered:
            floor = scores[head] - margin
            fresh = [i for i in pending[1:] if file_of(ranked[i]) not in covered and scores[i] >= floor]
            if fresh:
                chosen = max(fresh, key=lambda i: (scores[i], -i))  # the best of them; ties: the earlier
        pending.remove(chosen)
        covered.add(file_of(ranked[chosen]))
        order.append(ranked[chosen])
    return order
