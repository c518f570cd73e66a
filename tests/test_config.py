"""The one typed config: defaults, files (TOML, YAML, JSON), environment overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from ragstream.config import load_config


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


def test_bad_values_and_unknown_keys_are_rejected(tmp_path: Path):
    with pytest.raises(ValidationError):
        load_config(retrieval={"mode": "telepathy"})
    path = tmp_path / "typo.toml"
    path.write_text("[chunking]\nchunk_sise = 5\n")
    with pytest.raises(ValidationError):
        load_config(path)
    with pytest.raises(FileNotFoundError):
        load_config(tmp_path / "missing.toml")


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
