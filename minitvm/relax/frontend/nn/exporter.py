"""``Module.export_tvm``: trace each method of a :class:`~.spec.ModuleSpec` into one Relax function.

A function's parameters are, in order: the spec's arguments, the effects (``effect_mode``:
each state variable, one ``packed_effects`` tuple, or none) and the weights (``param_mode``: each
weight, one ``packed_params`` tuple, or none).  Named dimensions share one ``tir.Var`` within a
function (an ``int`` argument named ``seq_len`` and a tensor dimension ``"seq_len"`` are the same
value); each function gets its own variables, as in TVM."""

from __future__ import annotations

import threading
from typing import Any

from ....ir.module import IRModule
from ....tir.expr import Var as TirVar
from ...analysis import well_formed_errors
from ...block_builder import BlockBuilder
from ...expr import Tuple, TupleGetItem, Var
from ...struct_info import ObjectStructInfo, ShapeStructInfo, TupleStructInfo
from . import spec as _spec
from .core import Effect, Module, Object, Parameter, Tensor, _attribute_finder
from .modules import IOEffect

__all__ = ["Exporter", "add_extern"]


def add_extern(mod: Any) -> None:
    """Register an :class:`nn.ExternModule` with the export in progress (its symbols become
    callable; ``export_tvm(..., allow_extern=True)`` returns it)."""
    exporter = Exporter.current()
    if exporter is None:
        raise RuntimeError("nn.add_extern is called only while a module is exported (inside export_tvm)")
    exporter.add_external_module(mod)


def _var_name(name: str) -> str:
    """``fc1.weight`` -> ``fc1_weight``: a Relax variable name TVMScript can print and parse."""
    return name.replace(".", "_")


class Exporter:
    """Builds the IRModule of a ModuleSpec; the one in progress is :meth:`current`."""

    _tls = threading.local()

    def __init__(self, debug: bool = False) -> None:

        self.builder = BlockBuilder()
        self.io_effect = IOEffect() if debug else None
        self.extern_mods: list[Any] = []

    @staticmethod
    def current() -> "Exporter | None":
        return getattr(Exporter._tls, "current", None)

    def __enter__(self) -> "Exporter":
        if Exporter.current() is not None:
            raise RuntimeError("export_tvm: an export is already in progress (nested export_tvm)")
        Exporter._tls.current = self
        return self

    def __exit__(self, *exc: Any) -> None:
        Exporter._tls.current = None

    def add_external_module(self, mod: Any) -> None:
        if any(m is mod for m in self.extern_mods):
            return
        taken = {s for m in self.extern_mods for s in m._symbols}
        dup = sorted(taken & set(mod._symbols))
        if dup:
            raise ValueError(f"nn.add_extern: symbols {dup} are already defined by another ExternModule")
        self.extern_mods.append(mod)

    def _effects(self, module: Module) -> list[tuple[str, Effect]]:
        found = [("", self.io_effect)] if self.io_effect is not None else []
        return found + list(_attribute_finder(module, "", lambda x: isinstance(x, Effect)))

    def build(self, spec: _spec.ModuleSpec) -> tuple[IRModule, list[tuple[str, Parameter]], list[Any]]:
        params = list(spec.module.named_parameters())
        effects = self._effects(spec.module)
        bb = self.builder
        with self:
            if effects:
                with bb.function("_initialize_effect", []):
                    with bb.dataflow():
                        inits = [v for name, e in effects for v in e.emit_init(name, bb)]
                        out = bb.emit_output(bb.emit(Tuple(inits)), "output")
                    bb.emit_func_output(out)
            for name, mspec in zip(spec.method_names, spec.method_specs):
                n_effects = {"packed": 1, "none": 0, "plain": len(effects)}[mspec.effect_mode]
                with bb.function(name, attrs={"num_input": len(mspec.arg_specs) + n_effects}):
                    with bb.dataflow():
                        outputs, inputs = _emit_method(bb, name, mspec, params, effects)
                    bb.emit_func_output(outputs, inputs)
        mod = bb.get()
        errors = well_formed_errors(mod)
        if errors:
            raise ValueError("export_tvm produced an ill-formed module (a weight used by a method whose "
                             "param_mode is 'none'?):\n  " + "\n  ".join(errors))
        return mod, params, self.extern_mods


