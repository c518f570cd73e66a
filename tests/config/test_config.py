"""The one typed config: defaults, files (TOML, YAML, JSON), environment overrides."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from ragstream.config import CONFIG_FILE_ENV, ConfigSection, RagstreamConfig, load_config


def test_documented_defaults():
    config = load_config()
    assert (config.chunking.chunk_size, config.chunking.chunk_overlap) == (1000, 200)
    assert config.chunking.max_chunk_tokens == 8192
    assert config.retrieval.rrf_k == 60 and config.retrieval.mode == "hybrid"
    limits = config.pipeline
    assert (limits.N0_QUERY_PIECES, limits.N1_RETR_MAX_CANDIDATES, limits.N2_RERANK_TOP_K,
            limits.N3_FINAL_SELECTION_MAX, limits.logavgexp_tau) == (5, 200, 50, 3, 9.0)
    assert config.limits.max_query_chars == 2000
    assert not config.llm.enabled


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("ragstream.toml", 'data_dir = "idx"\n[chunking]\nchunk_size = 640\n[pipeline]\nN2_RERANK_TOP_K = 7\n'),
        ("ragstream.yaml", "data_dir: idx\nchunking:\n  chunk_size: 640\npipeline:\n  N2_RERANK_TOP_K: 7\n"),
        ("ragstream.json", json.dumps({"data_dir": "idx", "chunking": {"chunk_size": 640}, "pipeline": {"N2_RERANK_TOP_K": 7}})),
    ],
)
def test_config_files(tmp_path: Path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    config = load_config(path)
    assert config.data_dir == Path("idx")
    assert config.chunking.chunk_size == 640 and config.chunking.chunk_overlap == 200
    assert config.pipeline.N2_RERANK_TOP_K == 7


def test_environment_overrides_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "ragstream.toml"
    path.write_text("[chunking]\nchunk_size = 640\n")
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(tmp_path / "env-index"))
    monkeypatch.setenv("RAGSTREAM_CHUNKING__CHUNK_SIZE", "900")
    monkeypatch.setenv("RAGSTREAM_PIPELINE__N1_RETR_MAX_CANDIDATES", "33")
    config = load_config(path)
    assert config.data_dir == tmp_path / "env-index"
    assert config.chunking.chunk_size == 900
    assert config.pipeline.N1_RETR_MAX_CANDIDATES == 33


def test_precedence_defaults_file_environment_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "ragstream.toml"
    path.write_text("[chunking]\nchunk_size = 640\nchunk_overlap = 100\nmin_chunk_chars = 5\n")
    monkeypatch.setenv("RAGSTREAM_CHUNKING__CHUNK_OVERLAP", "150")
    monkeypatch.setenv("RAGSTREAM_CHUNKING__MIN_CHUNK_CHARS", "7")
    chunking = load_config(path, chunking={"min_chunk_chars": 9}).chunking
    assert (chunking.max_chunk_tokens, chunking.chunk_size, chunking.chunk_overlap, chunking.min_chunk_chars) == \
        (8192, 640, 150, 9)  # default, file, environment, override


def test_config_file_named_by_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    named, given = tmp_path / "named.toml", tmp_path / "given.yaml"
    named.write_text("[chunking]\nchunk_size = 640\n")
    given.write_text("chunking:\n  chunk_size: 720\n")
    monkeypatch.setenv(CONFIG_FILE_ENV, str(named))
    assert load_config().chunking.chunk_size == 640
    assert RagstreamConfig().chunking.chunk_size == 640
    assert load_config(given).chunking.chunk_size == 720  # an explicit file wins over RAGSTREAM_CONFIG
    assert os.environ[CONFIG_FILE_ENV] == str(named)


def test_load_config_in_threads_reads_each_its_own_file_and_leaves_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(CONFIG_FILE_ENV, raising=False)
    files: dict[int, Path | None] = {1000: None}  # no file: the default
    for size in (640, 720):
        files[size] = tmp_path / f"size-{size}.toml"
        files[size].write_text(f"[chunking]\nchunk_size = {size}\n")
    environ_before = dict(os.environ)
    start = threading.Barrier(len(files) + 1)
    loading = threading.Event()
    wrong: list[tuple[int, int]] = []
    seen: list[str] = []

    def load(expected: int, path: Path | None) -> None:
        start.wait()
        for _ in range(40):
            got = load_config(path).chunking.chunk_size
            if got != expected:
                wrong.append((expected, got))

    def watch() -> None:  # what another thread reading os.environ meanwhile would see
        start.wait()
        while loading.is_set():
            if CONFIG_FILE_ENV in os.environ:
                seen.append(os.environ.get(CONFIG_FILE_ENV, ""))

    loading.set()
    threads = [threading.Thread(target=load, args=item) for item in files.items()]
    watcher = threading.Thread(target=watch)
    for thread in [*threads, watcher]:
        thread.start()
    for thread in threads:
        thread.join()
    loading.clear()
    watcher.join()
    assert wrong == [] and seen == []
    assert dict(os.environ) == environ_before


def test_bad_values_and_unknown_keys_are_rejected(tmp_path: Path):
    with pytest.raises(ValidationError):
        load_config(retrieval={"mode": "telepathy"})
    path = tmp_path / "typo.toml"
    path.write_text("[chunking]\nchunk_sise = 5\n")
    with pytest.raises(ValidationError):
        load_config(path)
    with pytest.raises(FileNotFoundError):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ValidationError, match="at least twice"):  # pgvector would refuse the build an hour later
        load_config(store={"hnsw_m": 48, "hnsw_ef_construction": 64})


def test_fingerprint_tracks_index_shaping_settings():
    base = load_config()
    assert base.index_fingerprint() == load_config(retrieval={"top_k": 3}).index_fingerprint()
    assert base.index_fingerprint() != load_config(chunking={"chunk_size": 500}).index_fingerprint()
    assert base.index_fingerprint() != load_config(embedding={"model": "other"}).index_fingerprint()


def test_default_data_dir_is_the_users_data_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("RAGSTREAM_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    assert load_config().data_dir == tmp_path / "share" / "ragstream"
    monkeypatch.setenv("RAGSTREAM_DATA_DIR", str(tmp_path / "elsewhere"))
    assert load_config().data_dir == tmp_path / "elsewhere"


def _knobs(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, FieldInfo]]:
    for name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, ConfigSection):
            yield from _knobs(field.annotation, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", field


def test_every_knob_says_what_it_does():
    knobs = dict(_knobs(RagstreamConfig))
    assert len(knobs) > 250 and "answer.support.similarity" in knobs and "server.jobs.lease_seconds" in knobs
    assert [name for name, field in knobs.items() if not (field.description or "").strip()] == []
