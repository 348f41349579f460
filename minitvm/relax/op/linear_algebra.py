"""``matmul``: numpy-style matrix product, batched with broadcast batch dimensions."""

from __future__ import annotations

from typing import Any

from ...topi.einsum import parse_subscripts
from ..analysis.struct_info_analysis import prove_dim_differ, prove_dim_equal
from ..expr import Call, Expr, Tuple, struct_info_of
from ..struct_info import (
    StructInfo,
    StructInfoError,
    TensorStructInfo,
    TupleStructInfo,
    dim_text,
    shape_text,
    struct_info_text,
)
from .binary import add, broadcast_shapes
from .manipulate import permute_dims
from .registry import OpPattern, check_num_args, make_call, register, tensor_arg

__all__ = ["matmul", "linear", "einsum"]

_OP = "relax.matmul"


@register(_OP, pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=2)
def _infer_matmul(call: Call, ctx: Any) -> StructInfo:
    """Matrix product of the last two dimensions; 1-D operands as in numpy.matmul."""
    check_num_args(call, _OP, 2)
    x1 = tensor_arg(call, 0, _OP, "x1")
    x2 = tensor_arg(call, 1, _OP, "x2")
    out_dtype = (call.attrs or {}).get("out_dtype", "void") or "void"
    if out_dtype == "void":
        if not x1.is_unknown_dtype and not x2.is_unknown_dtype and x1.dtype != x2.dtype:
            raise StructInfoError(f"{_OP}: operands have different dtypes {x1.dtype} and {x2.dtype}; "
                                  "pass out_dtype or cast one operand")
        out_dtype = x1.dtype if not x1.is_unknown_dtype else x2.dtype
    for name, x in (("x1", x1), ("x2", x2)):
        if x.ndim == 0:
            raise StructInfoError(f"{_OP}: {name} is a scalar (0-d tensor); matmul needs at least 1 dimension")
    if x1.ndim == -1 or x2.ndim == -1:
        return TensorStructInfo(None, out_dtype, None, -1)
    s1, s2 = x1.shape_values, x2.shape_values
    if s1 is None or s2 is None:
        return TensorStructInfo(None, out_dtype, None, _out_ndim(x1.ndim, x2.ndim))
    a = s1 if len(s1) > 1 else (None,) + tuple(s1)       # (k,) acts as (1, k)
    b = s2 if len(s2) > 1 else tuple(s2) + (None,)       # (k,) acts as (k, 1)
    k1, k2 = a[-1], b[-2]
    if not prove_dim_equal(k1, k2) and prove_dim_differ(k1, k2):
        raise StructInfoError(
            f"{_OP}: cannot multiply shapes {shape_text(s1)} and {shape_text(s2)}: "
            f"inner dimensions {dim_text(k1)} and {dim_text(k2)} differ")
    # (symbolic inner dimensions neither provably equal nor different are checked at run time)
    batch = broadcast_shapes(_OP, a[:-2], b[:-2])
    if batch is None:
        return TensorStructInfo(None, out_dtype, None, _out_ndim(len(s1), len(s2)))
    out = list(batch)
    if len(s1) > 1:
        out.append(a[-2])
    if len(s2) > 1:
        out.append(b[-1])
    return TensorStructInfo(out, out_dtype)


def _out_ndim(nd1: int, nd2: int) -> int:
    """Rank of the product: a 1-D operand contributes no output dimension of its own."""
    if nd1 == 1 and nd2 == 1:
        return 0
    if nd1 == 1:
        return nd2 - 1
    if nd2 == 1:
        return nd1 - 1
    return max(nd1, nd2)


def matmul(x1: Expr, x2: Expr, out_dtype: str | None = None) -> Call:
    """``x1 @ x2``; ``out_dtype`` sets the result dtype (default: the operands')."""
    return make_call(_OP, x1, x2, attrs={"out_dtype": out_dtype or "void"})


def linear(x: Expr, w: Expr, b: Expr | None = None, out_dtype: str | None = None) -> Expr:
    """``x @ w.T + b``: a composition of ``permute_dims``, ``matmul`` and ``add`` (as in
    TVM, not an operator of its own), so ``w`` is ``(out_features, in_features)``."""

    out = matmul(x, permute_dims(w), out_dtype)
    return out if b is None else add(out, b)


@register("relax.einsum", pattern=OpPattern.OUT_ELEMWISE_FUSABLE, num_inputs=1)
def _infer_einsum(call: Call, ctx: Any) -> StructInfo:
    """The Einstein summation of a tuple of tensors: the output letters' sizes."""
    op = "relax.einsum"
    check_num_args(call, op, 1)
    sinfo = struct_info_of(call.args[0])
    if not isinstance(sinfo, TupleStructInfo) or not all(isinstance(f, TensorStructInfo) for f in sinfo.fields):
        raise StructInfoError(f"{op} expects a tuple of tensors, got {struct_info_text(sinfo)}")
    xs = list(sinfo.fields)
    dtypes = {x.dtype for x in xs if not x.is_unknown_dtype}
    if len(dtypes) > 1:
        raise StructInfoError(f"{op}: operands have different dtypes {', '.join(sorted(dtypes))}")
    dtype = dtypes.pop() if dtypes and all(not x.is_unknown_dtype for x in xs) else "void"
    try:
        inputs, out = parse_subscripts(call.attrs["subscripts"], [x.ndim for x in xs])
    except ValueError as e:
        raise StructInfoError(f"{op}: {e}") from None
    if any(x.shape_values is None for x in xs):
        return TensorStructInfo(None, dtype, None, len(out))
    size: dict = {}
    for letters, x in zip(inputs, xs):
        for ch, d in zip(letters, x.shape_values):
            old = size.get(ch)
            if old is None or _is_one(old):  # a size of 1 broadcasts
                size[ch] = d
            elif not _is_one(d) and prove_dim_differ(old, d):
                raise StructInfoError(f"{op}: letter {ch!r} has sizes {dim_text(old)} and {dim_text(d)}")
    return TensorStructInfo([size[ch] for ch in out], dtype)


def _is_one(d: Any) -> bool:
    return getattr(d, "value", None) == 1


def einsum(operands: Any, subscripts: str) -> Call:
    """The Einstein summation ``subscripts`` ("ij,jk->ik") of a tuple of tensors."""
    if isinstance(operands, (list, tuple)):
        operands = Tuple(list(operands))
    return make_call("relax.einsum", operands, attrs={"subscripts": str(subscripts)})
