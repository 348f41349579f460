"""Graders for chapter 1 (``exercises/ch01.py``): one test per exercise, worth ``points``.

``pytest tests/grade/test_ch01.py`` grades the solutions (proving the graders);
``--grade-target=exercises`` grades the learner's file; ``minitvm grade ch01`` does the
latter with a subprocess per grader.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm.driver.build_module import export_name
from minitvm.ir import IRModule, assert_structural_equal
from minitvm.script import tir as T
from minitvm.testing import assert_allclose
from minitvm.tir import Block, PrimFunc, post_order_visit

RTOL = ATOL = 1e-4


@pytest.fixture
def ex(grade_module):
    return grade_module("ch01")


def _func(f) -> PrimFunc:
    assert isinstance(f, (PrimFunc, IRModule)), \
        f"expected a PrimFunc (from @T.prim_func or te.create_prim_func), got {type(f).__name__}"
    if isinstance(f, IRModule):
        funcs = [v for _, v in f.items() if isinstance(v, PrimFunc)]
        assert len(funcs) == 1, "expected one PrimFunc in the IRModule"
        f = funcs[0]
    return f


def _run(f, *arrays):
    """Build ``f`` for llvm, call it on copies of ``arrays``; returns the copies."""
    func = _func(f)
    mod = IRModule({"main": func})
    out = [np.array(a, copy=True) for a in arrays]
    minitvm.build(mod, target="llvm")[export_name("main", func)](*out)  # the global_symbol, as TVM
    return out


def _blocks(f) -> list[Block]:
    found = []
    post_order_visit(_func(f).body, lambda n: found.append(n) if isinstance(n, Block) else None)
    return [b for b in found if b.name_hint != "root"]


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype("float32")


@pytest.mark.points(1)
@pytest.mark.parametrize("seed", [1, 2])
def test_broadcast_add(ex, seed):
    """Exercise 1.1: broadcast add on random shapes."""
    rng = np.random.default_rng(seed)
    m, n = (int(x) for x in rng.integers(2, 40, 2))
    a, b, c = _rand(rng, m, n), _rand(rng, n), _rand(rng, m, n)
    _, _, c = _run(ex.broadcast_add(m, n), a, b, c)
    assert_allclose(c, a + b, rtol=RTOL, atol=ATOL)
    assert [blk.name_hint for blk in _blocks(ex.broadcast_add(m, n))] == ["C"], "expected one block named 'C'"


@pytest.mark.points(2)
def test_transpose_pad(ex):
    """Exercise 1.2: transposed copy with a zero border."""
    rng = np.random.default_rng(12)
    for m, n, p in [(int(rng.integers(2, 20)), int(rng.integers(2, 20)), int(rng.integers(1, 4))), (5, 3, 0)]:
        a, b = _rand(rng, m, n), _rand(rng, n + 2 * p, m + 2 * p)  # b starts as noise: every element must be written
        _, b = _run(ex.transpose_pad(m, n, p), a, b)
        assert_allclose(b, np.pad(a.T, p), rtol=RTOL, atol=ATOL, err_msg=f"m={m}, n={n}, p={p}")


@pytest.mark.points(2)
def test_row_sum_of_squares(ex):
    """Exercise 1.3: a reduction with an init block."""
    rng = np.random.default_rng(13)
    m, n = (int(x) for x in rng.integers(2, 50, 2))
    a, b = _rand(rng, m, n), _rand(rng, m)  # b starts as noise: the init must zero it
    _, b = _run(ex.row_sum_of_squares(m, n), a, b)
    assert_allclose(b, (a * a).sum(axis=1), rtol=RTOL, atol=ATOL)
    (block,) = _blocks(ex.row_sum_of_squares(m, n))
    kinds = [str(iv.iter_type) for iv in block.iter_vars]
    assert block.name_hint == "B", f"the block should be named 'B', not {block.name_hint!r}"
    assert block.init is not None, "the block should zero B[i] in a `with T.init():`"
    assert kinds == ["spatial", "reduce"], f"the block should have a spatial axis i and a reduce axis j, has {kinds}"


def _conv_ref(x, w):
    n, ci, h, wd = x.shape
    co, _, k, _ = w.shape
    out = np.zeros((n, co, h - k + 1, wd - k + 1), "float32")
    for dy in range(k):
        for dx in range(k):
            patch = x[:, :, dy:dy + h - k + 1, dx:dx + wd - k + 1]  # n, ci, oh, ow
            out += np.einsum("nqyx,cq->ncyx", patch, w[:, :, dy, dx])
    return out


@pytest.mark.points(3)
def test_conv2d(ex):
    """Exercise 1.4: 2-D convolution (NCHW, stride 1, no padding)."""
    rng = np.random.default_rng(14)
    for n, ci, h, w, co, k in [(1, 1, 6, 6, 2, 3), (2, int(rng.integers(1, 4)), int(rng.integers(5, 12)),
                                                   int(rng.integers(5, 12)), int(rng.integers(1, 5)), 3)]:
        x, wt = _rand(rng, n, ci, h, w), _rand(rng, co, ci, k, k)
        y = _rand(rng, n, co, h - k + 1, w - k + 1)
        _, _, y = _run(ex.conv2d(n, ci, h, w, co, k), x, wt, y)
        assert_allclose(y, _conv_ref(x, wt), rtol=1e-3, atol=1e-3, err_msg=f"shape {(n, ci, h, w, co, k)}")


@pytest.mark.points(2)
def test_bmm_relu(ex):
    """Exercise 1.5: batched matmul + ReLU through an intermediate buffer."""
    rng = np.random.default_rng(15)
    b, m, n, k = (int(x) for x in rng.integers(2, 24, 4))
    a, bb, c = _rand(rng, b, m, k), _rand(rng, b, k, n), _rand(rng, b, m, n)
    func = ex.bmm_relu(b, m, n, k)
    _, _, c = _run(func, a, bb, c)
    assert_allclose(c, np.maximum(a @ bb, 0), rtol=RTOL, atol=ATOL)
    names = [blk.name_hint for blk in _blocks(func)]
    assert names == ["Y", "C"], f"expected blocks 'Y' (matmul) then 'C' (ReLU), found {names}"
    assert len(_func(func).body.block.alloc_buffers) == 1, "Y should be one T.alloc_buffer"


def _mm_relu_script(n):
    @T.prim_func
    def mm_relu(A: T.Buffer((n, n), "float32"), B: T.Buffer((n, n), "float32"), C: T.Buffer((n, n), "float32")):
        T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((n, n), "float32")
        for i, j, k in T.grid(n, n, n):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(n, n):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))

    return mm_relu


@pytest.mark.points(2)
def test_te_mm_relu(ex):
    """Exercise 1.6: TE mm_relu is structurally equal to the TVMScript one."""
    n = int(np.random.default_rng(16).integers(8, 64))
    func = _func(ex.te_mm_relu(n))
    try:
        assert_structural_equal(func, _mm_relu_script(n))
    except ValueError as err:
        raise AssertionError(f"not the TVMScript mm_relu (lhs: yours, rhs: target): {err}") from None
    a, b, c = (_rand(np.random.default_rng(n), n, n) for _ in range(3))
    _, _, c = _run(func, a, b, c)
    assert_allclose(c, np.maximum(a @ b, 0), rtol=RTOL, atol=ATOL)


@pytest.mark.points(3)
def test_te_softmax(ex):
    """Exercise 1.7: numerically stable softmax in TE."""
    rng = np.random.default_rng(17)
    m, n = (int(x) for x in rng.integers(2, 40, 2))
    a = (rng.standard_normal((m, n)) * 30 + 60).astype("float32")  # exp(a) would overflow float32
    out = _rand(rng, m, n)
    _, out = _run(ex.te_softmax(m, n), a, out)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-6)
