"""LowerAllocTensor: each ``R.builtin.alloc_tensor`` left after memory planning gets a storage of its own.

::

    x = R.builtin.alloc_tensor(R.shape([16, 32]), R.dtype("float32"), R.prim_value(0))
  becomes
    storage = R.memory.alloc_storage(R.shape([2048]), R.prim_value(0), R.str("global"), R.dtype("uint8"))
    x = R.memory.alloc_tensor(storage, R.prim_value(0), R.shape([16, 32]), R.dtype("float32"), R.prim_value(0))

``StaticPlanBlockMemory`` leaves an allocation alone when it cannot share it (a returned
tensor, one of unbounded symbolic size); afterwards every allocation is a storage plus a
tensor placed in it, the form ``KillAfterLastUse`` and ``LowerRuntimeBuiltin`` expect.  A
symbolic shape gives a symbolic size (``n * 128``), computed at run time from the shape heap.
"""

from __future__ import annotations

import math
from typing import Any

from ...arith.analyzer import Analyzer
from ...ir.dtype import bits
from ...ir.module import IRModule
from ...ir.op import Op
from ...tir.expr import IntImm
from ...transform import PassContext, module_pass
from ..expr import Call, Function, ShapeExpr, struct_info_of
from ..op import memory
from ..op.memory import ALLOC_TENSOR
from ..struct_info import ShapeStructInfo
from ._util import KernelCallMutator, map_functions

__all__ = ["LowerAllocTensor"]


def _shape_values(shape: Any) -> list:
    if isinstance(shape, ShapeExpr):
        return list(shape.values)
    sinfo = struct_info_of(shape)
    if isinstance(sinfo, ShapeStructInfo) and sinfo.values is not None:
        return list(sinfo.values)
    raise ValueError(f"LowerAllocTensor: the shape of {ALLOC_TENSOR} must be an R.shape or a variable holding one "
                     f"with known values, got {shape!r}")


class _AllocLower(KernelCallMutator):
    def visit_call_(self, op: Call) -> Any:
        call = self.visit_children(op)
        if not (isinstance(call.op, Op) and call.op.name == ALLOC_TENSOR):
            return call
        shape, dtype, device = call.args[0], call.args[1], call.args[2]
        nbytes: Any = IntImm("int64", (bits(dtype.value) + 7) // 8)
        nbytes = Analyzer().simplify(math.prod(_shape_values(shape), start=nbytes))
        storage = self.builder_.emit(memory.alloc_storage(ShapeExpr([nbytes]), device, "global", "uint8"), "storage")
        return memory.alloc_tensor(storage, 0, shape, dtype, device)


def _rewrite(func: Function, mod: IRModule) -> Function:
    return _AllocLower(mod).visit_expr(func)


@module_pass(opt_level=0, name="LowerAllocTensor")
class LowerAllocTensor:
    """``R.builtin.alloc_tensor`` -> a storage + a tensor in it: ``LowerAllocTensor()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _rewrite)
