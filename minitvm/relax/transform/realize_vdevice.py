"""RealizeVDevice: spread virtual-device annotations over the tensors of a module.

Known devices come from struct infos that name one (parameters, bindings, a function's return
annotation -- through a returned tuple too) and from ``R.hint_on_device``, looked up in the
module's ``"vdevice"`` global infos by device type, index and memory scope.  They spread to every
tensor a binding shares with its value (``lv = R.add(x, y)`` puts ``lv``, ``x`` and ``y`` on one
device), both ways, stopping at ``R.to_vdevice`` and ``R.hint_on_device``.  Explicit annotations
spread first; a hint's input takes the hint's device only if nothing else placed it.  Then each
hint becomes its input (same device) or ``R.to_vdevice`` (a copy to the hinted device).
Scalars (``R.Prim``) never take part.  As TVM's pass, it never changes the module it is given.
"""

from __future__ import annotations

from typing import Any

from ...ir import global_info as _gi
from ...ir.module import IRModule
from ...ir.op import Op
from ...transform import PassContext, module_pass
from ..expr import Call, DataflowVar, Function, SeqExpr, Tuple, Var, VarBinding
from ..expr_functor import ExprMutator, ExprVisitor
from ..op.vdevice import to_vdevice
from ..struct_info import PrimStructInfo, TensorStructInfo, TupleStructInfo

__all__ = ["RealizeVDevice"]

_HINT, _TO_VDEVICE = "relax.hint_on_device", "relax.to_vdevice"


def _is_op(expr: Any, name: str) -> bool:
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == name


def _hinted_vdevice(mod: IRModule, attrs: dict) -> _gi.VDevice:
    """The module's virtual device an ``R.hint_on_device`` names (type, index, memory scope)."""
    vdevices = mod.global_infos.get("vdevice")
    if not vdevices:
        raise ValueError("RealizeVDevice: R.hint_on_device needs the module's 'vdevice' global infos "
                         "(I.module_global_infos({'vdevice': [...]}))")
    for v in vdevices:
        if not isinstance(v, _gi.VDevice):
            raise TypeError(f"RealizeVDevice: every 'vdevice' global info must be a VDevice, got {v!r}")
    for v in vdevices:
        if (_gi.device_type_of(v) == attrs["device_type"] and v.vdevice_id == attrs["index"]
                and v.memory_scope == attrs["memory_scope"]):
            return v
    raise ValueError(f"RealizeVDevice: R.hint_on_device names device type {attrs['device_type']} id "
                     f"{attrs['index']} scope {attrs['memory_scope']!r}, which is not in the module's "
                     f"'vdevice' list {vdevices}")


def _vdevice_of(sinfo: Any) -> Any:
    if isinstance(sinfo, TensorStructInfo) and isinstance(sinfo.vdevice, _gi.VDevice):
        return sinfo.vdevice
    return None


class _HintCollector(ExprVisitor):
    """Devices written down: annotated tensors, returned values, hinted bindings and hint inputs."""

    def __init__(self, mod: IRModule):
        self.mod = mod
        self.known: dict[Var, _gi.VDevice] = {}
        self.hint_inputs: dict[Var, _gi.VDevice] = {}
        self.bound: dict[Var, Any] = {}

    def visit_function_(self, op: Function) -> None:
        super().visit_function_(op)
        result = op.body.body if isinstance(op.body, SeqExpr) else op.body
        self._returned(result, op.ret_struct_info)

    def _returned(self, expr: Any, sinfo: Any) -> None:
        vdevice = _vdevice_of(sinfo)
        if vdevice is not None and isinstance(expr, Var):
            self.known.setdefault(expr, vdevice)
        if isinstance(sinfo, TupleStructInfo):
            while isinstance(expr, Var) and expr in self.bound:
                expr = self.bound[expr]
            if isinstance(expr, Tuple):
                if len(expr.fields) != len(sinfo.fields):
                    raise ValueError(f"RealizeVDevice: a function returns a tuple of {len(expr.fields)} "
                                     f"elements but is annotated as returning {len(sinfo.fields)}")
                for field, field_sinfo in zip(expr.fields, sinfo.fields):
                    self._returned(field, field_sinfo)

    def visit_var_def_(self, var: Var) -> None:
        vdevice = _vdevice_of(var.struct_info)
        if vdevice is not None:
            self.known[var] = vdevice

    visit_dataflow_var_def_ = visit_var_def_

    def visit_var_binding_(self, binding: VarBinding) -> None:
        super().visit_var_binding_(binding)
        self.bound[binding.var] = binding.value
        if _is_op(binding.value, _HINT):
            vdevice = _hinted_vdevice(self.mod, binding.value.attrs)
            self.known[binding.var] = vdevice
            if isinstance(binding.value.args[0], Var):
                self.hint_inputs[binding.value.args[0]] = vdevice


