"""FoldBatchnormToConv2D: an inference-mode BatchNorm after a convolution becomes part of the
convolution's constants.

In inference BatchNorm is a per-channel affine map, ``y[c] = x[c] * s[c] + t[c]`` with
``s = gamma / sqrt(var + eps)`` and ``t = beta - mean * s``.  When ``x`` is a convolution
with a constant weight, scaling the output channel ``c`` is the same as scaling the weight's
filter ``c``::

    batch_norm(conv2d(x, W), gamma, beta, mean, var)[0]
        ==  conv2d(x, W * s[:, None, None, None]) + t[None, :, None, None]

so the BatchNorm kernel (a full read and write of the activation per call) disappears; the
``+ t`` that is left is an elementwise epilogue ``FuseOps`` puts into the convolution's kernel.
A bias added between the convolution and the BatchNorm (``conv2d + b`` then BN) folds the same
way (``b * s + t``).  ``W * s`` and ``t`` are computed here, once, at compile time.

It applies when the weight and all four statistics are constants (``from_exported_program``
binds a model's parameters as constants), the kernel layout is OIHW with the BatchNorm over
axis 1 of NCHW data (or IOHW / OIW ... : the output-channel axis of the weight is found from
the layout), the BatchNorm is in inference mode (``training=False``), and the convolution's
result has no other use (else the convolution would be computed twice).  TVM's pass of the
same name does the first case with Relax ops for ``FoldConstant`` to evaluate.

::

    mod = relax.transform.FoldBatchnormToConv2D()(mod)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.module import IRModule
from ...ir.op import Op
from ...transform import PassContext, module_pass
from ..expr import Call, Constant, Expr, Function, TupleGetItem, Var, const
from ..expr_functor import ExprMutator, ExprVisitor
from ._util import map_functions

__all__ = ["FoldBatchnormToConv2D", "count_var_uses"]

_CONVS = ("relax.nn.conv1d", "relax.nn.conv2d", "relax.nn.conv3d")


class _UseCounter(ExprVisitor):
    def __init__(self) -> None:
        self.uses: dict[Var, int] = {}

    def visit_var_(self, op: Var) -> None:
        self.uses[op] = self.uses.get(op, 0) + 1

    def visit_dataflow_var_(self, op: Var) -> None:
        self.visit_var_(op)


def count_var_uses(func: Function) -> dict[Var, int]:
    """How many times each variable is read in ``func`` (definitions do not count)."""
    counter = _UseCounter()
    counter.visit_expr(func)
    return counter.uses


def _const(e: Any, lookup) -> np.ndarray | None:
    """The numpy value of a constant (directly or through a binding), else None."""
    if isinstance(e, Var):
        e = lookup(e)
    return e.data.numpy() if isinstance(e, Constant) else None


class _Folder(ExprMutator):
    def __init__(self, mod: IRModule, uses: dict[Var, int]) -> None:
        super().__init__(mod)
        self.uses = uses

    def _bound_call(self, e: Any, op_names: tuple[str, ...]) -> Call | None:
        """The call ``e`` is bound to when it is one of ``op_names`` and ``e`` has one use."""
        if not isinstance(e, Var) or self.uses.get(e, 0) != 1:
            return None
        value = self.lookup_binding(e)
        ok = isinstance(value, Call) and any(value.op == Op.get(n) for n in op_names)
        return value if ok else None

    def visit_tuple_getitem_(self, op: TupleGetItem) -> Expr:
        new = super().visit_tuple_getitem_(op)
        if new.index != 0:
            return new
        bn = self._bound_call(new.tuple_value, ("relax.nn.batch_norm",))
        if bn is None or bn.attrs.get("training", True):
            return new
        # the output tuple's other fields (the statistics) must be unused: only [0] is read
        if self.uses.get(new.tuple_value, 0) != 1:
            return new
        stats = [_const(a, self.lookup_binding) for a in bn.args[1:]]
        if any(s is None for s in stats):
            return new
        gamma, beta, mean, var = stats
        if not bn.attrs.get("scale", True):
            gamma = np.ones_like(gamma)
        if not bn.attrs.get("center", True):
            beta = np.zeros_like(beta)
        scale = gamma / np.sqrt(var + np.asarray(bn.attrs["epsilon"], dtype=var.dtype))
        shift = beta - mean * scale
        return self._fold(bn.args[0], scale.astype(gamma.dtype), shift.astype(gamma.dtype),
                          int(bn.attrs["axis"])) or new

    def _fold(self, x: Any, scale: np.ndarray, shift: np.ndarray, axis: int) -> Expr | None:
        """``x * scale + shift`` along ``axis`` with ``x`` a convolution (maybe plus a bias),
        rewritten into the convolution's weight and one bias add; None if it does not apply."""
        bias = None
        add = self._bound_call(x, ("relax.add",))
        if add is not None:
            bias = _const(add.args[1], self.lookup_binding)
            x = add.args[0]
            if bias is None:
                return None
        conv = self._bound_call(x, _CONVS)
        if conv is None:
            return None
        attrs = conv.attrs
        data_layout, kernel_layout = attrs["data_layout"], attrs["kernel_layout"]
        out_layout = attrs.get("out_layout") or data_layout
        ndim = len(data_layout)
        if axis % ndim != out_layout.index("C") or attrs.get("out_dtype") not in (None, "", "void"):
            return None
        weight = _const(conv.args[1], self.lookup_binding)
        if weight is None or weight.dtype != scale.dtype:
            return None
        channels = scale.shape[0]
        per_out = [1] * ndim
        per_out[out_layout.index("C")] = channels
        if bias is not None:
            if bias.size != channels or np.broadcast_shapes(bias.shape, tuple(per_out)) != tuple(per_out):
                return None
            bias = bias.reshape(channels)
        o_axis = kernel_layout.index("O")
        if weight.shape[o_axis] != channels:
            return None
        w_scale = [1] * weight.ndim
        w_scale[o_axis] = channels
        new_weight = (weight * scale.reshape(w_scale)).astype(weight.dtype)
        new_shift = shift if bias is None else bias * scale + shift
        conv_var = self.builder_.emit(Call(conv.op, [conv.args[0], const(new_weight)], attrs, conv.sinfo_args))
        shift_const = const(new_shift.reshape(per_out).astype(weight.dtype))
        return Call(Op.get("relax.add"), [conv_var, shift_const])


def _fold_function(func: Function, mod: IRModule) -> Function:
    if func.attrs.get("Primitive"):
        return func
    folder = _Folder(mod, count_var_uses(func))
    return folder.visit_expr(func)


@module_pass(opt_level=0, name="FoldBatchnormToConv2D")
class FoldBatchnormToConv2D:
    """``FoldBatchnormToConv2D()``: ``batch_norm(conv(x, W) [+ b])[0]`` -> ``conv(x, W * s) + t``
    for constant weights and statistics (see the module docstring).  Run
    ``DeadCodeElimination`` after it to drop the old convolution and BatchNorm."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _fold_function)
