"""Fit text blocks under a size budget and pack them greedily into pieces.

Sizes come from a ``measure`` function (characters or tokens). Packing assumes the measure
is roughly additive: the size of joined units is the sum of their sizes plus the separators.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Measure = Callable[[str], int]

_FENCE_OPEN = re.compile(r"^\s*(`{3,}|~{3,})")
# A Markdown (GFM) table: a header row, then a delimiter row of dashes with optional colons.
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_DELIMITER = re.compile(r"^\s*\|(?:\s*:?-+:?\s*\|)+\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

# How an oversized block is cut, coarsest first: lines, then sentences, then words.
_SPLIT_LEVELS: tuple[tuple[str, Callable[[str], list[str]]], ...] = (
    ("\n", lambda text: text.split("\n")),
    (" ", _SENTENCE_END.split),
    (" ", str.split),
)


def fit_block(block: str, budget: int, measure: Measure) -> list[str]:
    """Cut ``block`` into parts that each measure at most ``budget``.

    A fenced code block is cut between its lines and every part is re-fenced, so each part
    is a complete code block. A Markdown table is cut between its rows and every part
    repeats the header and delimiter rows, so each part is a table with its column names.
    Other blocks are cut at line, then sentence, then word boundaries; a single word larger
    than the budget is cut by characters.
    """
    if measure(block) <= budget:
        return [block]
    if _FENCE_OPEN.match(block):
        return _split_fence(block, budget, measure)
    if is_table(block):
        return _split_table(block, budget, measure)
    for separator, split in _SPLIT_LEVELS:
        parts = [part for part in split(block) if part.strip()]
        if len(parts) > 1:
            units = [unit for part in parts for unit in fit_block(part, budget, measure)]
            return pack(units, budget, measure, separator=separator)
    return _halve(block, budget, measure)


def pack(units: list[str], budget: int, measure: Measure, *, separator: str = "\n\n", overlap: int = 0) -> list[str]:
    """Join consecutive ``units`` into pieces of at most ``budget``.

    With ``overlap`` > 0 each new piece starts with the trailing units of the previous one
    whose combined size is at most ``overlap`` (whole units only).
    """
    separator_cost = measure(separator)
    pieces: list[str] = []
    current: list[tuple[str, int]] = []
    current_cost = 0
    for unit in units:
        unit_cost = measure(unit)
        if current and current_cost + separator_cost + unit_cost > budget:
            pieces.append(separator.join(text for text, _ in current))
            current = _tail(current, overlap, separator_cost)
            current_cost = _cost(current, separator_cost)
            if current and current_cost + separator_cost + unit_cost > budget:
                current, current_cost = [], 0
        current_cost += unit_cost + (separator_cost if current else 0)
        current.append((unit, unit_cost))
    if current:
        pieces.append(separator.join(text for text, _ in current))
    return pieces


def _tail(items: list[tuple[str, int]], overlap: int, separator_cost: int) -> list[tuple[str, int]]:
    """The longest run of trailing items whose cost fits in ``overlap``."""
    tail: list[tuple[str, int]] = []
    for item in reversed(items):
        if _cost([item, *tail], separator_cost) > overlap:
            break
        tail.insert(0, item)
    return tail


def _cost(items: list[tuple[str, int]], separator_cost: int) -> int:
    return sum(cost for _, cost in items) + separator_cost * max(len(items) - 1, 0)


def _split_fence(block: str, budget: int, measure: Measure) -> list[str]:
    """Cut an oversized fenced code block between lines, closing and reopening the fence."""
    lines = block.split("\n")
    opener = lines[0]
    marker = _FENCE_OPEN.match(opener).group(1)  # type: ignore[union-attr]
    body = lines[1:]
    closer = marker
    if body and body[-1].strip() and set(body[-1].strip()) == {marker[0]}:
        closer = body.pop().strip()
    wrapper_cost = measure(opener) + measure(closer) + 2 * measure("\n")
    inner_budget = max(budget - wrapper_cost, 1)
    units = [unit for line in body for unit in (fit_block(line, inner_budget, measure) if line.strip() else [line])]
    return [f"{opener}\n{part}\n{closer}" for part in pack(units, inner_budget, measure, separator="\n")]


def is_table(block: str) -> bool:
    """True when ``block`` is one Markdown table: a header row, a delimiter row, then only rows."""
    lines = block.split("\n")
    return (len(lines) >= 2 and bool(_TABLE_DELIMITER.match(lines[1]))
            and all(_TABLE_ROW.match(line) for line in lines if line.strip()))


def _split_table(block: str, budget: int, measure: Measure) -> list[str]:
    """Cut an oversized Markdown table between rows, repeating the header and delimiter rows.

    When the header alone leaves no room for a row, the parts are packed without it (a row
    larger than what is left is cut like any other line).
    """
    lines = block.split("\n")
    header = "\n".join(lines[:2])
    rows = [line for line in lines[2:] if line.strip()]
    inner_budget = budget - measure(header) - measure("\n")
    if inner_budget <= 0 or not rows:
        units = [unit for line in lines for unit in fit_block(line, budget, measure)]
        return pack(units, budget, measure, separator="\n")
    units = [unit for row in rows for unit in fit_block(row, inner_budget, measure)]
    return [f"{header}\n{part}" for part in pack(units, inner_budget, measure, separator="\n")]


def _halve(text: str, budget: int, measure: Measure) -> list[str]:
    """Cut unbreakable text by characters until every part fits."""
    if len(text) <= 1 or measure(text) <= budget:
        return [text]
    middle = len(text) // 2
    return _halve(text[:middle], budget, measure) + _halve(text[middle:], budget, measure)