class _CoLocated(ExprVisitor):
    """Which variables share a device: a binding's variable and every variable of its value."""

    def __init__(self) -> None:
        self.current: Var | None = None
        self.links: dict[Var, list[Var]] = {}

    def visit_binding(self, binding: Any) -> None:
        saved, self.current = self.current, binding.var
        try:
            super().visit_binding(binding)
        finally:
            self.current = saved

    def visit_call_(self, op: Call) -> None:
        if not (_is_op(op, _HINT) or _is_op(op, _TO_VDEVICE)):  # these two cross devices
            super().visit_call_(op)

    def visit_var_(self, op: Var) -> None:
        cur = self.current
        if cur is None or isinstance(cur.struct_info, PrimStructInfo) or isinstance(op.struct_info, PrimStructInfo):
            return
        self.links.setdefault(cur, []).append(op)
        self.links.setdefault(op, []).append(cur)

    visit_dataflow_var_ = visit_var_


def _infer(mod: IRModule) -> dict[Var, _gi.VDevice]:
    hints, colocated = _HintCollector(mod), _CoLocated()
    for func in mod.functions.values():
        if isinstance(func, Function):
            hints.visit_expr(func)
            colocated.visit_expr(func)
    known: dict[Var, _gi.VDevice] = {}

    def spread(start: list[Var]) -> None:
        stack = list(start)
        while stack:
            var = stack.pop()
            for other in colocated.links.get(var, ()):
                if other not in known:
                    known[other] = known[var]
                    stack.append(other)

    known.update(hints.known)
    spread(list(hints.known))
    fresh = [v for v in hints.hint_inputs if v not in known]
    known.update({v: hints.hint_inputs[v] for v in fresh})
    spread(fresh)
    return known


class _Updater(ExprMutator):
    """Re-annotates the placed variables and turns hints into their input or a copy."""

    def __init__(self, mod: IRModule, placed: dict[Var, _gi.VDevice]):
        super().__init__(mod)
        self.mod, self.placed = mod, placed

    def visit_var_def_(self, var: Var) -> Var:
        sinfo, vdevice = var.struct_info, self.placed.get(var)
        if not isinstance(sinfo, TensorStructInfo) or vdevice is None or sinfo.vdevice == vdevice:
            return var
        new = type(var)(var.name, TensorStructInfo(sinfo.shape, sinfo.dtype, vdevice,
                                                   sinfo.ndim if sinfo.shape is None else -1))
        self.set_var_remap(var, new)
        return new

    def visit_dataflow_var_def_(self, var: DataflowVar) -> Var:
        return self.visit_var_def_(var)

    def visit_call_(self, op: Call) -> Any:
        call = self.visit_expr_post_order(op)
        if not _is_op(call, _HINT):
            return call
        arg = call.args[0]
        target = _hinted_vdevice(self.mod, call.attrs)
        if _vdevice_of(arg.struct_info) == target:
            return arg
        return to_vdevice(arg, target)


@module_pass(opt_level=0, name="RealizeVDevice")
class RealizeVDevice:
    """Propagate virtual devices and realize ``R.hint_on_device``: ``RealizeVDevice()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        placed = _infer(mod)
        updater = _Updater(mod, placed)
        changed = {}
        for gv, func in mod.functions.items():
            if isinstance(func, Function):
                new = updater.visit_expr(func)
                if new is not func:
                    changed[gv] = new
        if not changed:
            return mod
        return IRModule({gv: changed.get(gv, f) for gv, f in mod.functions.items()}, mod.attrs,
                        mod.global_infos)
