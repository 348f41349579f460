"""Chapter 1 exercises: tensor programs in TensorIR (solved).

Each function returns a ``PrimFunc`` (or an ``IRModule``) built for the shapes it is given.
The graders in ``tests/grade/test_ch01.py`` build it, run it on random data and compare
with numpy; where the shape of the program is the lesson, they compare structure too.
Run them with ``minitvm grade ch01`` or ``minitvm.grade.check("ch01")``.
"""

from __future__ import annotations

from minitvm import te
from minitvm.script import tirx as T


def broadcast_add(m: int, n: int):
    """Exercise 1.1: ``C[i, j] = A[i, j] + B[j]`` for float32 ``A: (m, n)``, ``B: (n,)``.

    Write it in TVMScript with one block named ``"C"``; the shapes come from the arguments
    (a ``T.prim_func`` defined inside this function can use ``m`` and ``n``).
    """
    # BEGIN SOLUTION
    @T.prim_func
    def func(A: T.Buffer((m, n), "float32"), B: T.Buffer((n,), "float32"), C: T.Buffer((m, n), "float32")):
        T.func_attr({"global_symbol": "broadcast_add", "tirx.noalias": True})
        for i, j in T.grid(m, n):
            with T.sblock("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] + B[vj]

    return func
    # END SOLUTION


def transpose_pad(m: int, n: int, p: int):
    """Exercise 1.2: transpose ``A: (m, n)`` into ``B: (n + 2p, m + 2p)`` with a zero border of width ``p``.

    ``B[i, j] = A[j - p, i - p]`` inside the border, ``0`` on it (float32). Hint:
    ``T.if_then_else(cond, a, b)`` and ``T.float32(0)``.
    """
    # BEGIN SOLUTION
    @T.prim_func
    def func(A: T.Buffer((m, n), "float32"), B: T.Buffer((n + 2 * p, m + 2 * p), "float32")):
        T.func_attr({"global_symbol": "transpose_pad", "tirx.noalias": True})
        for i, j in T.grid(n + 2 * p, m + 2 * p):
            with T.sblock("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.if_then_else(
                    p <= vi and vi < n + p and p <= vj and vj < m + p, A[vj - p, vi - p], T.float32(0)
                )

    return func
    # END SOLUTION


def row_sum_of_squares(m: int, n: int):
    """Exercise 1.3: ``B[i] = sum_j A[i, j] * A[i, j]`` for float32 ``A: (m, n)``.

    One block named ``"B"`` with a spatial axis ``i`` and a reduction axis ``j``; the
    block zeroes ``B[i]`` in its ``T.init()``. The grader checks both the numbers and that
    the block is a reduction with an init.
    """
    # BEGIN SOLUTION
    @T.prim_func
    def func(A: T.Buffer((m, n), "float32"), B: T.Buffer((m,), "float32")):
        T.func_attr({"global_symbol": "row_sum_of_squares", "tirx.noalias": True})
        for i, j in T.grid(m, n):
            with T.sblock("B"):
                vi, vj = T.axis.remap("SR", [i, j])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vj] * A[vi, vj]

    return func
    # END SOLUTION


def conv2d(n: int, ci: int, h: int, w: int, co: int, k: int):
    """Exercise 1.4: a 2-D convolution, NCHW, stride 1, no padding, float32.

    ``X: (n, ci, h, w)``, ``W: (co, ci, k, k)``, ``Y: (n, co, h - k + 1, w - k + 1)`` with
    ``Y[b, c, y, x] = sum over (q, dy, dx) of X[b, q, y + dy, x + dx] * W[c, q, dy, dx]``.
    """
    # BEGIN SOLUTION
    oh, ow = h - k + 1, w - k + 1

    @T.prim_func
    def func(X: T.Buffer((n, ci, h, w), "float32"), W: T.Buffer((co, ci, k, k), "float32"),
             Y: T.Buffer((n, co, oh, ow), "float32")):
        T.func_attr({"global_symbol": "conv2d", "tirx.noalias": True})
        for b, c, y, x, q, dy, dx in T.grid(n, co, oh, ow, ci, k, k):
            with T.sblock("Y"):
                vb, vc, vy, vx, vq, vdy, vdx = T.axis.remap("SSSSRRR", [b, c, y, x, q, dy, dx])
                with T.init():
                    Y[vb, vc, vy, vx] = T.float32(0)
                Y[vb, vc, vy, vx] = Y[vb, vc, vy, vx] + X[vb, vq, vy + vdy, vx + vdx] * W[vc, vq, vdy, vdx]

    return func
    # END SOLUTION


