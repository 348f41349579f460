"""sch.fuse_reduction_epilogue: bias, bias + ReLU and clipping epilogues folded into a matmul."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.driver.build_module import export_name
from minitvm.script import tir as T


def _matmul_then(epilogue):
    """A 12x10 (k=7) matmul into ``acc`` followed by ``D = epilogue(acc, C)``."""

    @T.prim_func
    def func(A: T.Buffer((12, 7), "float32"), B: T.Buffer((10, 7), "float32"),
             C: T.Buffer((12, 10), "float32"), D: T.Buffer((12, 10), "float32")):
        acc = T.alloc_buffer((12, 10))
        for i, j, k in T.grid(12, 10, 7):
            with T.block("mm"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    acc[vi, vj] = T.float32(0)
                acc[vi, vj] = acc[vi, vj] + A[vi, vk] * B[vj, vk]
        for i, j in T.grid(12, 10):
            with T.block("epi"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = epilogue(acc[vi, vj], C[vi, vj])

    return func


bias = _matmul_then(lambda t, c: t + c)
bias_swapped = _matmul_then(lambda t, c: c + t)
bias_relu = _matmul_then(lambda t, c: T.max(t + c, T.float32(0)))
clip = _matmul_then(lambda t, c: T.min(T.max(t, T.float32(-1.5)), T.float32(1.5)))
clip_commuted = _matmul_then(lambda t, c: T.max(T.float32(-1.5), T.min(T.float32(1.5), t)))
not_supported = _matmul_then(lambda t, c: t * c)
reads_twice = _matmul_then(lambda t, c: t + t)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((12, 7)).astype("float32")
    b = rng.standard_normal((10, 7)).astype("float32")
    c = rng.standard_normal((12, 10)).astype("float32")
    return a, b, c


def _run(mod, a, b, c):
    gv = mod.get_global_vars()[0]
    d = np.zeros((12, 10), "float32")
    minitvm.build(mod, target="llvm")[export_name(gv.name_hint, mod[gv])](a, b, c, d)
    return d


def _per_step(a, b, start, step):
    """numpy reference of a fused epilogue: start value, then ``step`` after every k."""
    d = start.copy()
    for k in range(a.shape[1]):
        d = step(d + np.outer(a[:, k], b[:, k]))
    return d


def _fused(func):
    sch = tir.Schedule(func)
    sch.fuse_reduction_epilogue("mm", "epi")
    return sch


@pytest.mark.parametrize("func", [bias, bias_swapped])
def test_bias_is_exact(func, trace_replays):
    sch = _fused(func)
    fused = sch.get(sch.get_block("mm"))
    assert fused.writes[0].buffer.name == "D"
    assert [r.buffer.name for r in fused.reads] == ["C", "A", "B"]  # the init's read first
    assert [r.block.name_hint for r, _ in tir.schedule.tree.block_realizes(sch.mod["main"].body)] == ["root", "mm"]
    trace_replays(sch, func)
    a, b, c = _inputs()
    np.testing.assert_allclose(_run(sch.mod, a, b, c), a @ b.T + c, rtol=1e-5, atol=1e-5)


def test_bias_relu_clamps_every_step(trace_replays):
    sch = _fused(bias_relu)
    trace_replays(sch, bias_relu)
    a, b, c = _inputs(1)
    expected = _per_step(a, b, np.maximum(c, 0), lambda x: np.maximum(x, 0))
    np.testing.assert_allclose(_run(sch.mod, a, b, c), expected, rtol=1e-5, atol=1e-5)
    # per-step clamping differs from clamping once at the end on this data (TVM's documented change)
    assert not np.allclose(expected, np.maximum(a @ b.T + c, 0))


@pytest.mark.parametrize("func", [clip, clip_commuted])
def test_clipping_clips_every_step(func, trace_replays):
    sch = _fused(func)
    trace_replays(sch, func)
    a, b, c = _inputs(2)
    expected = _per_step(a, b, np.zeros((12, 10), "float32"), lambda x: np.clip(x, -1.5, 1.5))
    np.testing.assert_allclose(_run(sch.mod, a, b, c), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("func, words", [(not_supported, "temp \\+ C"), (reads_twice, "once")])
def test_unsupported_epilogues_are_refused(func, words):
    sch = tir.Schedule(func)
    with pytest.raises(tir.ScheduleError, match=words):
        sch.fuse_reduction_epilogue("mm", "epi")
    assert minitvm.ir.structural_equal(sch.mod["main"], func.with_attr("global_symbol", "func"))


def test_the_reduction_must_be_a_reduction_and_not_an_output():
    sch = tir.Schedule(bias)
    with pytest.raises(tir.ScheduleError, match="not a reduction block"):
        sch.fuse_reduction_epilogue("epi", "epi")

    @T.prim_func
    def output_reduction(A: T.Buffer((4, 3), "float32"), S: T.Buffer((4,), "float32"),
                         D: T.Buffer((4,), "float32")):
        for i, k in T.grid(4, 3):
            with T.block("mm"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    S[vi] = T.float32(0)
                S[vi] = S[vi] + A[vi, vk]
        for i in range(4):
            with T.block("epi"):
                vi = T.axis.spatial(4, i)
                D[vi] = S[vi] + T.float32(1)

    sch = tir.Schedule(output_reduction)
    with pytest.raises(tir.ScheduleError, match="output block"):
        sch.fuse_reduction_epilogue("mm", "epi")


def test_transposed_read_is_refused():
    @T.prim_func
    def transposed(A: T.Buffer((4, 4, 3), "float32"), D: T.Buffer((4, 4), "float32")):
        acc = T.alloc_buffer((4, 4))
        for i, j, k in T.grid(4, 4, 3):
            with T.block("mm"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    acc[vi, vj] = T.float32(0)
                acc[vi, vj] = acc[vi, vj] + A[vi, vj, vk]
        for i, j in T.grid(4, 4):
            with T.block("epi"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = acc[vj, vi] + T.float32(1)

    with pytest.raises(tir.ScheduleError, match="other indices"):
        tir.Schedule(transposed).fuse_reduction_epilogue("mm", "epi")
