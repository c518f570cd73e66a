"""The packaged GGUF models are checked by sha256: each piece as it is joined, the joined file, the one-file model.

The fast tests join small real files; the slow ones check the installed packages against the pins.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from support.required import packaged_model

from ragstream.errors import ModelUnavailableError
from ragstream.providers import gguf_models
from ragstream.providers.gguf_models import join_verified

PIECES = [b"GGUF" + bytes(range(256)) * 40, b"second piece " * 500, b"\x00\xff" * 3000]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _pieces(folder: Path) -> list[tuple[Path, str]]:
    folder.mkdir(exist_ok=True)
    pieces = []
    for number, data in enumerate(PIECES, start=1):
        path = folder / f"part{number:02d}.bin"
        path.write_bytes(data)
        pieces.append((path, _sha(data)))
    return pieces


def test_pieces_join_into_the_pinned_file_once(tmp_path: Path):
    pieces = _pieces(tmp_path / "pieces")
    target = tmp_path / "cache" / "model.gguf"
    assert join_verified(pieces, target, _sha(b"".join(PIECES))) == target
    assert target.read_bytes() == b"".join(PIECES)
    written = target.stat().st_mtime_ns, target.stat().st_ino
    assert join_verified(pieces, target, _sha(b"".join(PIECES))) == target
    assert (target.stat().st_mtime_ns, target.stat().st_ino) == written  # reused, not joined again


def test_a_damaged_piece_is_refused_by_name_and_nothing_is_left(tmp_path: Path):
    pieces = _pieces(tmp_path / "pieces")
    damaged = pieces[1][0]
    damaged.write_bytes(damaged.read_bytes()[:-1] + b"!")  # same size, one byte changed: magic bytes alone pass
    target = tmp_path / "cache" / "model.gguf"
    with pytest.raises(ModelUnavailableError, match=r"part02\.bin fails its sha256 check") as raised:
        join_verified(pieces, target, _sha(b"".join(PIECES)))
    assert raised.value.code == "model_unavailable"
    assert list(target.parent.iterdir()) == []  # no target, no temporary file


def test_a_joined_file_that_is_not_the_pinned_one_is_refused(tmp_path: Path):
    pieces = _pieces(tmp_path / "pieces")
    target = tmp_path / "cache" / "model.gguf"
    with pytest.raises(ModelUnavailableError, match="the result fails its sha256 check"):
        join_verified(pieces[::-1][:1] + pieces[1:], target, _sha(b"".join(PIECES)))
    assert not target.exists()


def test_a_damaged_cached_file_is_joined_again(tmp_path: Path):
    pieces = _pieces(tmp_path / "pieces")
    target = tmp_path / "cache" / "model.gguf"
    target.parent.mkdir()
    target.write_bytes(b"GGUF" + b"\x00" * (sum(map(len, PIECES)) - 4))  # the right size and magic, the wrong bytes
    join_verified(pieces, target, _sha(b"".join(PIECES)))
    assert target.read_bytes() == b"".join(PIECES)


def test_pieces_that_are_no_gguf_file_are_refused(tmp_path: Path):
    path = tmp_path / "part01.bin"
    path.write_bytes(b"not a model")
    with pytest.raises(ModelUnavailableError, match="is not a GGUF file"):
        join_verified([(path, _sha(b"not a model"))], tmp_path / "model.gguf", _sha(b"not a model"))


@pytest.mark.slow
def test_the_installed_packages_match_their_pins(tmp_path: Path):
    smollm2 = packaged_model(gguf_models.smollm2_gguf_path)
    joined = packaged_model(lambda: gguf_models.qwen_coder_gguf_path(tmp_path))
    for model in (smollm2, joined):
        with model.open("rb") as handle:
            assert handle.read(4) == b"GGUF"
    digest = hashlib.sha256()
    with joined.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    assert digest.hexdigest() == gguf_models.QWEN_CODER_SHA256