def _method_inputs(mspec: _spec.MethodSpec, sym: dict[str, TirVar]) -> list[Any]:
    """What the method is called with: Tensors, tir.Vars (int arguments), Objects, spec.Tuples."""

    def dim(d: Any) -> Any:
        if isinstance(d, str):
            return sym.setdefault(d, TirVar(d, "int64"))
        return d

    def convert(name: str, arg: Any) -> Any:
        if isinstance(arg, _spec.Int):
            return dim(name)
        if isinstance(arg, _spec.Tensor):
            return Tensor.placeholder([dim(d) for d in arg.shape], arg.dtype, name)
        if isinstance(arg, _spec.Object):
            return arg.object_type(_expr=Var(name, ObjectStructInfo()), _name=name)
        if isinstance(arg, _spec.Tuple):
            elems = [convert(f"{name}_{i}", e) for i, e in enumerate(arg.elements)]
            return _spec.Tuple(name, type(arg.elements)(elems))
        raise TypeError(f"export_tvm: invalid spec for argument {name!r}: {arg!r}")

    return [convert(n, a) for n, a in zip(mspec.arg_names, mspec.arg_specs)]


def _relax_input(arg: Any) -> Var:
    if isinstance(arg, TirVar):
        return Var(arg.name, ShapeStructInfo([arg]))
    if isinstance(arg, (Tensor, Object)):
        return arg._expr
    if isinstance(arg, _spec.Tuple):
        return Var(arg.name, TupleStructInfo([_relax_input(e).struct_info for e in arg.elements]))
    raise TypeError(f"export_tvm: unsupported input {arg!r}")


def _detuple(bb: BlockBuilder, arg: Any, var: Any) -> Any:
    """A tuple argument as the method sees it: its fields, bound from the tuple parameter."""
    if isinstance(arg, _spec.Tuple):
        fields = [_detuple(bb, e, bb.emit(TupleGetItem(var, i), f"{arg.name}_{i}"))
                  for i, e in enumerate(arg.elements)]
        return type(arg.elements)(fields)
    if isinstance(arg, Tensor):
        return Tensor(_expr=var)
    if isinstance(arg, Object):
        return type(arg)(_expr=var, _name=var.name)
    return arg


def _param_inputs(bb: BlockBuilder, params: list[tuple[str, Parameter]], mode: str,
                  sym: dict[str, TirVar]) -> list[Var]:
    """Bind each Parameter to this function's variable for it; the function parameters that
    carry them (one per weight, one tuple, or none)."""
    plain = []
    for name, p in params:
        shape = [sym.setdefault(d.name, TirVar(d.name, "int64")) if isinstance(d, TirVar) else d for d in p.shape]
        p._expr = Tensor.placeholder(shape, p.dtype, _var_name(name))._expr
        plain.append(p._expr)
    if mode == "plain":
        return plain
    if mode == "none":
        return []
    packed = Var("packed_params", TupleStructInfo([v.struct_info for v in plain]))
    for i, (name, p) in enumerate(params):
        p._expr = bb.emit(TupleGetItem(packed, i), _var_name(name))
    return [packed]


def _effect_inputs(bb: BlockBuilder, effects: list[tuple[str, Effect]], mode: str) -> list[Var]:
    per_effect = []
    for name, effect in effects:
        state = effect.create(name)
        effect.set_state(state)
        per_effect.append(state)
    flat = [v for state in per_effect for v in state]
    if mode == "plain":
        return flat
    if mode == "none":
        return []
    packed = Var("packed_effects", TupleStructInfo([v.struct_info for v in flat]))
    i = 0
    for state, (_, effect) in zip(per_effect, effects):
        fields = []
        for v in state:
            fields.append(bb.emit(TupleGetItem(packed, i), v.name))
            i += 1
        effect.set_state(fields)
    return [packed]


def _unwrap(result: Any, method: str) -> Any:
    if isinstance(result, (Tensor, Object)):
        return result._expr
    if isinstance(result, (tuple, list)):
        return Tuple([_unwrap(r, method) for r in result])
    raise TypeError(f"export_tvm: {method} returned {type(result).__name__}; return nn.Tensor / nn.Object "
                    "values or tuples of them")


def _emit_method(bb: BlockBuilder, name: str, mspec: _spec.MethodSpec, params: list[tuple[str, Parameter]],
                 effects: list[tuple[str, Effect]]) -> tuple[Any, list[Var]]:
    sym: dict[str, TirVar] = {}
    args = _method_inputs(mspec, sym)
    inputs = [_relax_input(a) for a in args]
    inputs += _effect_inputs(bb, effects, mspec.effect_mode)
    inputs += _param_inputs(bb, params, mspec.param_mode, sym)
    args = [_detuple(bb, a, v) if isinstance(a, _spec.Tuple) else a for a, v in zip(args, inputs)]
    result = mspec.method(*args)
    effect_outputs = [v for _, e in effects for v in e.finalize()]
    out = _unwrap(result, name)
    if effect_outputs and mspec.effect_mode != "none":
        out = Tuple([out, Tuple(effect_outputs)])
    return bb.emit_output(out, "gv"), inputs
