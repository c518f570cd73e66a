"""``ragstream doctor``: what runs each model on this machine and why (the CPU features it was decided from),
where the model files are, and the index's health. Exit 1 when a model the config runs is missing."""

from __future__ import annotations

import importlib.util
import json
import platform
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from ragstream.api_runtime import detect_cpu_features, model_choices, native_bf16
from ragstream.cli.index import CATALOG_FILE, console, load_settings
from ragstream.cli.options import ConfigOption, DataDirOption
from ragstream.config import RagstreamConfig
from ragstream.errors import RagstreamError

EXIT_PROBLEMS = 1


def doctor(
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Say which runtime and dtype each model uses on this CPU and why, where the models are, and the index's health."""
    settings = load_settings(config, data_dir)
    report = doctor_report(settings)
    if json_output:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    if report["problems"]:
        raise typer.Exit(code=EXIT_PROBLEMS)


def doctor_report(settings: RagstreamConfig) -> dict[str, Any]:
    """The report ``ragstream doctor`` prints, as plain data."""
    features = detect_cpu_features()
    native, evidence = native_bf16(features)
    models = _models_found(settings)
    problems = [f"{name}: {where}" for name, (found, where) in models.items() if not found]
    return {
        "python": sys.version.split()[0], "platform": platform.platform(),
        "cpu": {"flags": features.shown(), "flags_from": features.source, "onednn_max_cpu_isa": features.onednn_max_isa,
                "aten_cpu_capability": features.aten_capability, "native_bfloat16": native, "why": evidence,
                "torch": _torch_view()},
        "models": [{"role": choice.role, "runtime": choice.runtime, "why": choice.reason}
                   for choice in model_choices(settings)],
        "model_files": {name: {"found": found, "where": where} for name, (found, where) in models.items()},
        "index": _index_health(settings),
        "problems": problems,
    }


def _torch_view() -> dict[str, Any] | None:
    """torch's own view of the CPU (its kernel level, its bfloat16 checks), when torch is installed."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    view: dict[str, Any] = {"version": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    checks = {"avx512_bf16": getattr(torch.cpu, "_is_avx512_bf16_supported", None),
              "amx_tile": getattr(torch.cpu, "_is_amx_tile_supported", None),
              "onednn_bf16": getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)}
    for name, check in checks.items():
        try:
            view[name] = bool(check()) if check is not None else None
        except RuntimeError:  # an op missing from this torch build
            view[name] = None
    return view


def _models_found(settings: RagstreamConfig) -> dict[str, tuple[bool, str]]:
    """Each model file the config runs: found, and where (or why not)."""
    from ragstream.api_model_files import is_available_locally, locate_onnx_model, resolve_model_path, resolve_onnx_file
    from ragstream.errors import EmbedderUnavailableError, ModelUnavailableError

    embedding, reranker = settings.embedding, settings.reranker
    found: dict[str, tuple[bool, str]] = {}
    backend = embedding.backend()
    if backend == "sentence_transformers":
        available = is_available_locally(embedding.model)
        found["embedding (torch)"] = (available, resolve_model_path(embedding.model) if available else
                                      f"no local copy of {embedding.model!r}")
    onnx_used = backend == "onnx" or (backend == "sentence_transformers" and embedding.query_provider == "onnx")
    if onnx_used and embedding.onnx_export() is not None:
        try:
            found["embedding (onnx)"] = (True, str(resolve_onnx_file(embedding.onnx_export() or "")))
        except EmbedderUnavailableError as error:
            found["embedding (onnx)"] = (False, error.message)
    elif backend == "onnx":
        try:
            found["embedding (onnx)"] = (True, str(locate_onnx_model(embedding.model).onnx_file))
        except ModelUnavailableError as error:
            found["embedding (onnx)"] = (False, error.message)
    if reranker.backend == "onnx":
        try:
            found["reranker (onnx)"] = (True, str(locate_onnx_model(reranker.model, reranker.onnx_model).onnx_file))
        except ModelUnavailableError as error:
            found["reranker (onnx)"] = (False, error.message)
    elif reranker.backend == "cross_encoder":
        available = is_available_locally(reranker.model)
        found["reranker (torch)"] = (available, resolve_model_path(reranker.model) if available else
                                     f"no local copy of {reranker.model!r}")
    return found


def _index_health(settings: RagstreamConfig) -> dict[str, Any]:
    """The index's place, store backend, documents and stale documents (or why it could not be opened)."""
    path = Path(settings.data_dir).resolve()
    health: dict[str, Any] = {"path": str(path), "store_backend": settings.store.backend}
    if settings.store.backend == "qdrant_edge" and not (path / CATALOG_FILE).is_file():
        health["state"] = "no index yet (ragstream ingest PATH makes one)"
        return health
    from ragstream.api import Ragstream

    try:
        with Ragstream(settings) as rs:
            health.update(state="ok", documents=len(rs.documents()), stale_documents=len(rs.stale_documents()))
    except RagstreamError as error:
        health["state"] = f"cannot open: {error.code}: {error.message}"
    return health


def _print(report: dict[str, Any]) -> None:
    cpu = report["cpu"]
    console.print(f"[bold]CPU[/] flags ({cpu['flags_from']}): {' '.join(cpu['flags']) or '-'}", soft_wrap=True)
    console.print(f"  native bfloat16: {'yes' if cpu['native_bfloat16'] else 'no'} ({escape(cpu['why'])})", soft_wrap=True)
    if cpu["torch"] is not None:
        console.print("  torch " + ", ".join(f"{key} {value}" for key, value in cpu["torch"].items()), soft_wrap=True)
    console.print("[bold]Models[/]")
    for choice in report["models"]:
        console.print(f"  {choice['role']}: {escape(choice['runtime'])}: {escape(choice['why'])}", soft_wrap=True)
    for name, entry in report["model_files"].items():
        mark = "[green]found[/]" if entry["found"] else "[red]missing[/]"
        console.print(f"  {name} {mark}: {escape(entry['where'])}", soft_wrap=True)
    index = report["index"]
    console.print(f"[bold]Index[/] {index['path']} (store {index['store_backend']}): {escape(index['state'])}"
                  + (f", {index['documents']} documents, {index['stale_documents']} stale" if "documents" in index else ""),
                  soft_wrap=True)
    for problem in report["problems"]:
        console.print(f"[red]problem[/] {escape(problem)}", soft_wrap=True)
