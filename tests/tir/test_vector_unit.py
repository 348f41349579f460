"""VectorUnit: the vector registers schedules size register tiles for, by CPU features and scope."""

from __future__ import annotations

import minitvm
from minitvm.tir.vector_unit import AVX2, AVX512, NEON, SSE, VectorUnit


def test_features_name_the_unit():
    assert VectorUnit.from_features({"avx512f", "avx2", "fma"}) is AVX512
    assert VectorUnit.from_features({"avx2", "fma", "sse4.2"}) is AVX2
    assert VectorUnit.from_features({"neon", "fp-armv8"}) is NEON
    assert VectorUnit.from_features({"sse2"}) is SSE
    assert (AVX512.lanes, AVX512.registers, AVX512.accumulators) == (16, 32, 16)
    assert (AVX2.lanes, AVX2.registers, AVX2.accumulators) == (8, 16, 8)


def test_scope_nests_and_a_target_enters_its_unit():
    host = VectorUnit.from_features(minitvm.target.host_cpu_features())
    assert VectorUnit.current() == VectorUnit.host() == host
    with SSE:
        assert VectorUnit.current() is SSE
        with minitvm.target.Target("llvm -mcpu=x86-64 -mattr=+avx512f") as target:
            assert VectorUnit.current() is AVX512 and minitvm.target.Target.current() is target
            with AVX2:
                assert VectorUnit.current() is AVX2
            assert VectorUnit.current() is AVX512
        assert VectorUnit.current() is SSE and minitvm.target.Target.current() is None
    assert VectorUnit.current() == host
    assert minitvm.target.Target("llvm").vector_unit == host  # llvm: this machine


def test_a_named_cpu_has_the_unit_llvm_gives_its_code():
    """``-mcpu=haswell`` alone: llvmlite cannot list haswell's features, so a probe kernel compiled
    for it says what its code uses (AVX and FMA: AVX2's unit); the baseline x86-64 has SSE only.
    ``-mcpu=skylake-avx512`` without ``+avx512f`` gets 256-bit code (LLVM prefers it there)."""
    from minitvm.target import Target

    assert Target("llvm -mcpu=haswell").vector_unit is AVX2
    assert Target("llvm -mcpu=skylake-avx512").vector_unit is AVX2
    assert Target("llvm -mcpu=skylake-avx512 -mattr=+avx512f").vector_unit is AVX512
    assert Target("llvm -mcpu=x86-64").vector_unit is SSE