def bmm_relu(b: int, m: int, n: int, k: int):
    """Exercise 1.5: batched matmul followed by ReLU, in TVMScript.

    ``A: (b, m, k)``, ``B: (b, k, n)``, ``C: (b, m, n)``, float32, with an intermediate
    ``Y = T.sblock_alloc_buffer((b, m, n))``: block ``"Y"`` computes ``Y = A @ B`` (batched, with an
    init), block ``"C"`` computes ``C = max(Y, 0)``.
    """
    # BEGIN SOLUTION
    @T.prim_func
    def func(A: T.Buffer((b, m, k), "float32"), B: T.Buffer((b, k, n), "float32"),
             C: T.Buffer((b, m, n), "float32")):
        T.func_attr({"global_symbol": "bmm_relu", "tirx.noalias": True})
        Y = T.sblock_alloc_buffer((b, m, n), "float32")
        for vb_, i, j, r in T.grid(b, m, n, k):
            with T.sblock("Y"):
                vb, vi, vj, vr = T.axis.remap("SSSR", [vb_, i, j, r])
                with T.init():
                    Y[vb, vi, vj] = T.float32(0)
                Y[vb, vi, vj] = Y[vb, vi, vj] + A[vb, vi, vr] * B[vb, vr, vj]
        for vb_, i, j in T.grid(b, m, n):
            with T.sblock("C"):
                vb, vi, vj = T.axis.remap("SSS", [vb_, i, j])
                C[vb, vi, vj] = T.max(Y[vb, vi, vj], T.float32(0))

    return func
    # END SOLUTION


def te_mm_relu(n: int):
    """Exercise 1.6: ``mm_relu`` for ``(n, n)`` float32 matrices, written in TE.

    Tensors named ``A``, ``B`` (inputs), ``Y`` (the matmul, reduce axis named ``k``) and
    ``C`` (the ReLU); return ``te.create_prim_func([A, B, C])`` with the attribute
    ``global_symbol = "mm_relu"``. The grader checks it is structurally equal to the
    TVMScript ``mm_relu`` of chapter 1 at size ``n``.
    """
    # BEGIN SOLUTION
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), "k")
    Y = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
    C = te.compute((n, n), lambda i, j: te.max(Y[i, j], 0), name="C")
    return te.create_prim_func([A, B, C]).with_attr({"global_symbol": "mm_relu"})
    # END SOLUTION


def te_softmax(m: int, n: int):
    """Exercise 1.7: row-wise softmax of a float32 ``(m, n)`` matrix, written in TE.

    ``out[i, j] = exp(A[i, j] - max_j A[i, :]) / sum_j exp(A[i, j] - max_j A[i, :])``.
    Subtracting the row maximum keeps ``exp`` from overflowing (the grader feeds large
    values). Return ``te.create_prim_func([A, out])``. Hints: ``te.max``, ``te.sum``,
    ``te.exp``, one ``te.reduce_axis`` per reduction.
    """
    # BEGIN SOLUTION
    A = te.placeholder((m, n), "float32", name="A")
    k = te.reduce_axis((0, n), "k")
    amax = te.compute((m,), lambda i: te.max(A[i, k], axis=k), name="amax")
    e = te.compute((m, n), lambda i, j: te.exp(A[i, j] - amax[i]), name="e")
    k2 = te.reduce_axis((0, n), "k2")
    esum = te.compute((m,), lambda i: te.sum(e[i, k2], axis=k2), name="esum")
    out = te.compute((m, n), lambda i, j: e[i, j] / esum[i], name="softmax")
    return te.create_prim_func([A, out])
    # END SOLUTION


def fast_mm_relu(n: int):
    """Exercise 1.8 (open): ``mm_relu`` at least 4x as fast as the chapter's loop nest.

    ``C = max(A @ B, 0)`` for float32 ``(n, n)`` matrices. The grader builds your function and
    the chapter's ``mm_relu`` at ``n = 256`` and times both, one after the other, on the same
    data. Any program that computes ``C`` counts: TVMScript, TE, a schedule of chapter 2, with or
    without an intermediate buffer.
    """
    # BEGIN SOLUTION
    @T.prim_func
    def func(A: T.Buffer((n, n), "float32"), B: T.Buffer((n, n), "float32"), C: T.Buffer((n, n), "float32")):
        T.func_attr({"global_symbol": "mm_relu", "tirx.noalias": True})
        Y = T.sblock_alloc_buffer((n, n), "float32")
        # k before j: the innermost loop walks B and Y along a row, as they lie in memory
        for i, k, j in T.grid(n, n, n):
            with T.sblock("Y"):
                vi, vk, vj = T.axis.remap("SRS", [i, k, j])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(n, n):
            with T.sblock("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))

    return func
    # END SOLUTION
