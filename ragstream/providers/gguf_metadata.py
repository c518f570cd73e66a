"""Read the key/value metadata at the head of a GGUF file (no llama.cpp, no ``gguf`` package needed).

A GGUF file starts with ``GGUF``, a version (2 or 3), the tensor count, the metadata count, then the
metadata: each a string key, a type code and a value. Only scalar and string values are returned;
arrays (the tokenizer's vocabulary, its scores and merges) are skipped over without being read. Counts and
lengths are checked against the file's size, so a damaged or hostile header raises
:class:`ModelUnavailableError` instead of reading gigabytes; arrays of arrays (the format allows any depth) are
skipped without recursion and refused past ``max_array_depth`` (``embedding.gguf_max_array_depth``), so a header
nesting them 10,000 deep is the same typed error, not a RecursionError.

What an embedder takes from it (:func:`embedding_metadata`): the architecture, its pooling
(``<arch>.pooling_type``, written by llama.cpp's converter for embedding models), its vector size
(``<arch>.embedding_length``), its trained context (``<arch>.context_length``) and, where a converter put them,
the query and document prefixes (``sentence_transformers.prompts.query`` and ``.document`` / ``.passage``,
the GGUF form of a sentence-transformers folder's ``prompts``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ragstream.errors import ModelUnavailableError

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
MAX_KEY_BYTES = 65_536
"""Longest metadata key accepted, in bytes (real keys are tens of bytes)."""

_SCALARS: dict[int, str] = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
                            10: "<Q", 11: "<q", 12: "<d"}
STRING_TYPE = 8
ARRAY_TYPE = 9
POOLING_TYPES: dict[int, str] = {0: "none", 1: "mean", 2: "cls", 3: "last", 4: "rank"}
"""llama.cpp's ``llama_pooling_type`` codes, as stored in ``<arch>.pooling_type``."""
QUERY_PREFIX_KEYS = ("sentence_transformers.prompts.query",)
DOCUMENT_PREFIX_KEYS = ("sentence_transformers.prompts.document", "sentence_transformers.prompts.passage")

Scalar = int | float | bool | str


@dataclass(frozen=True)
class GgufEmbeddingMetadata:
    """What a GGUF file says about embedding with it (``None``: the file does not say)."""

    architecture: str
    pooling: str | None
    embedding_length: int | None
    context_length: int | None
    query_prefix: str | None
    document_prefix: str | None


def read_metadata(path: Path, *, max_array_depth: int) -> dict[str, Scalar]:
    """The scalar and string metadata of the GGUF file at ``path``, by key (arrays skipped).

    Raises :class:`ModelUnavailableError` when the file is not GGUF, of an unknown version, or its header is
    cut short, inconsistent or nests arrays more than ``max_array_depth`` deep."""
    size = path.stat().st_size
    try:
        with path.open("rb") as handle:
            return _read(handle, size, path, max_array_depth)
    except (struct.error, UnicodeDecodeError, OverflowError) as error:
        raise ModelUnavailableError(f"{path} has a damaged GGUF header: {error}") from error


def embedding_metadata(path: Path, *, max_array_depth: int) -> GgufEmbeddingMetadata:
    """What the GGUF file at ``path`` says about its pooling, vector size, context and prefixes (arrays nested
    deeper than ``max_array_depth`` refuse the file)."""
    values = read_metadata(path, max_array_depth=max_array_depth)
    arch = str(values.get("general.architecture", ""))
    pooling_code = values.get(f"{arch}.pooling_type")
    pooling = POOLING_TYPES.get(int(pooling_code)) if isinstance(pooling_code, int) else None

    def integer(key: str) -> int | None:
        value = values.get(key)
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

    def text(keys: tuple[str, ...]) -> str | None:
        return next((str(values[key]) for key in keys if isinstance(values.get(key), str)), None)

    return GgufEmbeddingMetadata(architecture=arch, pooling=pooling,
                                 embedding_length=integer(f"{arch}.embedding_length"),
                                 context_length=integer(f"{arch}.context_length"),
                                 query_prefix=text(QUERY_PREFIX_KEYS), document_prefix=text(DOCUMENT_PREFIX_KEYS))


