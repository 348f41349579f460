# Generated from solutions/ch01.py by `python -m minitvm.grade.make_stubs`: edit the bodies that raise.
"""Chapter 1 exercises: tensor programs in TensorIR (to solve).

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
    raise NotImplementedError("exercise 1.1: write broadcast_add")


def transpose_pad(m: int, n: int, p: int):
    """Exercise 1.2: transpose ``A: (m, n)`` into ``B: (n + 2p, m + 2p)`` with a zero border of width ``p``.

    ``B[i, j] = A[j - p, i - p]`` inside the border, ``0`` on it (float32). Hint:
    ``T.if_then_else(cond, a, b)`` and ``T.float32(0)``.
    """
    raise NotImplementedError("exercise 1.2: write transpose_pad")


def row_sum_of_squares(m: int, n: int):
    """Exercise 1.3: ``B[i] = sum_j A[i, j] * A[i, j]`` for float32 ``A: (m, n)``.

    One block named ``"B"`` with a spatial axis ``i`` and a reduction axis ``j``; the
    block zeroes ``B[i]`` in its ``T.init()``. The grader checks both the numbers and that
    the block is a reduction with an init.
    """
    raise NotImplementedError("exercise 1.3: write row_sum_of_squares")


def conv2d(n: int, ci: int, h: int, w: int, co: int, k: int):
    """Exercise 1.4: a 2-D convolution, NCHW, stride 1, no padding, float32.

    ``X: (n, ci, h, w)``, ``W: (co, ci, k, k)``, ``Y: (n, co, h - k + 1, w - k + 1)`` with
    ``Y[b, c, y, x] = sum over (q, dy, dx) of X[b, q, y + dy, x + dx] * W[c, q, dy, dx]``.
    """
    raise NotImplementedError("exercise 1.4: write conv2d")


def bmm_relu(b: int, m: int, n: int, k: int):
    """Exercise 1.5: batched matmul followed by ReLU, in TVMScript.

    ``A: (b, m, k)``, ``B: (b, k, n)``, ``C: (b, m, n)``, float32, with an intermediate
    ``Y = T.sblock_alloc_buffer((b, m, n))``: block ``"Y"`` computes ``Y = A @ B`` (batched, with an
    init), block ``"C"`` computes ``C = max(Y, 0)``.
    """
    raise NotImplementedError("exercise 1.5: write bmm_relu")


def te_mm_relu(n: int):
    """Exercise 1.6: ``mm_relu`` for ``(n, n)`` float32 matrices, written in TE.

    Tensors named ``A``, ``B`` (inputs), ``Y`` (the matmul, reduce axis named ``k``) and
    ``C`` (the ReLU); return ``te.create_prim_func([A, B, C])`` with the attribute
    ``global_symbol = "mm_relu"``. The grader checks it is structurally equal to the
    TVMScript ``mm_relu`` of chapter 1 at size ``n``.
    """
    raise NotImplementedError("exercise 1.6: write te_mm_relu")


def te_softmax(m: int, n: int):
    """Exercise 1.7: row-wise softmax of a float32 ``(m, n)`` matrix, written in TE.

    ``out[i, j] = exp(A[i, j] - max_j A[i, :]) / sum_j exp(A[i, j] - max_j A[i, :])``.
    Subtracting the row maximum keeps ``exp`` from overflowing (the grader feeds large
    values). Return ``te.create_prim_func([A, out])``. Hints: ``te.max``, ``te.sum``,
    ``te.exp``, one ``te.reduce_axis`` per reduction.
    """
    raise NotImplementedError("exercise 1.7: write te_softmax")


def fast_mm_relu(n: int):
    """Exercise 1.8 (open): ``mm_relu`` at least 4x as fast as the chapter's loop nest.

    ``C = max(A @ B, 0)`` for float32 ``(n, n)`` matrices. The grader builds your function and
    the chapter's ``mm_relu`` at ``n = 256`` and times both, one after the other, on the same
    data. Any program that computes ``C`` counts: TVMScript, TE, a schedule of chapter 2, with or
    without an intermediate buffer.
    """
    raise NotImplementedError("exercise 1.8: write fast_mm_relu")
