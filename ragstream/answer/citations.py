"""Citation processing: resolve markers to prompt chunks, de-duplicate, build
``sources`` and ``relatedDocs``.

Markers are numbered, ``[n]`` = attachment n of the prompt (1-based), or a title ``[Title]`` /
``[Title > Section]`` matched against the attachments in three
tiers: exact (case-insensitive), contains (either way, as whole words), then Dice bigram similarity
above ``citations.dice_threshold``; a name shorter than ``citations.min_title_marker_chars`` only
matches exactly (else it is an abbreviation, text). A marker that names no prompt chunk is kept as
unmatched and never becomes a source.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragstream.answer.markers import MarkerScanner, marker_numbers
from ragstream.answer.models import Citation, DocumentChunk, RelatedDoc, Source
from ragstream.config import CitationConfig
from ragstream.documents.prose import CODE_BLOCK, prose_sentences

UNMATCHED = "none"


def dice_similarity(a: str, b: str) -> float:
    """Sørensen-Dice coefficient of the character bigrams of ``a`` and ``b`` (whitespace ignored)."""
    left, right = _bigrams(a), _bigrams(b)
    total = sum(left.values()) + sum(right.values())
    return 2 * sum((left & right).values()) / total if total else 0.0


def _bigrams(text: str) -> Counter[str]:
    squeezed = "".join(text.casefold().split())
    return Counter(squeezed[i : i + 2] for i in range(len(squeezed) - 1))


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def _contains_words(text: str, part: str) -> bool:
    """Whether ``part`` occurs in ``text`` as whole words ("streaming" in "streaming responses", not "or" in "for")."""
    return re.search(rf"(?<!\w){re.escape(part)}(?!\w)", text) is not None


def _labels(chunk: DocumentChunk) -> list[str]:
    """The names a title marker may use for a chunk: title, 'title > section', header path."""
    meta = chunk.metadata
    title, section = str(meta.get("title") or ""), str(meta.get("section") or "")
    labels = [title, f"{title} > {section}" if section else "", str(meta.get("header_path") or ""), section]
    return [_norm(label) for label in labels if label]


class CitationResolver:
    """Resolves marker texts against the prompt's context chunks, in prompt order."""

    def __init__(self, chunks: Sequence[DocumentChunk], config: CitationConfig) -> None:
        self.chunks = list(chunks)
        self._config = self.config = config
        self._labels = [_labels(chunk) for chunk in self.chunks]

    def resolve(self, content: str) -> list[Citation]:
        """One Citation per number of a numbered marker, else one for the title marker; none for a
        bracket quoted from an attachment (``[SD, 15.5]``, ``[ARD]``): that is document text, not a citation."""
        numbers = marker_numbers(content)
        if numbers is not None:
            return [self._numbered(number) for number in numbers]
        marker = _norm(content)
        named = len(marker) >= self._config.min_title_marker_chars  # shorter: "[OR]" is an abbreviation unless exact
        index, tier = self._by_title(marker, loosely=named)
        if index is None:
            if not named or any(f"[{content}]" in chunk.text for chunk in self.chunks):
                return []
            return [Citation(marker=content, matched=False, match_type=UNMATCHED)]
        return [_citation(content, tier, index, self.chunks[index], self._config)]

    def _numbered(self, number: int) -> Citation:
        if 1 <= number <= len(self.chunks):
            return _citation(str(number), "number", number - 1, self.chunks[number - 1], self._config)
        return Citation(marker=str(number), matched=False, match_type=UNMATCHED, number=number)

    def _by_title(self, marker: str, *, loosely: bool) -> tuple[int | None, str]:
        """The attachment ``marker`` names: exactly, or (``loosely``) contained as whole words or by Dice."""
        for index, labels in enumerate(self._labels):
            if marker in labels:
                return index, "exact"
        if not loosely:
            return None, UNMATCHED
        for index, labels in enumerate(self._labels):
            if any(_contains_words(label, marker) or _contains_words(marker, label) for label in labels):
                return index, "contains"
        best, best_score = None, self._config.dice_threshold
        for index, labels in enumerate(self._labels):
            score = max((dice_similarity(marker, label) for label in labels), default=0.0)
            if score > best_score:
                best, best_score = index, score
        return best, "dice"


