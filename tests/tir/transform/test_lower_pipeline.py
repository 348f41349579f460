"""The lowering pipeline: its output keeps the codegen contract and computes the same numbers."""

import numpy as np
import pytest

from minitvm import tir
from minitvm.ir import IRModule
from minitvm.target.interpreter import run_prim_func
from minitvm.testing import tir_builders as tb
from minitvm.tir import post_order_visit
from minitvm.tir.transform import VerifyLowered, lower_pipeline, lowered, lowered_form_errors


def test_pipeline_runs_the_passes_in_order():
    names = [p.info.name for p in lower_pipeline().passes]
    assert names == ["tir.OOBChecker", "tir.UnifyThreadBinding", "tir.CompactBufferAllocation",
                     "tir.LowerInitBlock", "tir.LowerOpaqueBlock", "tir.FlattenBuffer", "tir.Simplify",
                     "tir.TightenGuardedLoops", "tir.VerifyLowered"]


@pytest.mark.parametrize("kernel", sorted(tb.KERNELS))
def test_lowered_kernel_keeps_the_contract(kernel):
    func = tb.KERNELS[kernel]()
    low = lowered(func)
    assert low.attrs["tir.lowered"] is True
    assert low.params is func.params and low.buffer_map is func.buffer_map
    assert lowered_form_errors(low) == []
    kinds = set()
    post_order_visit(low.body, lambda n: kinds.add(type(n).__name__))
    assert not kinds & {"Block", "BlockRealize", "MatchBufferRegion", "IterVar"}


@pytest.mark.parametrize("kernel", sorted(tb.KERNELS))
def test_lowered_kernel_computes_the_same_numbers(kernel):
    """The differential test of the lowering passes: bit-identical results."""
    func = tb.KERNELS[kernel]()
    before, after = tb.random_arguments(func, seed=1), tb.random_arguments(func, seed=1)
    run_prim_func(func, before)
    run_prim_func(lowered(func), after)
    for x, y in zip(before, after):
        np.testing.assert_array_equal(x, y)


def test_lower_accepts_modules_and_functions():
    mod = IRModule({"a": tb.broadcast_add(), "b": tb.softmax()})
    low = lowered(mod)
    assert isinstance(low, IRModule) and all(f.attrs["tir.lowered"] for _, f in low.items())
    assert isinstance(lowered(tb.softmax()), tir.PrimFunc)


def test_verify_lowered_names_what_is_wrong():
    with pytest.raises(ValueError, match="BlockRealize is not allowed"):
        VerifyLowered()(IRModule({"main": tb.broadcast_add()}))
    A = tb.buffer("A", (4, 4))
    i = tir.Var("i")
    func = tb.prim_func("f", [A], tb.store(A, (i, 0), 1.0)).with_body(tb.store(A, (i, 0), 1.0))
    errors = lowered_form_errors(func)
    assert any("2 indices" in e for e in errors)
    assert any("variable i is used but not defined" in e for e in errors)


def test_lowering_is_idempotent():
    once = lowered(tb.mm_relu())
    assert lowered(once).body is once.body


def test_verify_lowered_checks_index_and_value_dtypes():
    A = tb.buffer("A", (4,), "int32")
    x = tir.Var("x", "float32")
    bad = tir.BufferStore(A, x, (tir.Cast("float32", tir.const(0)),))
    func = tb.prim_func("f", [A, x], bad).with_body(bad)
    errors = lowered_form_errors(func)
    assert any("index of dtype float32" in e for e in errors)
    assert any("store of a float32 value into A" in e for e in errors)
