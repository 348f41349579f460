"""CUTLASS's BYOC pattern table and ``partition_for_cutlass`` (TVM's
``relax.backend.cuda.cutlass``), for the convolutions and matrix products: each with a bias,
an activation and a residual ``add`` / ``multiply`` after it.  TVM's attention, decode-matmul,
norm patterns, its attention rewrites and workspace annotation are not here (minitvm has no
``relax.nn.attention``)."""

from __future__ import annotations

import itertools
import operator
from functools import reduce
from typing import Any

from ....arith import Analyzer
from ....ir.module import IRModule
from ....tir.expr import IntImm
from ....tir.expr import Var as TIRVar
from ...expr import Var
from ...transform.fuse_ops_by_pattern import FuseOpsByPattern, PatternCheckContext
from ..pattern_registry import get_patterns_with_prefix, register_patterns
from ..patterns import make_fused_bias_activation_pattern, make_matmul_pattern, make_residual_block_pattern
from ..utils import has_leaking_intermediate_variables

__all__ = ["partition_for_cutlass"]


def _dtype_ok(lhs: str, rhs: str) -> bool:
    return (lhs == rhs and lhs in ("float16", "float32")) or (
        lhs in ("int8", "uint8") and rhs in ("int8", "uint8"))


def _depends(on: Var, var: Var, usages: dict) -> bool:
    """Whether ``on`` is ``var`` or reads it, through the block's uses."""
    seen, todo = set(), [var]
    if on.same_as(var):
        return True
    while todo:
        for user in usages.get(todo.pop(), []):
            if user.same_as(on):
                return True
            if user not in seen:
                seen.add(user)
                todo.append(user)
    return False


def _residual_ok(root: Any, ctx: PatternCheckContext) -> bool:
    if "residual" not in ctx.annotated_expr:
        return True
    residual = ctx.annotated_expr["residual"]
    if not isinstance(residual, Var):
        if residual not in ctx.value_to_bound_var:
            return False
        residual = ctx.value_to_bound_var[residual]
    root_var = ctx.value_to_bound_var[root]
    if _depends(residual, root_var, ctx.var_usages):
        return False  # the residual reads the root's result: not one kernel
    s1, s2 = list(root_var.struct_info.shape.values), list(residual.struct_info.shape.values)
    analyzer = Analyzer()
    same = len(s1) == len(s2) and all(analyzer.can_prove_equal(a, b) for a, b in zip(s1, s2))
    bias_like = s2[-1] == s1[-1] and reduce(operator.mul, s2, 1) == s1[-1]
    return bool(same or bias_like)


def _matmul_shape_ok(lshape: list, rshape: list) -> bool:
    """CUTLASS's strided batch GEMM: a known reduction axis, and batch axes equal on both
    sides unless one side has none."""
    if not isinstance(lshape[-1], (int, IntImm)):
        return False
    lb, rb = reduce(operator.mul, lshape[:-2], 1), reduce(operator.mul, rshape[:-2], 1)
    if isinstance(lb, (int, IntImm)) and int(lb) == 1 or isinstance(rb, (int, IntImm)) and int(rb) == 1:
        return True
    analyzer = Analyzer()
    return all(analyzer.can_prove_equal(a, b) for a, b in
               itertools.zip_longest(lshape[-3::-1], rshape[-3::-1], fillvalue=1))


def _check_matmul(ctx: PatternCheckContext) -> bool:
    if has_leaking_intermediate_variables(ctx):
        return False
    lhs, rhs = ctx.annotated_expr["lhs"], ctx.annotated_expr["rhs"]
    if not _dtype_ok(lhs.struct_info.dtype, rhs.struct_info.dtype):
        return False
    if not _residual_ok(ctx.annotated_expr["root"], ctx):
        return False
    return _matmul_shape_ok(list(lhs.struct_info.shape.values), list(rhs.struct_info.shape.values))


def _check_conv2d(ctx: PatternCheckContext) -> bool:
    if has_leaking_intermediate_variables(ctx):
        return False
    conv = ctx.annotated_expr["root"]
    data, weight = conv.args[0], conv.args[1]
    if conv.attrs.data_layout != "NHWC" or conv.attrs.kernel_layout != "OHWI" or not _dtype_ok(
            data.struct_info.dtype, weight.struct_info.dtype):
        return False
    if not _residual_ok(conv, ctx):
        return False
    if any(isinstance(d, TIRVar) for d in data.struct_info.shape.values):
        return False
    ic, oc = data.struct_info.shape.values[3], weight.struct_info.shape.values[0]
    return not (int(ic) == int(oc) == int(conv.attrs.groups))  # not depthwise


def _activation(name: str) -> str | None:
    for key, op in (("_relu", "relax.nn.relu"), ("_gelu", "relax.nn.gelu"), ("_silu", "relax.nn.silu")):
        if key in name:
            return op
    return None


def _base_patterns() -> list[tuple[tuple, Any]]:
    """((name, pattern, annotations, check) ...) for the conv2d and matmul families."""
    conv = [(n, *make_fused_bias_activation_pattern("relax.nn.conv2d", with_bias="_bias" in n,
                                                    activation=_activation(n)), _check_conv2d)
            for n in ("cutlass.conv2d", "cutlass.conv2d_bias", "cutlass.conv2d_bias_relu", "cutlass.conv2d_bias_silu")]
    names = [f"cutlass.matmul{t}{b}" for t in ("", "_transposed") for b in ("", "_bias", "_bias_relu", "_bias_gelu")]
    matmul = [(n, *make_matmul_pattern(transposed_rhs="_transposed" in n, with_bias="_bias" in n,
                                       activation=_activation(n)), _check_matmul) for n in names]
    return conv + matmul


def _residual_patterns(base: list) -> list:
    out = []
    for activation, suffix in ((None, ""), ("relax.nn.relu", "_relu")):
        for name, pat, ann, check in base:
            if "bias" not in name:  # without a bias, the residual is matched as the bias
                continue
            for op in ("relax.add", "relax.multiply"):
                out.append((f"{name}_residual_{op.split('.')[-1]}{suffix}",
                            *make_residual_block_pattern((pat, ann), binary_op=op, activation=activation), check))
    return out


_BASE = _base_patterns()
register_patterns([*_BASE, *_residual_patterns(_BASE)])


def partition_for_cutlass(mod: IRModule, annotate_codegen: bool = True, use_flash_mqa: bool = True) -> IRModule:
    """``mod`` with what CUTLASS runs grouped into functions annotated ``Codegen="cutlass"``
    (``use_flash_mqa`` is accepted for TVM's signature; minitvm has no attention rewrite)."""
    return FuseOpsByPattern(get_patterns_with_prefix("cutlass"), bind_constants=False,
                            annotate_codegen=annotate_codegen)(mod)
