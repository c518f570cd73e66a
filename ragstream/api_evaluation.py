"""Scoring retrieval on a BEIR dataset (``ragstream eval``), re-exported for the CLI."""

from __future__ import annotations

from ragstream.evaluation.beir import METRICS as METRICS
from ragstream.evaluation.beir import MODES as MODES
from ragstream.evaluation.beir import PIPELINE as PIPELINE
from ragstream.evaluation.beir import evaluate_retrieval as evaluate_retrieval
from ragstream.evaluation.beir import load_beir as load_beir
