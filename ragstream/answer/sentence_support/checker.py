"""Does what a sentence cites say what the sentence says? One verdict per answer sentence.

Each sentence is checked against the attachments its markers cite (a sentence citing none: against all
of them). Hard checks first (:mod:`ragstream.answer.sentence_support.signals`): every number and named entity of the
sentence must be in those passages, and a negated sentence needs a negated passage sentence among its
closest ones (an affirmative copy of a negated passage sentence contradicts it). Then the degree of
support: the share of the sentence's content words the passages hold, the best cosine between the
sentence and a passage sentence (the index's embedder, vectors cached like the extractive answer's),
and, when the ReRanker is a cross-encoder, its relevance for the closest passage sentences. Verdict:
``unsupported`` after a failed hard check or below ``unsupported_max_score``; ``supported`` at
``supported_min_score`` with ``supported_min_coverage`` of the words; else ``uncertain``. The best
supporting span is the closest passage sentence, with its attachment and place in the chunk.

An extractive answer quotes the attachments: each quote is supported by construction, unchecked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ragstream.answer.citations import CitationResolver
from ragstream.answer.models import DocumentChunk, SentenceSupport, SupportSpan, Verdict
from ragstream.answer.sentence_support.sentences import AnswerSentence
from ragstream.answer.sentence_support.signals import (
    WordIndex,
    abstains,
    content_words,
    entities,
    entity_in,
    negated,
    negation_scopes,
    number_values,
    numbers,
    squeeze,
    squeezed_tokens,
)
from ragstream.config import SupportConfig
from ragstream.documents.prose import CODE_BLOCK, readable_sentences
from ragstream.errors import EmbeddingFailureError, RagstreamError
from ragstream.providers.deadline import Deadline
from ragstream.providers.embedders.base import Embedder, scoring_vectors
from ragstream.providers.rerankers.base import Reranker

CROSS_ENCODER = "cross_encoder"
PASSAGE_CACHE_SIZE = 2048
EXTRACTIVE_REASON = "quoted from {where} (extractive answer: supported by construction)"
_WORD_RUN = re.compile(r"\w+")
_OPENING_CLAUSE = re.compile(r"(?:To|If|When|For|In order to)\b[^,.;:]{3,}?,\s+")
CODE_FENCES = ("```", "~~~")
LOCATE_WORDS = 4
"""Words of a passage sentence's start and end looked for in the chunk text to find its place."""


@dataclass(frozen=True)
class Unit:
    """A passage sentence (or code block) of one attachment."""

    number: int
    chunk_id: str
    text: str
    start: int | None
    end: int | None


@dataclass
class SupportModels:
    """What scores similarity: the index's embedder and the ReRanker's cross-encoder (either may be missing)."""

    embedder: Embedder | None = None
    cross_encoder: Reranker | None = None


@lru_cache(maxsize=PASSAGE_CACHE_SIZE)
def passage_units(text: str) -> tuple[tuple[str, int | None, int | None], ...]:
    """A chunk's sentences as read (and its fenced code blocks whole), each with its place in ``text``."""
    units: list[tuple[str, int | None, int | None]] = []
    position = 0
    for block in [*CODE_BLOCK.finditer(text), None]:
        prose_end = block.start() if block else len(text)
        cursor = position
        for sentence in readable_sentences(text[position:prose_end]):
            start, end = locate(sentence, text, cursor, prose_end)
            units.append((sentence, start, end))
            cursor = end if end is not None else cursor
        if block is not None and block.group(0).strip():
            units.append((block.group(0).strip(), block.start(), block.end()))
        position = block.end() if block else len(text)
    return tuple(units)


