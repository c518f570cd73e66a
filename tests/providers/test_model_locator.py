"""Where model weights are found, checked without torch."""

from __future__ import annotations

from pathlib import Path

from ragstream.providers.packaged_models import is_available_locally, resolve_model_path


def test_a_missing_path_is_not_available_and_does_not_raise(tmp_path: Path) -> None:
    assert not is_available_locally(str(tmp_path / "a" / "missing"))
    assert not is_available_locally("./not/a/model/here")


def test_an_existing_directory_is_available(tmp_path: Path) -> None:
    assert is_available_locally(str(tmp_path))
    assert resolve_model_path(str(tmp_path)) == str(tmp_path.resolve())


def test_the_packaged_minilm_resolves_to_its_package_directory() -> None:
    location = resolve_model_path("sentence-transformers/all-MiniLM-L6-v2")
    assert Path(location).is_dir()
    assert is_available_locally("sentence-transformers/all-MiniLM-L6-v2")


def test_an_unknown_hub_id_is_not_available_offline() -> None:
    assert not is_available_locally("nobody-has/this-model-xyz")
