"""GGUF files written byte by byte (header and metadata only, no tensors): what the metadata reader is tested on.

``write_gguf(path, {"general.architecture": "bert", "bert.pooling_type": U32(2), ...})`` writes version 3 with
each value typed by its Python type (str, bool, float: f32, int: i32) or by a wrapper (``U32``, ``Strings``,
``Floats``, ``NestedArrays``: arrays of arrays ``depth`` deep, what a hostile header nests 10,000 deep).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

STRING, ARRAY, UINT32, INT32, FLOAT32, BOOL = 8, 9, 4, 5, 6, 7


@dataclass(frozen=True)
class U32:
    """A uint32 value (llama.cpp writes ``pooling_type`` and lengths so)."""

    value: int


@dataclass(frozen=True)
class Strings:
    """An array of strings (a tokenizer's vocabulary)."""

    items: tuple[str, ...]


@dataclass(frozen=True)
class Floats:
    """An array of float32 (a tokenizer's scores)."""

    items: tuple[float, ...]


@dataclass(frozen=True)
class NestedArrays:
    """An array holding one array holding one array ..., ``depth`` arrays in all, the innermost of ``items`` uint32."""

    depth: int
    items: tuple[int, ...] = ()


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _value(value: object) -> bytes:
    if isinstance(value, U32):
        return struct.pack("<I", UINT32) + struct.pack("<I", value.value)
    if isinstance(value, Strings):
        return struct.pack("<IIQ", ARRAY, STRING, len(value.items)) + b"".join(_string(s) for s in value.items)
    if isinstance(value, Floats):
        return struct.pack("<IIQ", ARRAY, FLOAT32, len(value.items)) + struct.pack(f"<{len(value.items)}f", *value.items)
    if isinstance(value, NestedArrays):
        nesting = struct.pack("<IQ", ARRAY, 1) * (value.depth - 1)
        innermost = struct.pack("<IQ", UINT32, len(value.items)) + struct.pack(f"<{len(value.items)}I", *value.items)
        return struct.pack("<I", ARRAY) + nesting + innermost
    if isinstance(value, bool):
        return struct.pack("<I?", BOOL, value)
    if isinstance(value, int):
        return struct.pack("<Ii", INT32, value)
    if isinstance(value, float):
        return struct.pack("<If", FLOAT32, value)
    if isinstance(value, str):
        return struct.pack("<I", STRING) + _string(value)
    raise TypeError(f"no GGUF type for {value!r}")


def gguf_bytes(metadata: dict[str, object], *, version: int = 3, count: int | None = None) -> bytes:
    """A GGUF header holding ``metadata`` (``count`` overrides the declared number of entries)."""
    entries = b"".join(_string(key) + _value(value) for key, value in metadata.items())
    declared = len(metadata) if count is None else count
    return b"GGUF" + struct.pack("<IQQ", version, 0, declared) + entries


def write_gguf(path: Path, metadata: dict[str, object], **options: int) -> Path:
    """Write :func:`gguf_bytes` to ``path``; returns ``path``."""
    path.write_bytes(gguf_bytes(metadata, **options))
    return path
