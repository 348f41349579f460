"""split and fuse over loops of symbolic extent, and TVM's binding and guard forms."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.driver.build_module import export_name
from minitvm.script import tir as T


@T.prim_func
def scale(a: T.handle, b: T.handle, n: T.int32):
    A = T.match_buffer(a, (6, n))
    B = T.match_buffer(b, (6, n))
    for i, j in T.grid(6, n):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0 + 1.0


def _run(mod, n):
    gv = mod.get_global_vars()[0]
    a = np.random.default_rng(n).standard_normal((6, n)).astype("float32")
    b = np.zeros((6, n), "float32")
    minitvm.build(mod, target="llvm")[export_name(gv.name_hint, mod[gv])](a, b, n)
    return a, b


@pytest.mark.parametrize("n", [7, 20, 1])
def test_symbolic_split_infers_ceil_and_guards(n, trace_replays):
    sch = tir.Schedule(scale)
    _, j = sch.get_loops("B")
    sch.split(j, factors=[4, None])
    text = sch.mod.script()
    assert "(n + 3) // 4" in text and "T.where(" in text
    trace_replays(sch, scale)
    a, b = _run(sch.mod, n)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_symbolic_split_without_none_is_refused():
    sch = tir.Schedule(scale)
    _, j = sch.get_loops("B")
    with pytest.raises(tir.ScheduleError, match="symbolic"):
        sch.split(j, factors=[4, 8])


@pytest.mark.parametrize("n", [5, 16])
def test_symbolic_fuse(n, trace_replays):
    sch = tir.Schedule(scale)
    i, j = sch.get_loops("B")
    fused = sch.fuse(i, j)
    assert "n * 6" in str(sch.get(fused).extent.script())
    trace_replays(sch, scale)
    a, b = _run(sch.mod, n)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_three_loop_fuse_binds_middle_loop_as_tvm():
    @T.prim_func
    def cube(A: T.Buffer((4, 5, 6), "float32"), B: T.Buffer((4, 5, 6), "float32")):
        for i, j, k in T.grid(4, 5, 6):
            with T.block("B"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                B[vi, vj, vk] = A[vi, vj, vk]

    sch = tir.Schedule(cube)
    sch.fuse(*sch.get_loops("B"))
    text = sch.mod.script()
    assert "i_j_k_fused // 30" in text and "i_j_k_fused % 30 // 6" in text and "i_j_k_fused % 6" in text
