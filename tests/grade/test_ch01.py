"""Graders for chapter 1 (``exercises/ch01.py``): one test per exercise, worth ``points``.

``pytest tests/grade/test_ch01.py`` grades the solutions (proving the graders);
``--grade-target=exercises`` grades the learner's file; ``minitvm grade ch01`` does the
latter with a subprocess per grader.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import te
from minitvm.driver.build_module import export_name
from minitvm.grade.mistakes import Mistake, assert_allclose_or_name
from minitvm.ir import IRModule, assert_structural_equal, structural_equal
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
@pytest.mark.hint("section 3 (Why blocks?): a block's axes say which element it computes: which axes does C have, "
                  "and which of them does B follow?",
                  "B is read at C's second axis only; the sizes m and n come from the function's arguments "
                  "(\"Shapes from Python\", section 4)")
def test_broadcast_add(ex, seed):
    """Exercise 1.1: broadcast add on random shapes."""
    rng = np.random.default_rng(seed)
    m, n = (int(x) for x in rng.integers(2, 40, 2))
    a, b, c = _rand(rng, m, n), _rand(rng, n), _rand(rng, m, n)
    _, _, c = _run(ex.broadcast_add(m, n), a, b, c)
    assert_allclose(c, a + b, rtol=RTOL, atol=ATOL)
    assert [blk.name_hint for blk in _blocks(ex.broadcast_add(m, n))] == ["C"], "expected one block named 'C'"


@pytest.mark.points(2)
@pytest.mark.hint("section 3 (Why blocks?): one block over B's whole shape, the border included: what does B hold "
                  "where no element of A lands?",
                  "inside the border B reads A with the two indices swapped and shifted by p; a condition picks A's "
                  "value or zero")
def test_transpose_pad(ex):
    """Exercise 1.2: transposed copy with a zero border."""
    rng = np.random.default_rng(12)
    for m, n, p in [(int(rng.integers(2, 20)), int(rng.integers(2, 20)), int(rng.integers(1, 4))), (5, 3, 0)]:
        a, b = _rand(rng, m, n), _rand(rng, n + 2 * p, m + 2 * p)  # b starts as noise: every element must be written
        _, b = _run(ex.transpose_pad(m, n, p), a, b)
        assert_allclose(b, np.pad(a.T, p), rtol=RTOL, atol=ATOL, err_msg=f"m={m}, n={n}, p={p}")


def _row_sum_variant(m: int, n: int, kinds: str = "SR", init: bool = True, extent: int | None = None):
    """Exercise 1.3 as learners get it wrong: ``kinds`` of the two axes, with or without the init,
    the j loop ``extent`` long."""
    extent = n if extent is None else extent

    @T.prim_func
    def func(A: T.Buffer((m, n), "float32"), B: T.Buffer((m,), "float32")):
        T.func_attr({"global_symbol": "row_sum_of_squares", "tir.noalias": True})
        for i, j in T.grid(m, extent):
            with T.block("B"):
                vi, vj = T.axis.remap(kinds, [i, j])
                if init:
                    with T.init():
                        B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vj] * A[vi, vj]

    return func


@pytest.mark.points(2)
@pytest.mark.hint("section 3 (Why blocks?): a sum is a reduction: its block has an axis of the reduction kind and "
                  "an init",
                  "one letter per axis when you remap them: spatial for the axis you keep, reduction for the one "
                  "you sum over; the init sets B[i] before the first j")
def test_row_sum_of_squares(ex):
    """Exercise 1.3: a reduction with an init block."""
    rng = np.random.default_rng(13)
    m, n = (int(x) for x in rng.integers(2, 50, 2))
    a, b = _rand(rng, m, n), _rand(rng, m)  # b starts as noise: the init must zero it
    _, out = _run(ex.row_sum_of_squares(m, n), a, b)
    mistakes = [
        Mistake("B[i] is never zeroed, so the sum starts from what B held: a reduction needs "
                "`with T.init():` inside its block",
                lambda: _run(_row_sum_variant(m, n, init=False), a, b)[1]),
        Mistake("j is declared a spatial axis (\"SS\"), so T.init() runs at every j and B[i] keeps only the "
                "last square: an axis the block sums over is a reduce axis (\"R\")",
                lambda: _run(_row_sum_variant(m, n, kinds="SS"), a, b)[1]),
        Mistake("the j loop stops one short of n: T.grid and range take the extent, not the last index",
                lambda: _run(_row_sum_variant(m, n, extent=n - 1), a, b)[1]),
    ]
    assert_allclose_or_name(out, (a * a).sum(axis=1), mistakes, rtol=RTOL, atol=ATOL)
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


def _conv_variant(n, ci, h, w, co, k, flip: bool = False, swap_window: bool = False, init: bool = True):
    """Exercise 1.4 as learners get it wrong: the kernel flipped (signal processing's convolution),
    the window's rows and columns swapped, or no init."""
    oh, ow = h - k + 1, w - k + 1

    @T.prim_func
    def func(X: T.Buffer((n, ci, h, w), "float32"), W: T.Buffer((co, ci, k, k), "float32"),
             Y: T.Buffer((n, co, oh, ow), "float32")):
        T.func_attr({"global_symbol": "conv2d", "tir.noalias": True})
        for b, c, y, x, q, dy, dx in T.grid(n, co, oh, ow, ci, k, k):
            with T.block("Y"):
                vb, vc, vy, vx, vq, vdy, vdx = T.axis.remap("SSSSRRR", [b, c, y, x, q, dy, dx])
                if init:
                    with T.init():
                        Y[vb, vc, vy, vx] = T.float32(0)
                if flip:
                    Y[vb, vc, vy, vx] = Y[vb, vc, vy, vx] + X[vb, vq, vy + vdy, vx + vdx] * W[vc, vq, k - 1 - vdy,
                                                                                             k - 1 - vdx]
                elif swap_window:
                    Y[vb, vc, vy, vx] = Y[vb, vc, vy, vx] + X[vb, vq, vy + vdx, vx + vdy] * W[vc, vq, vdy, vdx]
                else:
                    Y[vb, vc, vy, vx] = Y[vb, vc, vy, vx] + X[vb, vq, vy + vdy, vx + vdx] * W[vc, vq, vdy, vdx]

    return func


def _conv_mistakes(shape, x, wt, y):
    def run(**wrong):
        return lambda: _run(_conv_variant(*shape, **wrong), x, wt, y)[2]
    return [
        Mistake("the kernel is flipped (W[.., k-1-dy, k-1-dx]): that is signal processing's convolution; "
                "a deep-learning conv2d slides W over X unflipped", run(flip=True)),
        Mistake("the window's rows and columns are swapped: X's row index pairs the output row with W's row "
                "offset dy, the column index the output column with dx", run(swap_window=True)),
        Mistake("Y is never zeroed, so the sum starts from what Y held: the reduction needs `with T.init():`",
                run(init=False)),
    ]


@pytest.mark.points(3)
@pytest.mark.hint("section 3 (Why blocks?): one block; which of its axes are Y's (spatial) and which are summed "
                  "over?",
                  "four spatial axes, three summed (the input channel and the kernel's two offsets); output row y "
                  "reads X at row y plus the kernel's row offset, the same for columns")
def test_conv2d(ex):
    """Exercise 1.4: 2-D convolution (NCHW, stride 1, no padding)."""
    rng = np.random.default_rng(14)
    for n, ci, h, w, co, k in [(1, 1, 6, 6, 2, 3), (2, int(rng.integers(1, 4)), int(rng.integers(5, 12)),
                                                   int(rng.integers(5, 12)), int(rng.integers(1, 5)), 3)]:
        x, wt = _rand(rng, n, ci, h, w), _rand(rng, co, ci, k, k)
        y = _rand(rng, n, co, h - k + 1, w - k + 1)
        _, _, out = _run(ex.conv2d(n, ci, h, w, co, k), x, wt, y)
        shape = (n, ci, h, w, co, k)
        assert_allclose_or_name(out, _conv_ref(x, wt), _conv_mistakes(shape, x, wt, y), rtol=1e-3, atol=1e-3,
                                err_msg=f"shape {shape}")


@pytest.mark.points(2)
@pytest.mark.hint("section 2 (The same program in TVMScript): mm_relu with one more axis, the batch: two blocks, "
                  "the matmul writing an intermediate buffer that the ReLU reads",
                  "the intermediate is allocated inside the function; the matmul's block has an init and a "
                  "reduction axis; the ReLU is a max with zero")
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
@pytest.mark.hint("section 5 (TE): the grader compares yours with section 2's TVMScript mm_relu: same blocks, same "
                  "order, same names",
                  "a te.compute's name becomes its block's name, a reduce axis's name its loop's; the tensors "
                  "passed to create_prim_func become the parameters, in that order")
def test_te_mm_relu(ex):
    """Exercise 1.6: TE mm_relu is structurally equal to the TVMScript one."""
    n = int(np.random.default_rng(16).integers(8, 64))
    func = _func(ex.te_mm_relu(n))
    assert_structural_equal(func, _mm_relu_script(n))  # a mismatch shows the diff of yours and mm_relu
    a, b, c = (_rand(np.random.default_rng(n), n, n) for _ in range(3))
    _, _, c = _run(func, a, b, c)
    assert_allclose(c, np.maximum(a @ b, 0), rtol=RTOL, atol=ATOL)


def _softmax_variant(m: int, n: int, axis: int = 1, shift: str = "row", sum_exp: bool = True):
    """Exercise 1.7 as learners get it wrong: over the columns (``axis=0``), without subtracting
    the maximum (``shift="none"``), or summing the shifted values instead of their exponentials."""
    A = te.placeholder((m, n), "float32", name="A")
    length = n if axis == 1 else m

    def at(i, j, r):  # element r along the reduced axis of (i, j)'s row or column
        return A[i, r] if axis == 1 else A[r, j]

    if shift == "row":
        k = te.reduce_axis((0, length), "k")
        amax = te.compute((m, n), lambda i, j: te.max(at(i, j, k), axis=k), name="amax")
        top = lambda i, j: amax[i, j]  # noqa: E731
    else:
        top = lambda i, j: te.const(0.0, "float32")  # noqa: E731
    e = te.compute((m, n), lambda i, j: te.exp(A[i, j] - top(i, j)), name="e")
    shifted = lambda i, j, r: (te.exp if sum_exp else (lambda v: v))(at(i, j, r) - top(i, j))  # noqa: E731
    k2 = te.reduce_axis((0, length), "k2")
    esum = te.compute((m, n), lambda i, j: te.sum(shifted(i, j, k2), axis=k2), name="esum")
    out = te.compute((m, n), lambda i, j: e[i, j] / esum[i, j], name="softmax")
    return te.create_prim_func([A, out])


@pytest.mark.points(3)
@pytest.mark.hint("section 5 (TE): softmax is four tensors in a row: the row maximum, the shifted exponentials, "
                  "their row sum, the quotient",
                  "each of the two reductions needs its own reduce axis; the maximum is subtracted before exp, so "
                  "that large inputs do not overflow")
def test_te_softmax(ex):
    """Exercise 1.7: numerically stable softmax in TE."""
    rng = np.random.default_rng(17)
    m, n = (int(x) for x in rng.integers(2, 40, 2))
    a = (rng.standard_normal((m, n)) * 30 + 60).astype("float32")  # exp(a) would overflow float32
    noise = _rand(rng, m, n)
    _, out = _run(ex.te_softmax(m, n), a, noise)
    e = np.exp(a - a.max(axis=1, keepdims=True))

    def run(**wrong):
        return lambda: _run(_softmax_variant(m, n, **wrong), a, noise)[1]
    mistakes = [
        Mistake("the sums run down the columns: a row's softmax reduces over j, the last axis", run(axis=0)),
        Mistake("exp(A) overflows float32 for these inputs (inf / inf is nan): subtract each row's maximum "
                "before exp", run(shift="none")),
        Mistake("the denominator sums the shifted values A - max, not their exponentials", run(sum_exp=False)),
    ]
    assert_allclose_or_name(out, e / e.sum(axis=1, keepdims=True), mistakes, rtol=1e-4, atol=1e-6)


#: exercise 1.8: the size the grader times at, and how much faster than the chapter's loops
FAST_N, SPEEDUP = 256, 4


def _mm_relu_b_transposed(n: int) -> PrimFunc:
    """Exercise 1.8 as learners get it wrong: B read along its rows, as ``B[j, k]``, to make the
    innermost loop walk memory in order."""
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), "k")
    Y = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="Y")
    C = te.compute((n, n), lambda i, j: te.max(Y[i, j], 0), name="C")
    return te.create_prim_func([A, B, C])


