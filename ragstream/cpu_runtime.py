"""The CPU's features and the local embedding runtime they favour (issue 43).

torch runs bfloat16 fast only on a CPU with bfloat16 instructions (x86: ``avx512_bf16`` or ``amx_bf16``;
Arm: ``bf16``); elsewhere it emulates them, slower than float32 (1.5 passages/s on a 2-core AVX2 EPYC, where
float32 ran 2x and the int8 ONNX export 15x as fast). :func:`choose_embedder_runtime` is the pure decision
(features in, provider, dtype and the reason out), :func:`detect_cpu_features` reads the features: Linux's
``/proc/cpuinfo``, narrowed by oneDNN's ``ONEDNN_MAX_CPU_ISA`` and torch's ``ATEN_CPU_CAPABILITY`` when they
cap the instruction set. Elsewhere the features are unknown and the choice avoids bfloat16 (the safe side:
the int8 ONNX export runs natively on every CPU). Nothing here imports torch.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

CPUINFO = Path("/proc/cpuinfo")
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")
"""CPU flags of bfloat16 arithmetic: x86 (``avx512_bf16``, ``amx_bf16``) and Arm (``bf16`` in ``Features``)."""
SHOWN_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx_vnni", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
               "amx_tile", "amx_bf16", "amx_int8", "asimd", "asimddp", "bf16", "i8mm", "sve")
"""The flags ``ragstream doctor`` and ``bench/embedders.py`` show: the ones the runtimes' kernels look for."""
ONEDNN_ISA_ENV = "ONEDNN_MAX_CPU_ISA"
ONEDNN_ISAS_WITHOUT_BF16 = frozenset({"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE",
                                      "AVX512_CORE_VNNI"})
"""oneDNN instruction-set caps below bfloat16: torch's bfloat16 matrix products are emulated under them."""
ATEN_CAPABILITY_ENV = "ATEN_CPU_CAPABILITY"
ATEN_CAPABILITIES_WITHOUT_BF16 = frozenset({"default", "avx2", "zvector", "vsx"})

LocalProvider = Literal["sentence_transformers", "onnx"]
TorchDtype = Literal["float32", "bfloat16"]


@dataclass(frozen=True)
class CpuFeatures:
    """What is known of the CPU: its flags (None: unknown on this OS), where they were read, and the
    instruction-set caps set in the environment."""

    flags: frozenset[str] | None
    source: str
    onednn_max_isa: str | None = None
    aten_capability: str | None = None

    def shown(self) -> list[str]:
        """The flags of :data:`SHOWN_FLAGS` the CPU has, in that order."""
        return [flag for flag in SHOWN_FLAGS if self.flags is not None and flag in self.flags]


@dataclass(frozen=True)
class RuntimeChoice:
    """The embedder runtime chosen: the provider, the torch dtype (None for ONNX) and why, in words."""

    provider: LocalProvider
    dtype: TorchDtype | None
    reason: str

    def label(self) -> str:
        """``sentence_transformers (torch bfloat16)`` or ``onnx (int8 export)``."""
        return f"{self.provider} (torch {self.dtype})" if self.dtype else f"{self.provider} (ONNX Runtime)"


def native_bf16(features: CpuFeatures) -> tuple[bool, str]:
    """Whether bfloat16 math runs natively (not emulated) on this CPU, and the evidence, in words."""
    if features.flags is None:
        return False, f"the CPU's features are unknown ({features.source}), so bfloat16 is taken as emulated"
    found = [flag for flag in NATIVE_BF16_FLAGS if flag in features.flags]
    if not found:
        return False, ("the CPU has no bfloat16 instructions (no " + ", ".join(NATIVE_BF16_FLAGS[:2])
                       + "): torch would emulate bfloat16")
    isa = (features.onednn_max_isa or "").strip().upper()
    if isa in ONEDNN_ISAS_WITHOUT_BF16:
        return False, f"{ONEDNN_ISA_ENV}={isa} keeps oneDNN off the CPU's {found[0]}: torch would emulate bfloat16"
    capability = (features.aten_capability or "").strip().lower()
    if capability in ATEN_CAPABILITIES_WITHOUT_BF16:
        return False, f"{ATEN_CAPABILITY_ENV}={capability} keeps torch off the CPU's {found[0]}"
    return True, f"the CPU has {found[0]}: torch runs bfloat16 natively"


def choose_embedder_runtime(
    *, provider: str, dtype: str, torch_installed: bool, compatible_export: bool, onnx_only: bool,
    features: CpuFeatures,
) -> RuntimeChoice:
    """The local runtime of an embedding model: an explicit ``provider`` or ``dtype`` wins; ``auto`` takes
    torch bfloat16 where the CPU has bfloat16 instructions, else the model's int8 ONNX export when it is one
    whose vectors are documented to agree with torch's (``compatible_export``), else torch float32.

    ``provider`` is ``embedding.provider`` (a remote or gguf provider never reaches here), ``dtype``
    ``embedding.dtype``; ``onnx_only``: the model ships only as an ONNX export."""
    native, evidence = native_bf16(features)
    torch_dtype: TorchDtype = "bfloat16" if dtype == "bfloat16" or (dtype == "auto" and native) else "float32"
    dtype_reason = f"embedding.dtype={dtype}" if dtype != "auto" else evidence if native else f"{evidence}, so float32"
    if provider == "onnx":
        return RuntimeChoice("onnx", None, "embedding.provider=onnx")
    if provider == "sentence_transformers":
        return RuntimeChoice("sentence_transformers", torch_dtype, f"embedding.provider=sentence_transformers; "
                             f"{dtype_reason}")
    if onnx_only:
        return RuntimeChoice("onnx", None, "the model ships only as an ONNX export")
    if not torch_installed:
        return RuntimeChoice("onnx", None, "torch is not installed (pip install 'ragstream[torch]' adds it)")
    if dtype != "auto":
        return RuntimeChoice("sentence_transformers", torch_dtype, f"embedding.dtype={dtype} asks for torch")
    if native:
        return RuntimeChoice("sentence_transformers", "bfloat16", evidence)
    if compatible_export:
        return RuntimeChoice("onnx", None, f"{evidence}; the model's int8 ONNX export runs natively and its "
                             "vectors agree with torch's (cosine >= 0.999), so the index stays valid")
    return RuntimeChoice("sentence_transformers", "float32", f"{evidence}, and the model has no ONNX export known "
                         "to agree with torch, so torch float32")


@functools.cache
def detect_cpu_features() -> CpuFeatures:
    """This machine's :class:`CpuFeatures` (read once per process)."""
    environ = {"onednn_max_isa": os.environ.get(ONEDNN_ISA_ENV), "aten_capability": os.environ.get(ATEN_CAPABILITY_ENV)}
    try:
        text = CPUINFO.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return CpuFeatures(None, f"no {CPUINFO} on this OS", **environ)
    flags = parse_cpuinfo_flags(text)
    if flags is None:
        return CpuFeatures(None, f"{CPUINFO} lists no flags", **environ)
    return CpuFeatures(flags, str(CPUINFO), **environ)


def parse_cpuinfo_flags(text: str) -> frozenset[str] | None:
    """The first processor's ``flags`` (x86) or ``Features`` (Arm) in ``/proc/cpuinfo`` text, or None."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return None
