"""CallTIRRewrite: ``R.call_tir`` / ``R.call_dps_packed`` become explicit allocation plus a
call in destination-passing style.

::

    lv = R.call_tir(cls.linear, (x, w), out_sinfo=R.Tensor((1, 128), "float32"))
  becomes
    alloc = R.builtin.alloc_tensor(R.shape([1, 128]), R.dtype("float32"), R.prim_value(0))
    _ = cls.linear(x, w, alloc)
    lv = alloc

Several outputs give one allocation each and ``lv = (alloc, alloc1)``; ``tir_vars``
(symbolic values the kernel takes as scalars) are passed after the outputs as
``R.prim_value(n)``.  The kernel call returns nothing.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...ir.op import Op
from ...transform import PassContext, module_pass
from ..expr import Call, Function, PrimValue, ShapeExpr, Tuple, TupleGetItem, _set_struct_info, struct_info_of
from ..struct_info import ShapeStructInfo, TensorStructInfo, TupleStructInfo
from ..vm.ops import alloc_tensor
from ._util import KernelCallMutator, map_functions

__all__ = ["CallTIRRewrite"]

# call_tir_with_grad runs as call_tir (its gradient matters to the Gradient pass only), as TVM
_DPS_OPS = ("relax.call_tir", "relax.call_tir_inplace", "relax.call_tir_with_grad", "relax.call_dps_packed")


class _CallTIRRewriter(KernelCallMutator):
    def visit_call_(self, op: Call) -> Any:
        call = self.visit_children(op)
        if not (isinstance(call.op, Op) and call.op.name in _DPS_OPS):
            return call
        bb = self.builder_
        out = call.sinfo_args[0]
        outs = list(out.fields) if isinstance(out, TupleStructInfo) else [out]
        args = call.args[1]
        if isinstance(args, Tuple):
            inputs = list(args.fields)
        else:  # a tuple-valued variable
            n = len(struct_info_of(args).fields)
            inputs = [bb.emit(TupleGetItem(args, i)) for i in range(n)]
        # call_tir_inplace: output k is input inplace_indices[k] (-1: allocated as for call_tir)
        inplace = list((call.attrs or {}).get("inplace_indices", ())) if call.op.name == "relax.call_tir_inplace" \
            else [-1] * len(outs)
        allocs, results = [], []
        for s, index in zip(outs, inplace):
            if index >= 0:
                results.append(inputs[index])
                continue
            if not isinstance(s, TensorStructInfo) or s.shape_values is None or s.is_unknown_dtype:
                raise ValueError(f"CallTIRRewrite: {call.op.name} output {s!r} needs a known shape and dtype")
            allocs.append(bb.emit(alloc_tensor(ShapeExpr(list(s.shape_values)), s.dtype), "alloc"))
            results.append(allocs[-1])
        extra = []
        if len(call.args) == 3:
            tir_vars = call.args[2]
            sinfo = struct_info_of(tir_vars)
            values = tir_vars.values if isinstance(tir_vars, ShapeExpr) else (
                sinfo.values if isinstance(sinfo, ShapeStructInfo) else None)
            if values is None:
                raise ValueError("CallTIRRewrite: tir_vars must be a shape with known values")
            extra = [PrimValue(v) for v in values]
        kernel = Call(call.args[0], [*inputs, *allocs, *extra])
        _set_struct_info(kernel, TupleStructInfo([]))  # returns nothing: outputs are written in place
        bb.emit(kernel, "_")
        return results[0] if len(results) == 1 else Tuple(results)


def _rewrite(func: Function, mod: IRModule) -> Function:
    return _CallTIRRewriter(mod).visit_expr(func)


@module_pass(opt_level=0, name="CallTIRRewrite")
class CallTIRRewrite:
    """``R.call_tir`` / ``R.call_dps_packed`` -> allocate outputs, call in DPS: ``CallTIRRewrite()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _rewrite)