def _read(handle: BinaryIO, size: int, path: Path, max_array_depth: int) -> dict[str, Scalar]:
    if handle.read(4) != GGUF_MAGIC:
        raise ModelUnavailableError(f"{path} is not a GGUF file (it does not start with {GGUF_MAGIC!r})")
    (version,) = _unpack(handle, "<I")
    if version not in SUPPORTED_VERSIONS:
        raise ModelUnavailableError(f"{path} is GGUF version {version}; versions {SUPPORTED_VERSIONS} are read")
    _tensors, count = _unpack(handle, "<QQ")
    if count > size:  # every entry takes more than one byte
        raise ModelUnavailableError(f"{path} claims {count} metadata entries in {size} bytes")
    values: dict[str, Scalar] = {}
    for _ in range(count):
        key = _string(handle, size, MAX_KEY_BYTES)
        (kind,) = _unpack(handle, "<I")
        if kind == ARRAY_TYPE:
            _skip_array(handle, size, max_array_depth)
        else:
            values[key] = _value(handle, kind, size)
    return values


def _unpack(handle: BinaryIO, fmt: str) -> tuple[int, ...]:
    width = struct.calcsize(fmt)
    data = handle.read(width)
    if len(data) != width:
        raise ModelUnavailableError("the GGUF header ends early")
    result: tuple[int, ...] = struct.unpack(fmt, data)
    return result


def _string(handle: BinaryIO, size: int, limit: int | None = None) -> str:
    (length,) = _unpack(handle, "<Q")
    if length > size - handle.tell() or (limit is not None and length > limit):
        raise ModelUnavailableError(f"a GGUF string of {length} bytes does not fit the file")
    data = handle.read(length)
    if len(data) != length:
        raise ModelUnavailableError("the GGUF header ends early")
    return data.decode("utf-8")


def _value(handle: BinaryIO, kind: int, size: int) -> Scalar:
    if kind == STRING_TYPE:
        return _string(handle, size)
    fmt = _SCALARS.get(kind)
    if fmt is None:
        raise ModelUnavailableError(f"unknown GGUF value type {kind}")
    data = handle.read(struct.calcsize(fmt))
    if len(data) != struct.calcsize(fmt):
        raise ModelUnavailableError("the GGUF header ends early")
    value: Scalar = struct.unpack(fmt, data)[0]
    return value


def _skip_array(handle: BinaryIO, size: int, max_depth: int) -> None:
    """Skip an array value (its item type and count come first), the arrays in it included, without recursion:
    ``open_arrays`` holds, for each array entered and not yet left, its item type and the items left to skip."""
    open_arrays = [_array_head(handle, size)]
    while open_arrays:
        kind, left = open_arrays[-1]
        if kind != ARRAY_TYPE:
            _skip_items(handle, size, kind, left)
            open_arrays.pop()
        elif not left:
            open_arrays.pop()
        elif len(open_arrays) >= max_depth:
            raise ModelUnavailableError(f"the GGUF header holds arrays nested {len(open_arrays) + 1} deep, more than "
                                        f"the {max_depth} accepted (embedding.gguf_max_array_depth)")
        else:
            open_arrays[-1] = (kind, left - 1)
            open_arrays.append(_array_head(handle, size))


def _array_head(handle: BinaryIO, size: int) -> tuple[int, int]:
    """An array's item type and item count, the count checked against the bytes left in the file."""
    kind, count = _unpack(handle, "<IQ")
    if count > size - handle.tell():
        raise ModelUnavailableError(f"a GGUF array of {count} items does not fit the file")
    return kind, count


def _skip_items(handle: BinaryIO, size: int, kind: int, count: int) -> None:
    """Skip ``count`` items of the scalar or string type ``kind``."""
    if kind == STRING_TYPE:
        for _ in range(count):
            (length,) = _unpack(handle, "<Q")
            if length > size - handle.tell():
                raise ModelUnavailableError(f"a GGUF string of {length} bytes does not fit the file")
            handle.seek(length, 1)
        return
    fmt = _SCALARS.get(kind)
    if fmt is None:
        raise ModelUnavailableError(f"unknown GGUF array item type {kind}")
    skip = count * struct.calcsize(fmt)
    if skip > size - handle.tell():
        raise ModelUnavailableError(f"a GGUF array of {count} items does not fit the file")
    handle.seek(skip, 1)