def locate(sentence: str, text: str, begin: int = 0, stop: int | None = None) -> tuple[int | None, int | None]:
    """Where ``sentence`` (as read, markup removed) stands in ``text``: verbatim, else from its first words to
    its last (markup in between); (None, None) when not found."""
    stop = len(text) if stop is None else stop
    exact = text.find(sentence, begin, stop)
    if exact >= 0:
        return exact, exact + len(sentence)
    found = _WORD_RUN.findall(sentence)
    if not found:
        return None, None
    gap = r"\W+(?:\w*\W+)??"
    head = re.compile(gap.join(re.escape(word) for word in found[:LOCATE_WORDS]))
    first = head.search(text, begin, stop)
    if first is None:
        return None, None
    tail = re.compile(gap.join(re.escape(word) for word in found[-LOCATE_WORDS:]))
    last = tail.search(text, first.start(), stop)
    if last is None:
        return None, None
    end = last.end()
    while end < stop and text[end] in ".!?)`*_":
        end += 1
    return first.start(), end


class SupportChecker:
    """Checks an answer's sentences against its attachments (``chunks``, attachment n = ``chunks[n-1]``)."""

    def __init__(self, chunks: Sequence[DocumentChunk], question: str, resolver: CitationResolver,
                 config: SupportConfig, models: SupportModels, deadline: Deadline | None = None) -> None:
        self._chunks = list(chunks)
        self._question_numbers = number_values(question)
        self._question_words = WordIndex(question, config.word_prefix_chars)
        self._resolver = resolver
        self._config = config
        self._models = models
        self._deadline = deadline
        self._units = [Unit(number, chunk.chunk_id, text, start, end)
                       for number, chunk in enumerate(self._chunks, start=1)
                       for text, start, end in passage_units(chunk.text)]
        self._unit_vectors: dict[int, np.ndarray] = {}
        self._attachment_vectors: np.ndarray | None = None
        self._pairs = 0  # cross-encoder pairs scored for this answer
        self._vectors_failed = False
        self._haystacks: dict[tuple[int, ...], _Haystack] = {}
        self._unit_words: dict[int, WordIndex] = {}
        self.errors: list[str] = []
        """Why a similarity signal was left out (the embedder or cross-encoder failed)."""

    # -- public ------------------------------------------------------------------------------------

    def cited(self, sentence: AnswerSentence) -> list[int]:
        """The attachment numbers ``sentence``'s markers cite, in order, once each."""
        numbers_: list[int] = []
        for marker in sentence.markers:
            for citation in self._resolver.resolve(marker):
                if citation.matched and citation.number is not None and citation.number not in numbers_:
                    numbers_.append(citation.number)
        return numbers_

    def check(self, sentences: Sequence[AnswerSentence]) -> list[SentenceSupport]:
        """A verdict for each of ``sentences`` (embedded together)."""
        if not sentences:
            return []
        wanted = self._config.similarity != "off"
        vectors = self._sentence_vectors([sentence.text for sentence in sentences]) if wanted else None
        return [self._check(sentence, None if vectors is None else vectors[i]) for i, sentence in enumerate(sentences)]

    def extractive(self, sentences: Sequence[AnswerSentence]) -> list[SentenceSupport]:
        """Verdicts of an extractive answer's quotes: supported by construction (a line citing nothing, such as
        the answer's label, is no quote and gets none)."""
        verdicts: list[SentenceSupport] = []
        for sentence in sentences:
            cited = self.cited(sentence)
            if not cited:
                continue
            chunk = self._chunks[cited[0] - 1]
            start, end = locate(sentence.text, chunk.text)
            span = SupportSpan(number=cited[0], chunk_id=chunk.chunk_id, text=sentence.text, start=start, end=end)
            verdicts.append(_verdict(sentence, cited, cited, "supported", 1.0,
                                     EXTRACTIVE_REASON.format(where=_where(cited, cited=True)), span,
                                     {"extractive": True}))
        return verdicts

    # -- one sentence ------------------------------------------------------------------------------

    def _check(self, sentence: AnswerSentence, vector: np.ndarray | None) -> SentenceSupport:
        config = self._config
        cited = self.cited(sentence)
        checked = cited or list(range(1, len(self._chunks) + 1))
        if not self._chunks:
            return _verdict(sentence, cited, [], "uncertain", 0.0, "there are no attachments to check it against")
        if abstains(sentence.text):
            return _verdict(sentence, cited, checked, "uncertain", 0.0,
                            "it says what the sources do not hold: nothing to check")
        asked, words, claim = self._restated(sentence.text)
        if not words:
            return _verdict(sentence, cited, checked, "uncertain", 0.0, "it holds no content word to check")
        hay = self._haystack(tuple(checked))
        units = [i for i, unit in enumerate(self._units) if unit.number in checked]
        coverage = hay.words.coverage(words)
        signals: dict[str, object] = {"coverage": round(coverage, 3)}
        ranked, similarity = self._rank(units, words, vector, checked)
        scores = [coverage]
        if similarity is not None:
            signals["similarity"] = round(similarity, 3)
            scores.append(similarity)
        failures = self._failures(sentence.text, claim, words, hay, ranked, signals, asked)
        best = ranked[0] if ranked else None
        verdict = _decide(sum(scores) / len(scores), coverage, failures, config)
        if verdict == "uncertain" or (config.cross_encoder == "all" and not failures):
            relevance, best = self._cross_encode(sentence.text, ranked, best)
            if relevance is not None:
                signals["cross_encoder"] = round(relevance, 3)
                scores.append(relevance)
                verdict = _decide(sum(scores) / len(scores), coverage, failures, config)
        score = sum(scores) / len(scores)
        span = self._span(best)
        where = _where(checked, cited=bool(cited))
        if failures:
            return _verdict(sentence, cited, checked, "unsupported", min(score, config.failed_score_cap),
                            f"{'; '.join(failures)} {where}", span, signals)
        if not cited and span is not None:
            where = f"[{span.number}] (it cites none; checked against every attachment)"
        said = {"supported": "supported by", "unsupported": "little of it is in", "uncertain": "only partly in"}[verdict]
        return _verdict(sentence, cited, checked, verdict, score, f"{said} {where} ({_measured(signals)})", span,
                        signals)

    def _restated(self, text: str) -> tuple[set[str], list[str], str]:
        """The words of an opening clause that restates the question ("To post a dict as JSON, use ...") which the
        question holds, and the sentence's content words without them: what the question says is not the
        passages' to support (the clause's other words, and the rest of the sentence, still are); and the
        sentence without that clause (a negation in it is the question's: "To retry when it cannot connect, ...")."""
        opening = _OPENING_CLAUSE.match(text)
        if opening is not None:
            clause = content_words(opening.group(0))
            if clause and self._question_words.coverage(clause) >= self._config.question_clause_min_share:
                asked = {word for word in clause if self._question_words.holds(word)}
                rest = content_words(text[opening.end() :])
                words = list(dict.fromkeys([*(w for w in clause if w not in asked), *rest]))
                return asked, words, text[opening.end() :]
        return set(), content_words(text), text

    def _failures(self, text: str, claim: str, words: list[str], hay: _Haystack, ranked: list[int],
                  signals: dict[str, object], asked: set[str]) -> list[str]:
        """What the hard checks found: missing numbers or entities, a contradicted negation (``asked``: words of a
        clause restating the question, whose numbers and names the question holds)."""
        config = self._config
        failures: list[str] = []
        if config.check_numbers:
            missing = [m.text for m in numbers(text) if m.key not in hay.numbers
                       and not ((m.in_code or m.text.casefold() in asked) and m.key in self._question_numbers)]
            if missing:
                signals["missing_numbers"] = missing
                failures.append(f"{_listed('the number', 'the numbers', missing)} {_be(missing)} not in")
        if config.check_entities:
            missing = [m.text for m in entities(text)
                       if not entity_in(m, hay.text, hay.squeezed, hay.tokens) and m.text.casefold() not in asked]
            if missing:
                signals["missing_entities"] = missing
                failures.append(f"{_listed('', '', missing).strip()} {_be(missing)} not named in")
        prose = [i for i in ranked if not self._units[i].text.startswith(CODE_FENCES)]  # "is not None" is no denial
        if config.check_negation and prose:
            closest = [self._units[i].text for i in prose[: config.negation_candidates]]
            if negated(claim) and not any(self._denies_alike(claim, unit) for unit in closest):
                signals["negation"] = "sentence"
                failures.append("it denies what no closest passage sentence denies, in")
            elif not negated(claim) and negated(closest[0]) and \
                    self._unit_index(prose[0]).coverage(words) >= config.negation_copy_min_coverage:
                signals["negation"] = "passage"
                failures.append("it drops the negation of its closest sentence, in")
        return failures

    def _denies_alike(self, sentence: str, unit: str) -> bool:
        """Whether ``unit`` denies what ``sentence`` denies: a negation of each whose following words share one
        (by their first ``word_prefix_chars`` letters), or any negation when the sentence's denies no word."""
        theirs = negation_scopes(unit)
        if not theirs:
            return False
        ours = [scope for scope in negation_scopes(sentence) if scope]
        if not ours:
            return True
        prefix = self._config.word_prefix_chars
        denied = {word[:prefix] for scope in theirs for word in scope}
        return any(word[:prefix] in denied for scope in ours for word in scope)

    # -- similarity --------------------------------------------------------------------------------

    def _rank(self, units: list[int], words: list[str], vector: np.ndarray | None,
              checked: list[int]) -> tuple[list[int], float | None]:
        """``units`` closest first, and the sentence's best cosine (None without vectors).

        ``similarity = "sentences"``: units ranked by their cosine to the sentence plus their word overlap, the
        best cosine among them. ``"attachments"``: units ranked by word overlap, the best cosine between the
        sentence and a checked attachment as a whole (vectors the index already holds)."""
        overlap = {i: self._unit_index(i).coverage(words) for i in units}
        mode = self._config.similarity
        if vector is None or mode == "off":
            return sorted(units, key=lambda i: -overlap[i]), None
        if mode == "attachments":
            chunk_vectors = self._chunk_vectors()
            if chunk_vectors is None:
                return sorted(units, key=lambda i: -overlap[i]), None
            best = max(float(chunk_vectors[n - 1] @ vector) for n in checked)
            return sorted(units, key=lambda i: -overlap[i]), max(0.0, best)
        by_words = sorted(units, key=lambda i: -overlap[i])
        candidates = by_words[: self._config.similarity_candidates]
        unit_vectors = self._passage_vectors(candidates)
        if unit_vectors is None:
            return by_words, None
        cosines = {i: float(unit_vectors[i] @ vector) for i in candidates}
        ranked = sorted(candidates, key=lambda i: -(cosines[i] + overlap[i])) + by_words[len(candidates) :]
        return ranked, max(0.0, max(cosines.values(), default=0.0))

    def _cross_encode(self, text: str, ranked: list[int], best: int | None) -> tuple[float | None, int | None]:
        """The cross-encoder's relevance (sigmoid of its logit) of the closest passage sentences, and the best of
        them; None while pairs remain in the answer's ``cross_encoder_max_pairs``."""
        model = self._models.cross_encoder
        config = self._config
        if config.cross_encoder == "off" or model is None or model.backend != CROSS_ENCODER or not ranked:
            return None, best
        candidates = ranked[: min(config.cross_encoder_candidates, config.cross_encoder_max_pairs - self._pairs)]
        if not candidates:
            return None, best
        self._pairs += len(candidates)
        try:
            logits = model.score(text, [self._units[i].text for i in candidates], deadline=self._deadline)
        except RagstreamError as error:
            self._note(f"cross-encoder: {error.message}")
            return None, best
        top = int(np.argmax(logits))
        return _sigmoid(float(logits[top])), candidates[top]

    def _sentence_vectors(self, texts: list[str]) -> np.ndarray | None:
        embedder = self._models.embedder
        if embedder is None or self._vectors_failed:
            return None
        try:
            return np.atleast_2d(embedder.embed_queries(texts))
        except EmbeddingFailureError as error:
            self._vectors_failed = True
            self._note(f"embedder: {error.message}")
            return None

    def _chunk_vectors(self) -> np.ndarray | None:
        """The attachments' own vectors (the index's passage vectors, served from the embedding cache)."""
        embedder = self._models.embedder
        if self._attachment_vectors is None and embedder is not None and not self._vectors_failed:
            try:
                self._attachment_vectors = np.atleast_2d(embedder.embed_documents([c.text for c in self._chunks]))
            except EmbeddingFailureError as error:
                self._vectors_failed = True
                self._note(f"embedder: {error.message}")
        return self._attachment_vectors

    def _passage_vectors(self, units: list[int]) -> dict[int, np.ndarray] | None:
        """Vectors of passage sentences ``units`` (embedded once per answer, cached in the catalog by text)."""
        embedder = self._models.embedder
        if embedder is None or self._vectors_failed:
            return None
        missing = [i for i in units if i not in self._unit_vectors]
        if missing:
            try:
                vectors = scoring_vectors(embedder, [self._units[i].text for i in missing])
            except EmbeddingFailureError as error:
                self._vectors_failed = True
                self._note(f"embedder: {error.message}")
                return None
            self._unit_vectors.update(zip(missing, np.atleast_2d(vectors), strict=True))
        return self._unit_vectors

    # -- helpers -----------------------------------------------------------------------------------

    def _haystack(self, checked: tuple[int, ...]) -> _Haystack:
        if checked not in self._haystacks:
            parts = []
            for number in checked:
                chunk = self._chunks[number - 1]
                meta = chunk.metadata
                parts += [str(meta.get(key) or "") for key in ("title", "section", "header_path")] + [chunk.text]
            self._haystacks[checked] = _Haystack("\n".join(parts), self._config.word_prefix_chars)
        return self._haystacks[checked]

    def _unit_index(self, i: int) -> WordIndex:
        if i not in self._unit_words:
            self._unit_words[i] = WordIndex(self._units[i].text, self._config.word_prefix_chars)
        return self._unit_words[i]

    def _span(self, i: int | None) -> SupportSpan | None:
        if i is None:
            return None
        unit = self._units[i]
        return SupportSpan(number=unit.number, chunk_id=unit.chunk_id, text=unit.text, start=unit.start, end=unit.end)

    def _note(self, reason: str) -> None:
        if reason not in self.errors:
            self.errors.append(reason)


