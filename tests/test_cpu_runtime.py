"""Issue 43: the local embedder never runs a dtype the CPU emulates. The decision is a pure function of the CPU's
features (the reporter's AVX2-only EPYC and a CPU with bfloat16 instructions, as /proc/cpuinfo lists them), an
explicit setting always wins, and this machine's features are read from /proc/cpuinfo where there is one."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstream.config import EmbeddingConfig
from ragstream.cpu_runtime import (
    CPUINFO,
    CpuFeatures,
    choose_embedder_runtime,
    detect_cpu_features,
    native_bf16,
    parse_cpuinfo_flags,
)

AVX2_EPYC = CpuFeatures(frozenset("fpu sse4_2 avx avx2 fma bmi2 sha_ni".split()), "/proc/cpuinfo")
"""The reporter's 2-core AMD EPYC: AVX2, no AVX-512, no bfloat16."""
BF16_EPYC = CpuFeatures(frozenset("sse4_2 avx avx2 fma avx512f avx512bw avx512_vnni avx512_bf16".split()), "/proc/cpuinfo")
AMX_XEON = CpuFeatures(frozenset("avx2 avx512f amx_tile amx_bf16 amx_int8".split()), "/proc/cpuinfo")
UNKNOWN = CpuFeatures(None, "no /proc/cpuinfo on this OS")
AUTO = {"provider": "auto", "dtype": "auto", "torch_installed": True, "compatible_export": True, "onnx_only": False}


def test_auto_runs_the_int8_onnx_export_where_bfloat16_would_be_emulated():
    choice = choose_embedder_runtime(**AUTO, features=AVX2_EPYC)
    assert (choice.provider, choice.dtype) == ("onnx", None)
    assert "no bfloat16 instructions" in choice.reason and "cosine >= 0.999" in choice.reason


@pytest.mark.parametrize("features", [BF16_EPYC, AMX_XEON])
def test_auto_runs_torch_bfloat16_where_the_cpu_has_bfloat16_instructions(features: CpuFeatures):
    choice = choose_embedder_runtime(**AUTO, features=features)
    assert (choice.provider, choice.dtype) == ("sentence_transformers", "bfloat16")
    assert "bf16" in choice.reason


def test_an_instruction_set_cap_in_the_environment_counts_as_no_bfloat16():
    capped = CpuFeatures(BF16_EPYC.flags, "/proc/cpuinfo", onednn_max_isa="AVX2")
    assert native_bf16(capped)[0] is False and "ONEDNN_MAX_CPU_ISA=AVX2" in native_bf16(capped)[1]
    assert choose_embedder_runtime(**AUTO, features=capped).provider == "onnx"
    assert native_bf16(CpuFeatures(BF16_EPYC.flags, "/proc/cpuinfo", aten_capability="avx2"))[0] is False
    assert native_bf16(CpuFeatures(BF16_EPYC.flags, "/proc/cpuinfo", onednn_max_isa="avx512_core_bf16"))[0] is True


def test_unknown_features_take_the_side_that_is_never_emulated():
    assert choose_embedder_runtime(**AUTO, features=UNKNOWN).provider == "onnx"
    no_export = choose_embedder_runtime(**{**AUTO, "compatible_export": False}, features=UNKNOWN)
    assert (no_export.provider, no_export.dtype) == ("sentence_transformers", "float32")


def test_an_explicit_setting_always_wins():
    for features in (AVX2_EPYC, BF16_EPYC):
        assert choose_embedder_runtime(**{**AUTO, "provider": "onnx"}, features=features).provider == "onnx"
        forced = choose_embedder_runtime(**{**AUTO, "dtype": "bfloat16"}, features=features)
        assert (forced.provider, forced.dtype) == ("sentence_transformers", "bfloat16")
        fp32 = choose_embedder_runtime(**{**AUTO, "provider": "sentence_transformers", "dtype": "float32"}, features=features)
        assert fp32.dtype == "float32" and "embedding.dtype=float32" in fp32.reason
    torch_auto_dtype = choose_embedder_runtime(**{**AUTO, "provider": "sentence_transformers"}, features=AVX2_EPYC)
    assert torch_auto_dtype.dtype == "float32"  # an explicit torch provider still gets no emulated dtype


def test_without_torch_or_with_an_onnx_only_model_it_is_onnx():
    assert choose_embedder_runtime(**{**AUTO, "torch_installed": False}, features=BF16_EPYC).provider == "onnx"
    assert choose_embedder_runtime(**{**AUTO, "onnx_only": True}, features=BF16_EPYC).provider == "onnx"


def test_cpuinfo_flags_of_x86_and_arm():
    x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu avx2 avx512_bf16\n\nprocessor\t: 1\nflags\t\t: fpu\n"
    assert parse_cpuinfo_flags(x86) == frozenset({"fpu", "avx2", "avx512_bf16"})
    arm = "processor\t: 0\nFeatures\t: fp asimd bf16 i8mm\nCPU implementer\t: 0x41\n"
    assert native_bf16(CpuFeatures(parse_cpuinfo_flags(arm), "/proc/cpuinfo"))[0] is True
    assert parse_cpuinfo_flags("processor\t: 0\n") is None


def test_this_machine_is_read_from_proc_cpuinfo_and_the_config_follows_it():
    features = detect_cpu_features()
    if Path(CPUINFO).is_file():
        assert features.flags == parse_cpuinfo_flags(Path(CPUINFO).read_text())
    runtime = EmbeddingConfig().local_runtime()
    assert EmbeddingConfig().backend() == runtime.provider
    if runtime.dtype == "bfloat16":
        assert native_bf16(features)[0]
