"""Process-wide counters and latency histograms in Prometheus format, served by ``GET /metrics`` (docs/http-api.md).

Any module may record here; ``GET /metrics`` renders :data:`REGISTRY`. Names follow Prometheus
conventions: ``_total`` counters, ``_seconds`` histograms.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from ragstream.models import IngestReport, SearchResult

__all__ = [
    "CONTENT_TYPE",
    "REGISTRY",
    "observe_http",
    "record_answer_given",
    "record_cache_lookup",
    "record_citation_open",
    "record_failed_file",
    "record_first_token",
    "record_ingest",
    "record_rating",
    "record_search",
    "render",
    "set_index_size",
    "timed_embedding",
    "timed_llm_call",
]

REGISTRY = CollectorRegistry(auto_describe=True)
MS_PER_SECOND = 1000.0

INGESTED_FILES = Counter("ragstream_ingested_files", "Documents handled by ingest, by outcome.", ["outcome"],
                         registry=REGISTRY)
CHUNKS_WRITTEN = Counter("ragstream_chunks_written", "Chunks written to the vector store.", registry=REGISTRY)
EMBEDDING_CALLS = Counter("ragstream_embedding_calls", "Calls to the embedder.", ["kind"], registry=REGISTRY)
EMBEDDED_TEXTS = Counter("ragstream_embedded_texts", "Texts sent to the embedder.", ["kind"], registry=REGISTRY)
EMBEDDING_CACHE_HITS = Counter("ragstream_embedding_cache_hits", "Chunk vectors served from the embedding cache.",
                               registry=REGISTRY)
EMBEDDING_SECONDS = Histogram("ragstream_embedding_seconds", "Embedder call latency.", ["kind"], registry=REGISTRY)
CACHE_LOOKUPS = Counter("ragstream_cache_lookups", "Cache lookups by cache name and outcome (hit or miss).",
                        ["cache", "outcome"], registry=REGISTRY)
SEARCHES = Counter("ragstream_searches", "Searches run, by the mode that ran.", ["mode"], registry=REGISTRY)
SEARCH_SECONDS = Histogram("ragstream_search_seconds", "Search latency.", ["mode"], registry=REGISTRY)
LLM_CALLS = Counter("ragstream_llm_calls", "HTTP calls to the LLM endpoint, by outcome.", ["outcome"],
                    registry=REGISTRY)
LLM_SECONDS = Histogram("ragstream_llm_seconds", "LLM call latency (until the answer or the stream opens).",
                        registry=REGISTRY)
HTTP_REQUESTS = Counter("ragstream_http_requests", "HTTP requests served.", ["method", "route", "status"],
                        registry=REGISTRY)
HTTP_SECONDS = Histogram("ragstream_http_request_seconds", "HTTP request latency.", ["method", "route"],
                         registry=REGISTRY)
ANSWERS_GIVEN = Counter("ragstream_answers_given", "Answers given (each one an asker may rate).", registry=REGISTRY)
ANSWER_RATINGS = Counter("ragstream_answer_ratings", "Ratings of answers, by rating (helpful or not_helpful).",
                         ["rating"], registry=REGISTRY)
CITATION_OPENS = Counter("ragstream_citation_opens", "Citations of answers opened by their askers.",
                         registry=REGISTRY)
FIRST_TOKEN_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Bucket bounds in seconds: around the specification's budgets (first token < 1 s, whole answer < 3 s) and
up to the minutes a local model on a busy CPU takes (docs/performance.md)."""
FIRST_TOKEN_SECONDS = Histogram("ragstream_answer_first_token_seconds",
                                "Time from a streamed question's arrival to its first answer token, by answer mode.",
                                ["mode"], buckets=FIRST_TOKEN_BUCKETS, registry=REGISTRY)
DOCUMENTS = Gauge("ragstream_documents", "Live documents in the index.", registry=REGISTRY)
CHUNKS = Gauge("ragstream_chunks", "Chunks in the vector store.", registry=REGISTRY)


def record_ingest(report: IngestReport) -> None:
    """Count one finished ingest job."""
    INGESTED_FILES.labels("processed").inc(report.documents_processed)
    INGESTED_FILES.labels("skipped").inc(report.documents_skipped)
    INGESTED_FILES.labels("failed").inc(report.documents_failed)
    CHUNKS_WRITTEN.inc(report.chunks_written)
    EMBEDDING_CACHE_HITS.inc(report.embedding_cache_hits)


def record_failed_file() -> None:
    """Count one file that failed before it reached an ingest job (e.g. an upload that is too large or unsupported)."""
    INGESTED_FILES.labels("failed").inc()


def record_search(result: SearchResult) -> None:
    """Count one search and its total latency."""
    SEARCHES.labels(result.mode).inc()
    SEARCH_SECONDS.labels(result.mode).observe(result.latencies_ms.get("total", 0.0) / MS_PER_SECOND)


def record_cache_lookup(cache: str, hit: bool) -> None:
    """Count one lookup in the cache called ``cache`` (e.g. ``retrieval``)."""
    CACHE_LOOKUPS.labels(cache, "hit" if hit else "miss").inc()


@contextmanager
def timed_embedding(kind: str, texts: int) -> Iterator[None]:
    """Count one embedder call of ``texts`` texts (``kind`` is documents or queries) and time it."""
    EMBEDDING_CALLS.labels(kind).inc()
    EMBEDDED_TEXTS.labels(kind).inc(texts)
    with EMBEDDING_SECONDS.labels(kind).time():
        yield


@contextmanager
def timed_llm_call() -> Iterator[None]:
    """Count and time one HTTP call to the LLM; an exception counts it as an error."""
    started = time.perf_counter()
    try:
        yield
    except BaseException:
        LLM_CALLS.labels("error").inc()
        raise
    else:
        LLM_CALLS.labels("ok").inc()
    finally:
        LLM_SECONDS.observe(time.perf_counter() - started)


def observe_http(method: str, route: str, status: int, seconds: float) -> None:
    """Count one served HTTP request."""
    HTTP_REQUESTS.labels(method, route, str(status)).inc()
    HTTP_SECONDS.labels(method, route).observe(seconds)


def record_answer_given() -> None:
    """Count one answer given (the base of the rated-helpful and citation-opening shares)."""
    ANSWERS_GIVEN.inc()


def record_rating(rating: str) -> None:
    """Count one rating of an answer (``helpful`` or ``not_helpful``)."""
    ANSWER_RATINGS.labels(rating).inc()


def record_first_token(mode: str, seconds: float) -> None:
    """Observe one streamed answer's time to its first token (``mode``: llm, extractive, no_results, no_retrieval)."""
    FIRST_TOKEN_SECONDS.labels(mode).observe(seconds)


def record_citation_open() -> None:
    """Count one citation of an answer opened by its asker."""
    CITATION_OPENS.inc()


def set_index_size(stats: Mapping[str, Any]) -> None:
    """Update the index gauges from :meth:`ragstream.Ragstream.stats`."""
    DOCUMENTS.set(stats.get("documents", 0))
    CHUNKS.set(stats.get("points", stats.get("chunks", 0)))


def render() -> bytes:
    """Every metric in the Prometheus text format."""
    return generate_latest(REGISTRY)
