"""Saving an LLVM kernel library as optimized IR + signatures, and JIT-compiling it again."""

from __future__ import annotations

import json

import numpy as np
import pytest

import minitvm
from minitvm.runtime.registry import get_global_func
from minitvm.script import tir as T
from minitvm.target.codegen import llvm_export
from minitvm.target.signature import FunctionSignature
from minitvm.testing import feature_this_cpu_lacks
from minitvm.testing.pretend_cpu import AVX2_CPU, pretend_cpu


@T.prim_func
def scale_rows(a: T.handle, b: T.handle, s: T.float32):
    T.func_attr({"global_symbol": "scale_rows", "tir.noalias": True})
    n = T.int64()
    A = T.match_buffer(a, (n, 4), "float32")
    B = T.match_buffer(b, (n, 4), "float32")
    assert s > T.float32(0), "s must be positive"
    for i, j in T.grid(n, 4):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * s


def test_hooks_are_registered():
    assert get_global_func("runtime.module.export_llvm") is not None
    assert get_global_func("runtime.module.loadfrom_llvm_ir") is not None


def test_signature_json_round_trip_keeps_shared_symbolic_dims():
    sig = FunctionSignature.from_prim_func("scale_rows", scale_rows)
    data = json.loads(json.dumps(llvm_export.signature_to_json(sig)))
    again = llvm_export.signature_from_json(data)
    assert [p.name for p in again.params] == [p.name for p in sig.params]
    assert [p.shape_text() for p in again.params] == ["(n, 4)", "(n, 4)", "()"]
    assert again.params[0].shape[0] is again.params[1].shape[0] is again.shape_vars[0]
    assert again.params[1].written and not again.params[0].written


def test_export_then_load_runs_without_tir():
    lib = minitvm.build(scale_rows, target="llvm")
    saved = get_global_func("runtime.module.export_llvm")(lib)
    assert saved["format"] == "llvm_ir" and "define" in saved["payload"]
    meta = json.loads(json.dumps(saved["metadata"]))  # what a file holds
    loaded = get_global_func("runtime.module.loadfrom_llvm_ir")(saved["payload"], meta)
    a = np.random.default_rng(0).standard_normal((3, 4), dtype=np.float32)
    b = np.empty_like(a)
    loaded["scale_rows"](a, b, 2.0)
    np.testing.assert_array_equal(b, a * 2)
    # argument checks and assert messages survive the round trip
    with pytest.raises(ValueError, match=r"scale_rows: argument 'B' expects shape \(n, 4\), got \(2, 4\)"):
        loaded["scale_rows"](a, np.empty((2, 4), "float32"), 2.0)
    with pytest.raises(RuntimeError, match="s must be positive"):
        loaded["scale_rows"](a, b, -1.0)
    assert loaded.get_source("ll") == saved["payload"]


def test_code_for_missing_cpu_features_loads_but_refuses_to_run():
    lacking = feature_this_cpu_lacks()
    lib = minitvm.build(scale_rows, target="llvm")
    saved = llvm_export.export_llvm(lib)
    meta = dict(saved["metadata"], features=[*saved["metadata"]["features"], lacking])
    loaded = llvm_export.load_llvm_ir(saved["payload"], meta)  # to read or save again: no code runs
    assert loaded.get_source("ll") == saved["payload"] and "scale_rows" in loaded.get_source("asm")
    a = np.ones((3, 4), "float32")
    with pytest.raises(RuntimeError, match=rf"scale_rows: compiled with -mattr=\S*\+{lacking}\b\S*, which this "
                                           r"CPU \(\w+\) lacks: running it would stop the process"):
        loaded["scale_rows"](a, np.empty_like(a), 2.0)
    assert llvm_export.export_llvm(loaded)["metadata"]["features"] == meta["features"]  # saved again as it was


def test_a_loaded_library_for_another_cpu_is_checked_by_its_instructions():
    # saved metadata that names an AVX-512 CPU but no features: the assembly shows what the code
    # uses (zmm registers); a CPU without AVX-512 (this one, or pretended) refuses to run it
    lib = minitvm.build(scale_rows, target="llvm -mcpu=skylake-avx512 -mattr=+avx512f")
    saved = llvm_export.export_llvm(lib)
    with pretend_cpu(AVX2_CPU):
        loaded = llvm_export.load_llvm_ir(saved["payload"], dict(saved["metadata"], features=[]))
        assert "zmm" in loaded.get_source("asm")
        with pytest.raises(RuntimeError, match=r"compiled for skylake-avx512 with avx512f, which this CPU"):
            loaded["scale_rows"](np.ones((3, 4), "float32"), np.empty((3, 4), "float32"), 2.0)


def test_load_refuses_metadata_without_signatures():
    with pytest.raises(ValueError, match="saved without signatures"):
        llvm_export.load_llvm_ir("", {"functions": ["f"]})
