"""sch.unsafe_set_dtype: an intermediate buffer changes element type, with casts at every access."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.driver.build_module import export_name
from minitvm.script import tir as T


@T.prim_func
def scale_then_shift(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16, 8), "float32")):
    B = T.alloc_buffer((16, 8))
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.5
    for i, j in T.grid(16, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + 1.0


def _run(mod, a):
    gv = mod.get_global_vars()[0]
    c = np.zeros((16, 8), "float32")
    minitvm.build(mod, target="llvm")[export_name(gv.name_hint, mod[gv])](a, c)
    return c


def test_half_precision_intermediate_rounds_like_numpy(trace_replays):
    sch = tir.Schedule(scale_then_shift)
    sch.unsafe_set_dtype("B", 0, "float16")
    text = sch.mod.script()
    assert 'T.alloc_buffer((16, 8), "float16")' in text
    assert 'T.Cast("float16", A[vi, vj] * T.float32(2.5))' in text
    assert 'T.Cast("float32", B[vi, vj]) + T.float32(1.0)' in text
    trace_replays(sch, scale_then_shift)
    a = np.random.default_rng(0).standard_normal((16, 8)).astype("float32")
    expected = (a * np.float32(2.5)).astype("float16").astype("float32") + np.float32(1)
    np.testing.assert_array_equal(_run(sch.mod, a), expected)


def test_same_dtype_changes_nothing():
    sch = tir.Schedule(scale_then_shift)
    sch.unsafe_set_dtype("B", 0, "float32")
    assert minitvm.ir.structural_equal(sch.mod["main"], scale_then_shift.with_attr("global_symbol",
                                                                                     "scale_then_shift"))


def test_parameter_and_bad_index_are_refused():
    sch = tir.Schedule(scale_then_shift)
    with pytest.raises(tir.ScheduleError, match="not allocated by a block"):
        sch.unsafe_set_dtype("C", 0, "float16")
    with pytest.raises(tir.ScheduleError, match="out of range"):
        sch.unsafe_set_dtype("B", 1, "float16")
