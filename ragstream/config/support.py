"""``answer.support``: is each answer sentence backed by the passages it cites (docs/answers.md)?"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragstream.config.base import ConfigSection

DEFAULT_JUDGE_VERDICTS: tuple[Literal["supported", "unsupported", "uncertain"], ...] = ("uncertain",)


class SupportConfig(ConfigSection):
    """The support check: is each answer sentence backed by the passages it cites (docs/answers.md)?

    Scores are 0..1: ``coverage`` is the share of the sentence's content words found in the passages,
    ``similarity`` the best cosine between the sentence and a passage sentence (the index's embedder),
    ``cross_encoder`` the ReRanker's cross-encoder relevance of the best passage sentence (sigmoid of its
    logit). A sentence's score is the mean of the signals available."""

    enabled: bool = Field(True, description="Check every sentence of an answer; off: answers carry no sentences.")
    check_numbers: bool = Field(
        True, description="A number, date or quantity of the sentence must be in the passages it is checked against "
        "(5 and five match; a number the question holds may appear in inline code).")
    check_entities: bool = Field(
        True, description="A named entity of the sentence (a capitalised term inside it, an acronym, a CamelCase or "
        "dotted identifier like httpx.Timeout, inline code) must be in the passages or their titles.")
    check_negation: bool = Field(
        True, description="A negated sentence needs a passage sentence among its closest ones that denies the same "
        "thing (a word of the four after each negation in common); an affirmative copy of a negated passage sentence "
        "is a contradiction.")
    negation_candidates: int = Field(
        2, ge=1, description="Passage sentences (closest first) in which a negated sentence looks for its negation.")
    negation_copy_min_coverage: float = Field(
        0.8, ge=0.0, le=1.0, description="An affirmative sentence contradicts its closest passage sentence (which is "
        "negated) only when at least this share of its words are that sentence's: it copies it without the negation.")
    question_clause_min_share: float = Field(
        0.6, ge=0.0, le=1.0, description="An opening clause ('To send JSON with httpx, ...', 'If ..., ') taking at least "
        "this share of its content words from the question restates it: its words, numbers and names are not checked "
        "against the passages (1 or more: always checked).")
    word_prefix_chars: int = Field(
        5, ge=1, description="A sentence word is in a passage when a passage word equals it or shares its first this "
        "many letters ('infection'/'infections').")
    supported_min_score: float = Field(
        0.55, ge=0.0, le=1.0, description="Supported: the score reaches this ...")
    supported_min_coverage: float = Field(
        0.5, ge=0.0, le=1.0, description="... and at least this share of the sentence's content words are in the passages.")
    unsupported_max_score: float = Field(
        0.35, ge=0.0, le=1.0, description="Unsupported: the score is below this (the sentence shares little with "
        "what it cites). Between the two: uncertain.")
    failed_score_cap: float = Field(
        0.2, ge=0.0, le=1.0, description="The score of a sentence with a missing number or entity, or a contradicted "
        "negation, is at most this.")
    similarity: Literal["sentences", "attachments", "off"] = Field(
        "off", description="The embedder's share of the score. sentences: the best cosine between the sentence and "
        "one of its similarity_candidates passage sentences (embedded once, then cached in the catalog). attachments: "
        "the best cosine to a checked attachment as a whole (the index's own vectors). off: none (why off: "
        "docs/answers.md).")
    similarity_candidates: int = Field(
        3, ge=1, description="similarity = sentences: the passage sentences (most words in common first) compared with "
        "each answer sentence; only they are embedded.")
    cross_encoder: Literal["uncertain", "all", "off"] = Field(
        "uncertain", description="When the ReRanker's cross-encoder (reranker.backend onnx or cross_encoder) also "
        "scores a sentence against its closest passage sentences: uncertain: only a sentence the other signals left "
        "uncertain; all: every sentence that passed the hard checks; off: never. With another ReRanker it never runs.")
    cross_encoder_candidates: int = Field(
        1, ge=1, description="Passage sentences (closest first) the cross-encoder scores per answer sentence.")
    cross_encoder_max_pairs: int = Field(
        1, ge=0, description="Cross-encoder pairs per answer at most (each costs one cross-encoder call; the cost and "
        "what it buys: docs/configuration.md); the sentences after that are decided without it.")
    llm_judge: bool = Field(
        False, description="Ask the configured LLM once per answer about the sentences the cheap check left "
        "uncertain (judge_verdicts); the call is bounded by the question's deadline. Off by default: it costs one "
        "more LLM call per answer.")
    judge_verdicts: list[Literal["supported", "unsupported", "uncertain"]] = Field(
        default_factory=lambda: list(DEFAULT_JUDGE_VERDICTS), description="Cheap verdicts the LLM judge reviews.")
    judge_max_tokens: int = Field(96, ge=8, description="Cap on the judge's reply, in tokens.")
    judge_timeout_seconds: float = Field(
        20.0, gt=0, description="The judge's call ends within this many seconds, and never after the question's deadline.")
    judge_passage_chars: int = Field(
        1200, ge=100, description="Characters of each cited passage shown to the judge (its closest sentences first).")
