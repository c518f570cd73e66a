"""``store``: the vector store and its catalog, and ``ragstream migrate`` (docs/backends.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from ragstream.config.base import ConfigSection


class QdrantServerConfig(ConfigSection):
    """The ``qdrant`` store backend: a Qdrant server or cluster (docs/backends.md)."""

    collection: str = Field("ragstream", description="Collection holding this index's chunks.")
    api_key: str | None = Field(None, description="API key of the Qdrant server (its QDRANT__SERVICE__API_KEY).")
    timeout_seconds: float = Field(30.0, gt=0, description="Timeout of one request to the Qdrant server, in seconds.")
    prefer_grpc: bool = Field(False, description="Talk gRPC (port 6334) instead of HTTP.")
    upsert_batch: int = Field(256, ge=1, description="Points per upsert or scroll request.")
    catalog_url: str | None = Field(
        None,
        description="PostgreSQL URL of the catalog (documents, versions, embedding cache, conversations), so several "
        "processes share one index; unset: SQLite in data_dir.",
    )


class MigrateConfig(ConfigSection):
    """``ragstream migrate``: copying an index to another backend (docs/backends.md)."""

    batch_chunks: int = Field(512, ge=1, description="Chunks written to the target per batch (one catalog switch each).")
    page_rows: int = Field(1000, ge=1, description="Embedding-cache entries or conversation turns read per page.")
    vector_tolerance: float = Field(
        1e-5, ge=0,
        description="Largest difference allowed between a source and a copied dense vector (both L2-normalised: "
        "backends that normalise on insert change the last bits).",
    )


class StoreConfig(ConfigSection):
    """The vector store."""

    backend: Literal["qdrant_edge", "postgres", "qdrant"] = Field(
        "qdrant_edge",
        description="qdrant_edge: the embedded store and a SQLite catalog in data_dir (nothing to run). "
        "postgres: vectors, catalog and BM25 in one PostgreSQL >= 15 database with pgvector at store.url "
        "(pip install 'ragstream[postgres]'; docs/backends.md). qdrant: a Qdrant server at store.url.",
    )
    url: str | None = Field(
        None,
        description="The database a server backend connects to, e.g. postgresql://user:pass@host:5432/ragstream "
        "(required for postgres and qdrant; `ragstream db start` runs a local PostgreSQL and prints one).",
    )
    pool_size: int = Field(8, ge=1, description="Connections the postgres backend keeps open per process.")
    reader_lease_seconds: float = Field(
        600.0, gt=0, description="postgres: how long (seconds) a reader registered in the database (one per request) "
        "keeps every process from deleting a replaced version it may still read; a request reading longer may find "
        "its version gone (never a mix of two).")
    connect_timeout_seconds: float = Field(
        10.0, gt=0, description="How long (seconds) the postgres backend waits for a connection before a 503.")
    commit_lock_timeout_seconds: float = Field(
        120.0, gt=0, description="postgres: how long (seconds) a writer waits for the index's commit lock, which every "
        "process writing to the database takes for the bounded write and switch of one batch (docs/scaling.md), before "
        "a 503 (vector_db_unavailable).")
    hnsw_m: int = Field(
        32, ge=2, le=100, description="postgres: HNSW graph degree (pgvector `m`): higher finds more true neighbours "
        "in a large or hard corpus, for a longer build and a larger index (docs/scaling.md measures both at 1M).")
    hnsw_ef_construction: int = Field(
        128, ge=4, le=1000, description="postgres: HNSW build beam (pgvector `ef_construction`, at least twice "
        "`hnsw_m`): higher builds a better graph, more slowly.")
    hnsw_build_memory_mb: int = Field(
        512, ge=64, description="postgres: maintenance_work_mem while the HNSW index is built, in megabytes (a graph "
        "that fits builds several times faster).")
    hnsw_ef_search: int = Field(
        200, ge=1, le=1000,
        description="postgres: HNSW query beam (`hnsw.ef_search`); also the most candidates one dense query "
        "returns, so it is raised to the query's limit when smaller. Higher is more exact and slower "
        "(docs/backends.md gives recall@10 against exact search).",
    )
    optimize_min_points: int = Field(
        100_000,
        description="Build the HNSW index (optimize) once the store holds this many chunks; "
        "below it exact search is fast enough and always exact.",
    )
    optimize_min_new_points: int = Field(
        20_000, ge=1,
        description="Rebuild only once this many chunks were added since the last build (a build copies the "
        "shard and indexes it in a child process; unindexed new points are searched exactly meanwhile).",
    )
    optimize_timeout_seconds: float = Field(
        3600.0, gt=0, description="A build taking longer (seconds) is abandoned (searches stay exact) and retried at "
        "the next ingest."
    )
    edge_hnsw_m: int = Field(16, ge=4, description="qdrant_edge: HNSW graph degree (links per point) of an index build.")
    edge_hnsw_ef_construct: int = Field(
        100, ge=4, description="qdrant_edge: HNSW build beam: lower builds faster, higher finds more true neighbours "
        "(docs/scaling.md measures both: 64 kept recall@10 at 0.995 on 1M synthetic chunks and built 100k 19% faster; "
        "it becomes the default once SciFact and the documentation question sets confirm it).")
    edge_hnsw_full_scan_kb: int = Field(
        10_000, ge=1, description="qdrant_edge: a filter matching less than this many kilobytes of vectors is searched "
        "exactly; payload values holding more get HNSW links of their own in a build (Qdrant's full_scan_threshold).")
    edge_indexing_threads: int = Field(
        0, ge=0, description="qdrant_edge: threads of an index build (0: Qdrant's choice, one per CPU).")
    edge_process: Literal["auto", "on", "off"] = Field(
        "auto",
        description="qdrant_edge: hold the shard in a child process, so loading a built HNSW index (13 s at a million "
        "chunks, during which qdrant-edge holds the GIL) never stops the server's threads; a second child loads each "
        "new build while the first keeps answering (docs/scaling.md). auto: from the first index build on (an index "
        "that was never built is held in process, as with off); on: always; off: never.")
    edge_process_start_seconds: float = Field(
        900.0, gt=0, description="qdrant_edge: how long a store process may take to load the shard before it counts as "
        "failed (a million-chunk shard loads in about 15 s on 2 cores).")
    edge_process_call_seconds: float = Field(
        120.0, gt=0, description="qdrant_edge: the longest one call waits on a running store process (busy under load, "
        "or hung) before it fails with vector_db_unavailable (logged); a process that exits fails the call at once. "
        "Generous: load alone makes calls slow, and a slow answer is still an answer.")
    edge_process_liveness_seconds: float = Field(
        1.0, gt=0, description="qdrant_edge: how often a call waiting on the store process checks that it still runs "
        "(a dead one fails the call then, naming its exit status or signal).")
    edge_process_stop_seconds: float = Field(
        120.0, gt=0, description="qdrant_edge: how long a retired store process may take to finish its calls in flight "
        "and close its shard before it is killed (the shard on disk stays whole: every write was flushed).")
    place_cache_entries: int = Field(
        200_000, ge=0,
        description="qdrant_edge: chunk ids whose document and position a hybrid ranking remembers (about 250 "
        "bytes each), so a query does not read those payload fields again (docs/performance.md); a chunk id names "
        "one immutable version, so a remembered place never goes stale (0: read them with every query).")
    sqlite_wal_limit_bytes: int = Field(
        1024 * 1024, ge=64 * 1024,
        description="The SQLite catalog (qdrant_edge; qdrant without catalog_url): its write-ahead log is copied "
        "into the database once it holds this many bytes, and cut back to them after, so the catalog on disk is its "
        "database plus at most about this much (docs/configuration.md). Lower: a smaller file, more checkpoints.")
    bm25_k1: float = Field(1.2, description="BM25 term-frequency saturation.")
    bm25_b: float = Field(0.75, description="BM25 length normalisation (0: none, 1: full).")
    bm25_avg_len: float = Field(256.0, description="BM25 expected average chunk length in tokens.")
    bm25_language: str = Field("english", description="Stopwords and stemmer language for BM25.")
    bm25_reweigh_drift: float = Field(
        0.05, gt=0,
        description="postgres: chunks' BM25 weights use the true average chunk length; when it moves more "
        "than this fraction from the one a chunk was weighed with, the next optimize reweighs it "
        "(embedded store: bm25_avg_len instead).",
    )
    bm25_first_pass_chunks: int = Field(
        20_000, ge=1,
        description="postgres: BM25 first scores the chunks holding the query's rarest terms, about this many; "
        "chunks sharing only commoner terms are scored only if they could still reach the top, so the ranking "
        "stays exact (docs/scaling.md). Lower: less work when the rare terms suffice, more passes when not.")
    bm25_max_candidates: int = Field(
        50_000, ge=1,
        description="postgres: the most chunks one BM25 query scores. Terms held by more chunks than that together "
        "are left out of the candidates (still scored on the chunks found), and a query whose every term is that "
        "common is ranked among this many of its rarest term's chunks; in a corpus of at most this many chunks, BM25 is "
        "exact (docs/backends.md).")
    local_server_port: int = Field(
        0, ge=0, le=65535,
        description="`ragstream db start`: the loopback port of the bundled PostgreSQL (0: a free one, "
        "remembered in its data directory).")
    qdrant: QdrantServerConfig = Field(default_factory=QdrantServerConfig)
    migrate: MigrateConfig = Field(default_factory=MigrateConfig)
    read_only_copy_dir: Path | None = Field(
        None, description="An index opened on a full disk (below limits.min_free_disk_bytes) is searched from a "
        "sparse copy of its vector store made here (on another filesystem); default: the system temp directory.")

    @model_validator(mode="after")
    def _hnsw_beam_covers_degree(self) -> StoreConfig:
        if self.hnsw_ef_construction < 2 * self.hnsw_m:
            raise ValueError("store.hnsw_ef_construction must be at least twice store.hnsw_m (pgvector refuses to "
                             "build the index otherwise)")
        return self
