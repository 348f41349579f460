"""Matrix products: ``matmul`` (numpy semantics, optional transposes), ``dense``
(``data @ weight.T + bias``), ``batch_matmul``."""

from __future__ import annotations

from typing import Any

from ... import te
from ...tir import op as _op
from ...tir.expr import IntImm
from ..broadcast import broadcast_shape
from ..utils import is_one


def matmul(tensor_a: te.Tensor, tensor_b: te.Tensor, bias: te.Tensor | None = None,
           out_dtype: str | None = None, transpose_a: bool = False,
           transpose_b: bool = False) -> te.Tensor:
    """``A @ B`` as numpy.matmul: batch dimensions broadcast, a 1-D operand is a vector.

    ``transpose_a``/``transpose_b`` use the transpose of the last two dimensions;
    ``bias`` (the size of the last output dimension) is added.
    """
    a_shape, b_shape = list(tensor_a.shape), list(tensor_b.shape)
    a_vec, b_vec = len(a_shape) == 1, len(b_shape) == 1
    if a_vec:
        a_shape = [1] + a_shape
    if b_vec:
        b_shape = b_shape + [1]
    m, k = (a_shape[-1], a_shape[-2]) if transpose_a else (a_shape[-2], a_shape[-1])
    n = b_shape[-2] if transpose_b else b_shape[-1]
    k_b = b_shape[-1] if transpose_b else b_shape[-2]
    if not isinstance(k, (int, IntImm)) and isinstance(k_b, (int, IntImm)):
        k = k_b  # the two lengths are one at run time: loop over the one known here
    batch = broadcast_shape(a_shape[:-2], b_shape[:-2], "topi.nn.matmul")
    out_dtype = out_dtype or tensor_a.dtype
    out_shape = list(batch) + ([] if a_vec else [m]) + ([] if b_vec else [n])

    def index(t: te.Tensor, shape: list, bidx: list, row: Any, col: Any, trans: bool, vec: str) -> Any:
        offset = len(batch) - (len(shape) - 2)
        # a batch dimension of 1 is read at 0 only where the output's is wider (as TVM)
        lead = [0 if is_one(d) and not is_one(batch[offset + j]) else bidx[offset + j]
                for j, d in enumerate(shape[:-2])]
        r, c = (col, row) if trans else (row, col)
        if vec == "row":
            return t[tuple(lead + [c])]
        if vec == "col":
            return t[tuple(lead + [r])]
        return t[tuple(lead + [r, c])]

    def fcompute(*idx: Any) -> Any:
        rk = te.reduce_axis((0, k), "k")
        bidx = list(idx[:len(batch)])
        rest = list(idx[len(batch):])
        i = 0 if a_vec else rest.pop(0)
        j = 0 if b_vec else rest.pop(0)
        av = index(tensor_a, a_shape, bidx, i, rk, transpose_a, "row" if a_vec else "")
        bv = index(tensor_b, b_shape, bidx, rk, j, transpose_b, "col" if b_vec else "")
        return te.sum(_op.cast(av, out_dtype) * _op.cast(bv, out_dtype), axis=rk)

    out = te.compute(out_shape, fcompute, name="T_matmul")
    if bias is not None:
        out = te.compute(out_shape, lambda *i: out(*i) + _op.cast(bias[i[-1]], out_dtype), name="T_add")
    return out


def dense(data: te.Tensor, weight: te.Tensor, bias: te.Tensor | None = None,
          out_dtype: str | None = None) -> te.Tensor:
    """``data @ weight.T (+ bias)``: data ``(..., in)``, weight ``(out, in)``."""
    return matmul(data, weight, bias, out_dtype, transpose_b=True)


def batch_matmul(x: te.Tensor, y: te.Tensor, out_dtype: str | None = None,
                 transpose_a: bool = False, transpose_b: bool = True) -> te.Tensor:
    """Batched ``x @ y.T`` (``transpose_b`` defaults to True, as in TVM)."""
    return matmul(x, y, None, out_dtype, transpose_a, transpose_b)