def _citation(marker: str, tier: str, index: int, chunk: DocumentChunk, config: CitationConfig) -> Citation:
    """A matched citation; a missing chapter (title) or section shows as the configured label ("Unknown", "N/A")."""
    meta = chunk.metadata
    return Citation(
        marker=marker, matched=True, match_type=tier, number=index + 1, chunk_id=chunk.chunk_id,
        document_id=chunk.document_id, title=meta.get("title") or config.missing_chapter_label,
        section=meta.get("section") or config.missing_section_label,
        source=str(meta.get("source")), url=str(meta.get("url")), page=meta.get("page"), score=chunk.relevance_score,
        checksum=meta.get("checksum"),
    )


@dataclass
class CitationTracker:
    """Collects the citations of one answer: matched ones de-duplicated by chunk, unmatched by marker."""

    resolver: CitationResolver
    citations: list[Citation] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)

    def add(self, content: str) -> list[Citation]:
        """Resolve a marker; returns the citations of chunks not cited before (to emit as events)."""
        new: list[Citation] = []
        for citation in self.resolver.resolve(content):
            key = f"chunk:{citation.chunk_id}" if citation.matched else f"unmatched:{_norm(citation.marker)}"
            if key in self._seen:
                continue
            self._seen.add(key)
            self.citations.append(citation)
            if citation.matched:
                new.append(citation)
        return new

    def infer(self, index: int) -> Citation | None:
        """Cite attachment ``index`` (0-based) for a sentence that cited nothing; ``None`` if already cited."""
        chunk = self.resolver.chunks[index]
        key = f"chunk:{chunk.chunk_id}"
        if key in self._seen:
            return None
        self._seen.add(key)
        citation = _citation(str(index + 1), "inferred", index, chunk, self.resolver.config)
        self.citations.append(citation)
        return citation

    @property
    def matched(self) -> list[Citation]:
        """Citations that name a prompt chunk, first citation first."""
        return [citation for citation in self.citations if citation.matched]

    @property
    def unmatched(self) -> list[str]:
        """Markers that name no prompt chunk."""
        return [citation.marker for citation in self.citations if not citation.matched]


def track_text(text: str, tracker: CitationTracker, config: CitationConfig) -> None:
    """Feed every marker of a whole answer text to ``tracker`` (the same scan as streaming)."""
    scanner = MarkerScanner(config.max_marker_chars)
    for piece in scanner.feed(text) + scanner.finish():
        if piece.kind == "marker":
            tracker.add(piece.content)


def uncited_sentences(text: str, resolver: CitationResolver, config: CitationConfig, min_chars: int) -> list[str]:
    """The prose sentences of an answer (code blocks left out, at least ``min_chars`` long) that carry no
    marker naming an attachment. A marker opening a sentence belongs to the one before it (``... x. [2] Next``)."""
    sentences = prose_sentences(CODE_BLOCK.sub(" ", text))
    cited = [False] * len(sentences)
    for index, sentence in enumerate(sentences):
        scanner = MarkerScanner(config.max_marker_chars)
        for position, piece in enumerate(scanner.feed(sentence) + scanner.finish()):
            if piece.kind == "marker" and any(c.matched for c in resolver.resolve(piece.content)):
                cited[index - 1 if position == 0 and index > 0 else index] = True
    return [s for s, done in zip(sentences, cited, strict=True) if not done and len(s) >= min_chars]


def build_sources(citations: Sequence[Citation]) -> list[Source]:
    """The matched citations' locations, de-duplicated by URL."""
    sources: dict[str, Source] = {}
    for citation in citations:
        if citation.matched and citation.url and citation.url not in sources:
            sources[citation.url] = Source(title=citation.title or "", section=citation.section or "",
                                           url=citation.url, page=citation.page, document_id=citation.document_id or "",
                                           checksum=citation.checksum or "")
    return list(sources.values())


def build_related_docs(chunks: Sequence[DocumentChunk]) -> list[RelatedDoc]:
    """The parent documents of every context chunk, cited or not, in first-seen order."""
    docs: dict[str, RelatedDoc] = {}
    for chunk in chunks:
        if chunk.document_id not in docs:
            docs[chunk.document_id] = RelatedDoc(document_id=chunk.document_id, title=str(chunk.metadata.get("title") or ""),
                                                 url=str(chunk.metadata.get("url") or ""))
    return list(docs.values())
