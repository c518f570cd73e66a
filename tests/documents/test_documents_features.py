"""Chunk feature detectors and chunk metadata."""

from __future__ import annotations

import hashlib
from uuid import NAMESPACE_URL, uuid5

import pytest

from ragstream.documents.chunk_builder import build_chunks
from ragstream.documents.features import has_code, has_equations
from ragstream.models import LoadedDocument, Page, TextPiece


@pytest.mark.parametrize(
    "text",
    [
        "Intro\n\n```python\nx = 1\n```",
        "Intro\n\n~~~\nls -l\n~~~",
        "Run this:\n\n    pip install httpx\n",
        "<pre>raw html code</pre>",
    ],
)
def test_code_is_detected(text: str) -> None:
    assert has_code(text)


@pytest.mark.parametrize(
    "text",
    [
        "HTTPX is a fully featured HTTP client. It supports `async` too.",
        "- a list item\n\n    continued paragraph of the item",
        "!!! note\n    An admonition body is indented but is not code.",
    ],
)
def test_prose_is_not_code(text: str) -> None:
    assert not has_code(text)


@pytest.mark.parametrize(
    "text",
    [
        "Energy: $$E = mc^2$$",
        "Display \\[ a^2 + b^2 = c^2 \\] here",
        "\\begin{equation} x = 1 \\end{equation}",
        "Inline $a + b = c$ math",
        "Inline $\\alpha$ command",
    ],
)
def test_equations_are_detected(text: str) -> None:
    assert has_equations(text)


@pytest.mark.parametrize(
    "text",
    [
        "It costs $5 and $10 at most.",
        "Prices from $5-$10.",
        "```bash\necho $HOME/bin:$PATH\n```",
        "Use `$a+b$` literally.",
        "Just $x$ alone.",
    ],
)
def test_non_equations_are_not_detected(text: str) -> None:
    assert not has_equations(text)


def test_build_chunks_fills_metadata() -> None:
    doc = LoadedDocument(
        document_id="doc-1",
        source="/tmp/a.md",
        title="A",
        mime="text/markdown",
        checksum="c" * 64,
        size_bytes=10,
        pages=(Page(text="x"),),
        metadata={"team": "docs"},
    )
    pieces = [
        TextPiece(text="# A\n\nintro words here", header_path=("A",)),
        TextPiece(text="## B\n\n```py\nx = 1\n```", header_path=("A", "B"), page=None),
    ]
    chunks = build_chunks(doc, pieces, generation=3, created_at="2025-01-01T00:00:00+00:00")
    first, second = chunks
    assert first.chunk_id == str(uuid5(NAMESPACE_URL, "ragstream:doc-1:3:0"))
    assert second.chunk_id == str(uuid5(NAMESPACE_URL, "ragstream:doc-1:3:1"))
    assert [c.metadata.chunk_index for c in chunks] == [0, 1]
    assert first.metadata.section == "A" and first.metadata.header_path == "A"
    assert second.metadata.section == "B" and second.metadata.header_path == "A > B"
    assert first.metadata.word_count == 5
    assert (first.metadata.has_code, second.metadata.has_code) == (False, True)
    assert second.metadata.content_hash == hashlib.sha256(second.text.encode()).hexdigest()
    assert first.metadata.checksum == doc.checksum and first.metadata.mime == "text/markdown"
    assert first.metadata.extra == {"team": "docs"}
    assert first.metadata.created_at == "2025-01-01T00:00:00+00:00"
