"""UpdateVDevice: replace one of the module's virtual devices by another.

``UpdateVDevice(new, index)`` puts ``new`` in place of entry ``index`` of the module's "vdevice"
global infos, and every tensor annotated with the old device (parameters, bindings, results)
is annotated with the new one, as TVM's pass does.
"""

from __future__ import annotations

from typing import Any

from ...ir.global_info import VDevice
from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..expr import DataflowVar, Function, Var
from ..expr_functor import ExprMutator
from ..struct_info import TensorStructInfo

__all__ = ["UpdateVDevice"]


class _Swap(ExprMutator):
    def __init__(self, mod: IRModule, old: VDevice, new: VDevice):
        super().__init__(mod)
        self.old, self.new = old, new

    def visit_var_def_(self, var: Var) -> Var:
        s = var.struct_info
        if not isinstance(s, TensorStructInfo) or s.vdevice != self.old:
            return var
        new = type(var)(var.name, TensorStructInfo(s.shape, s.dtype, self.new, s.ndim if s.shape is None else -1))
        self.set_var_remap(var, new)
        return new

    def visit_dataflow_var_def_(self, var: DataflowVar) -> Var:
        return self.visit_var_def_(var)


@module_pass(opt_level=0, name="UpdateVDevice")
class UpdateVDevice:
    """``UpdateVDevice(new_vdevice, index)(mod)``: the module with its ``index``-th virtual device
    replaced by ``new_vdevice`` everywhere."""

    def __init__(self, new_vdevice: Any, index: int):
        if not isinstance(new_vdevice, VDevice):
            raise TypeError(f"UpdateVDevice: expected a VDevice, got {new_vdevice!r}")
        self.new_vdevice, self.index = new_vdevice, int(index)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        vdevices = list(mod.global_infos.get("vdevice", ()))
        if not 0 <= self.index < len(vdevices):
            raise ValueError(f"UpdateVDevice: index {self.index} is outside the module's "
                             f"{len(vdevices)} virtual devices")
        old = vdevices[self.index]
        swap = _Swap(mod, old, self.new_vdevice)
        funcs = {gv: swap.visit_expr(f) if isinstance(f, Function) else f for gv, f in mod.functions.items()}
        infos = {**mod.global_infos, "vdevice": [self.new_vdevice if v == old else v for v in vdevices]}
        return IRModule(funcs, mod.attrs, infos)