@dataclass
class _Haystack:
    """The text of the attachments a sentence is checked against, with its words, numbers and squeezed form."""

    text: str
    prefix_chars: int
    words: WordIndex = field(init=False)
    numbers: set[float] = field(init=False)
    squeezed: str = field(init=False)
    tokens: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self.words = WordIndex(self.text, self.prefix_chars)
        self.numbers = number_values(self.text)
        self.squeezed = squeeze(self.text)
        self.tokens = squeezed_tokens(self.text)


def _verdict(sentence: AnswerSentence, cited: list[int], checked: list[int], verdict: Verdict, score: float,
             reason: str, span: SupportSpan | None = None, signals: dict[str, object] | None = None) -> SentenceSupport:
    return SentenceSupport(index=sentence.index, text=sentence.text, start=sentence.start, end=sentence.end,
                           citations=cited, checked=checked, supported=verdict == "supported", verdict=verdict,
                           score=round(max(0.0, min(1.0, score)), 3), reason=reason, span=span, signals=signals or {})


def _decide(score: float, coverage: float, failures: list[str], config: SupportConfig) -> Verdict:
    """The verdict from the hard checks, the score and the word coverage."""
    if failures:
        return "unsupported"
    if score >= config.supported_min_score and coverage >= config.supported_min_coverage:
        return "supported"
    return "unsupported" if score < config.unsupported_max_score else "uncertain"


def _where(numbers_: list[int], *, cited: bool) -> str:
    marks = ", ".join(str(n) for n in numbers_)
    return f"[{marks}]" if cited else f"the attachments [{marks}] (it cites none)"


def _measured(signals: dict[str, object]) -> str:
    names = {"coverage": "words", "similarity": "similarity", "cross_encoder": "cross-encoder"}
    return ", ".join(f"{label} {float(signals[key]):.2f}"  # type: ignore[arg-type]
                     for key, label in names.items() if key in signals)


def _listed(one: str, many: str, items: list[str]) -> str:
    quoted = ", ".join(f"'{item}'" for item in items)
    return f"{one if len(items) == 1 else many} {quoted}"


def _be(items: list[str]) -> str:
    return "is" if len(items) == 1 else "are"


def _sigmoid(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))
