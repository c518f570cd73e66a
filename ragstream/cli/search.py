"""``ragstream search`` and ``ragstream eval``: ranked, attributed results, and retrieval scored on a BEIR set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ragstream.cli.index import console, err_console, fail, load_settings, reading_index
from ragstream.cli.options import ConfigOption, DataDirOption, ScopeOption
from ragstream.errors import RagstreamError
from ragstream.models import Scope

if TYPE_CHECKING:
    from ragstream.models import SearchResult


def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    mode: Annotated[str | None, typer.Option(help="hybrid, dense or bm25.")] = None,
    top_k: Annotated[int | None, typer.Option("--top-k", min=1, help="Number of results (1 or more).")] = None,
    filter_: Annotated[list[str] | None, typer.Option("--filter", help="key=value metadata filter (repeatable).")] = None,
    threshold: Annotated[float | None, typer.Option(help="Minimum score of the mode that runs.")] = None,
    rerank: Annotated[bool, typer.Option("--rerank", help="Re-order the top hits with the cross-encoder.")] = False,
    collection: ScopeOption = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Search the index and print ranked, attributed results."""
    if mode not in (None, "hybrid", "dense", "bm25"):
        raise typer.BadParameter("mode must be hybrid, dense or bm25", param_hint="--mode")
    filters = _parse_filters(filter_ or [])
    with reading_index(config, data_dir) as rs:
        try:
            fields = rs.filter_fields() if filters else set()
        except RagstreamError as error:
            fail(error)
        unknown = sorted(set(filters) - fields)
        if unknown:
            known = ", ".join(sorted(fields))
            raise typer.BadParameter(f"unknown filter field {', '.join(map(repr, unknown))}; known fields: {known}",
                                     param_hint="--filter")
        try:
            result = rs.search_with_collection_names(rs.search(  # collection names, never ids
                query, mode=mode, top_k=top_k, filters=filters, score_threshold=threshold,  # type: ignore[arg-type]
                rerank=rerank, scope=Scope(collections=collection)))
        except RagstreamError as error:
            fail(error)
    if json_output:
        console.print_json(result.model_dump_json())
    else:
        print_search_result(result)


def eval_command(
    beir: Annotated[Path, typer.Option("--beir", help="BEIR dataset folder (corpus.jsonl or files/, queries.jsonl, qrels/).")],
    split: Annotated[str, typer.Option(help="qrels split to score.")] = "train",
    max_queries: Annotated[int | None, typer.Option(help="Score only the first N queries.")] = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="One JSON object keyed by mode.")] = False,
    mode: Annotated[str, typer.Option(
        help="search: bm25, dense and hybrid; pipeline: the answer path's ranking (Retrieval + ReRanker) beside them.",
    )] = "search",
) -> None:
    """Score retrieval on a BEIR dataset (NDCG@5, NDCG@10, P@5, R@100, MRR, hit@1), per mode."""
    from ragstream.api import Ragstream
    from ragstream.api_evaluation import METRICS, MODES, PIPELINE, evaluate_retrieval, load_beir

    if mode not in ("search", PIPELINE):
        raise typer.BadParameter("expected search or pipeline", param_hint="--mode")
    modes = (*MODES, PIPELINE) if mode == PIPELINE else MODES
    dataset = load_beir(beir, split)
    base = load_settings(config, data_dir)
    eval_config = base.model_copy(update={"data_dir": Path(base.data_dir) / "eval" / dataset.name})
    err_console.print(f"[dim]index {Path(eval_config.data_dir).resolve()}[/]")
    if not json_output:
        err_console.print(f"ingesting {dataset.name} and scoring {len(dataset.queries)} queries ...")
    with Ragstream(eval_config) as rs:
        try:
            result = evaluate_retrieval(rs, dataset, modes=modes, max_queries=max_queries)
        except RagstreamError as error:  # e.g. unsupported_file_type: a corpus line names an unknown "mime"
            fail(error)
    if json_output:
        console.print_json(json.dumps(result.metrics))
        return
    from rich.table import Table

    table = Table("mode", *METRICS, "p50 ms", "p95 ms", "p99 ms")
    for mode, scores in result.metrics.items():
        latency = result.query_latency_ms[mode]
        table.add_row(mode, *(f"{scores[name]:.4f}" for name in METRICS), *(f"{latency[p]:.1f}" for p in ("p50", "p95", "p99")))
    console.print(table)


def _parse_filters(pairs: list[str]) -> dict[str, str | int | bool]:
    filters: dict[str, str | int | bool] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected key=value, got {pair!r}", param_hint="--filter")
        filters[key.strip()] = _coerce(value.strip())
    return filters


def _coerce(value: str) -> str | int | bool:
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return int(value) if value.lstrip("-").isdigit() else value


def print_search_result(result: SearchResult) -> None:
    from rich.table import Table

    if result.fallback_reason:
        console.print(f"[yellow]{result.fallback_reason}[/]")
    if result.rerank_reason:
        console.print(f"[yellow]not reranked: {result.rerank_reason}[/]", highlight=False, markup=False)
    kind = f"{result.mode} search" + (", reranked" if result.reranked else "")
    table = Table("#", "score", "source", "section / page", "text", title=f"{kind}, {result.latencies_ms['total']:.0f} ms")
    for hit in result.hits:
        meta = hit.chunk.metadata
        where = meta.header_path or meta.section
        if meta.page is not None:
            where = f"{where} p.{meta.page}".strip()
        snippet = " ".join(hit.chunk.text.split())[:160]
        table.add_row(str(hit.rank), f"{hit.score:.4f}", Path(meta.source).name, where, snippet)
    console.print(table)
    if not result.hits:
        console.print("no results")