def _timer(func: PrimFunc, number: int):
    lib = minitvm.build(IRModule({"main": func}), target="llvm")
    return lib.time_evaluator(export_name("main", func), minitvm.cpu(), number=number)


def _best_seconds(naive: PrimFunc, yours: PrimFunc, args) -> tuple[float, float]:
    """Seconds per call of each, the best of three rounds that alternate between them, so that
    another program slowing the machine down slows both alike."""
    timers = [_timer(naive, 1), _timer(yours, 5)]
    best = [float("inf"), float("inf")]
    for _ in range(3):
        best = [min(b, timer(*args).mean) for b, timer in zip(best, timers)]
    return best[0], best[1]


@pytest.mark.points(3)
@pytest.mark.hint("section 1 (A tensor program, written as loops): every order of the loops does the same "
                  "arithmetic: the time goes into reading memory. In the chapter's loop nest, how far apart in "
                  "memory are the elements of B that the innermost loop reads?",
                  "an innermost loop that walks B and Y along a row reads them in the order they are stored, and "
                  "lets the compiler use vector instructions; the block's axes say what is computed, the loops "
                  "around it in which order")
def test_fast_mm_relu(ex):
    """Exercise 1.8: mm_relu at least 4x as fast as the chapter's loop nest, however it is written."""
    n = FAST_N
    rng = np.random.default_rng(18)
    a, b, noise = _rand(rng, n, n), _rand(rng, n, n), _rand(rng, n, n)
    func = _func(ex.fast_mm_relu(n))
    _, _, c = _run(func, a, b, noise)
    transposed = Mistake("B is read as B[j, k], which multiplies A by B's transpose: element (i, j) of A @ B "
                         "pairs row i of A with column j of B", lambda: _run(_mm_relu_b_transposed(n), a, b, noise)[2])
    assert_allclose_or_name(c, np.maximum(a @ b, 0), [transposed], rtol=1e-3, atol=1e-3)
    chapters = _mm_relu_script(n)
    naive, yours = _best_seconds(chapters, func, [minitvm.nd.array(x) for x in (a, b, noise)])
    same = " (it is the chapter's loop nest)" if structural_equal(func.with_attr("global_symbol", "mm_relu"),
                                                                   chapters) else ""
    assert yours * SPEEDUP <= naive, (
        f"yours takes {yours * 1e3:.2f} ms per call, the chapter's mm_relu {naive * 1e3:.2f} ms: "
        f"{naive / yours:.1f}x as fast{same}; exercise 1.8 asks for at least {SPEEDUP}x")
