"""Comparing two backends' rankings (not a test module)."""

from __future__ import annotations

import numpy as np


def same_ranking(ours: list[tuple[str, float]], theirs: list[tuple[str, float]], rtol: float = 1e-5,
                 atol: float = 1e-6) -> None:
    """Assert two rankings of (id, score) are the same up to the order of tied scores: equal scores
    position by position and, in each group of tied scores but the last (which a limit may cut),
    the same ids. ``atol`` covers float32 noise on tiny scores (the IDF of a term in nearly every
    chunk is ln(1 + x) for a small x, which the backends compute in different ways)."""
    assert len(ours) == len(theirs)
    assert np.allclose([score for _, score in ours], [score for _, score in theirs], rtol=rtol, atol=atol), \
        " ".join(f"{a:.6g}/{b:.6g}" for (_, a), (_, b) in zip(ours, theirs, strict=True))
    groups: list[list[int]] = []
    for position, (_, score) in enumerate(ours):
        if groups and np.isclose(score, ours[groups[-1][0]][1], rtol=rtol, atol=atol):
            groups[-1].append(position)
        else:
            groups.append([position])
    for group in groups[:-1]:
        assert {ours[i][0] for i in group} == {theirs[i][0] for i in group}
