"""AlterOpImpl: replace the kernel of an operator by another implementation that wants its
buffers in other layouts (TVM's pass of the same name).

A PrimFunc called through ``R.call_tir`` names its operator in the attribute
``operator_name``.  For an operator in ``op_impl_map`` the call is redirected to the
replacement PrimFunc (added as ``<operator>_replacement``, operator name kept), each input
passed through ``R.layout_transform`` with its buffer's index map, and each output brought
back by the inverse map; an output whose map pads gets the padding cut off by a ``remove_pad``
kernel.  ``op_buffer_transforms`` gives one index map (or function) per buffer, inputs then
outputs; the axis separators lists give each buffer's separators for the layout transforms.

    mod = relax.transform.AlterOpImpl({"relax.add": add_2d}, {"relax.add": [m, m, m]})(mod)
"""

from __future__ import annotations

from typing import Any

from ... import te
from ...ir.module import IRModule
from ...ir.op import Op
from ...tir.expr import IntImm, Var
from ...tir.function import PrimFunc
from ...tir.functor import substitute
from ...tir.index_map import IndexMap
from ...transform import PassContext, module_pass
from ..expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, struct_info_of
from ..expr_functor import ExprMutator
from ..op.base import call_tir
from ..op.layout import layout_transform
from ..struct_info import TensorStructInfo, TupleStructInfo

__all__ = ["AlterOpImpl"]

_OPERATOR_NAME = "operator_name"


def _index_map(transform: Any) -> IndexMap | None:
    if transform is None or isinstance(transform, IndexMap):
        return transform
    if isinstance(transform, (list, tuple)) and transform and isinstance(transform[0], IndexMap):
        return transform[0]
    if callable(transform):
        return IndexMap.from_func_with_separators(transform)[0]
    raise TypeError(f"AlterOpImpl: a buffer transform must be an IndexMap or a function, got {transform!r}")


def _fresh(index_map: IndexMap) -> IndexMap:
    """A copy on new index variables: each call owns its map, as TVM's deep copy does (one map
    shared by two calls would tie their variables together in structural comparisons)."""
    new = [Var(v.name, v.dtype) for v in index_map.initial_indices]
    env = dict(zip(index_map.initial_indices, new))
    return IndexMap(tuple(new), tuple(substitute(e, env) for e in index_map.final_indices))


def _pick(separators: Any, index: int) -> tuple:
    return tuple(int(s) for s in separators[index]) if separators else ()


class _AlterOpImpl(ExprMutator):
    def __init__(self, mod: IRModule, impls: dict, transforms: dict, seps: dict, in_seps: dict) -> None:
        super().__init__(mod)
        self.mod, self.impls, self.transforms, self.seps, self.in_seps = mod, impls, transforms, seps, in_seps
        self.replacements: dict[int, Any] = {}  # id(replacement PrimFunc) -> its GlobalVar
        self.remove_pad: dict[int, Any] = {}  # rank -> the remove_pad kernel

    def visit_call_(self, op: Call) -> Any:
        call = self.visit_expr_post_order(op)
        if not (isinstance(call, Call) and call.op == Op.get("relax.call_tir")):
            return call
        old = self.mod[call.args[0]] if call.args[0] in self.mod.functions else None
        kind = (old.attrs or {}).get(_OPERATOR_NAME) if isinstance(old, PrimFunc) else None
        if kind is None or kind not in self.impls:
            return call
        new_func = self.impls[kind]
        maps = [_index_map(t) for t in self.transforms.get(kind) or []]
        if maps and len(maps) != len(new_func.params):
            raise ValueError(f"AlterOpImpl: {kind}: give one buffer transform per parameter of the "
                             f"replacement ({len(new_func.params)}), got {len(maps)}")
        if len(old.params) != len(new_func.params):
            raise ValueError(f"AlterOpImpl: {kind}: the replacement takes {len(new_func.params)} parameters, "
                             f"the kernel it replaces {len(old.params)}")
        gv = self._replacement(new_func, kind)
        seps, in_seps = self.seps.get(kind), self.in_seps.get(kind)
        inputs = call.args[1].fields
        if maps:
            inputs = [self._transform(x, maps[i], _pick(seps, i), _pick(in_seps, i)) for i, x in enumerate(inputs)]
        old_sinfo = call.sinfo_args[0]
        out_sinfo = _mapped_sinfo(old_sinfo, maps)
        out_sinfo = list(out_sinfo.fields) if isinstance(out_sinfo, TupleStructInfo) else out_sinfo
        new = self.builder_.normalize(call_tir(gv, Tuple(inputs), out_sinfo))
        return self._outputs(new, maps, old_sinfo, seps, in_seps) if maps else new

    def _replacement(self, func: PrimFunc, kind: str) -> Any:
        gv = self.replacements.get(id(func))
        if gv is None:
            gv = self.builder_.add_func(func.with_attr(_OPERATOR_NAME, kind), kind.replace(".", "_") + "_replacement")
            self.replacements[id(func)] = gv
        return gv

    @staticmethod
    def _transform(x: Expr, index_map: IndexMap | None, seps: tuple, in_seps: tuple) -> Expr:
        if index_map is None or (isinstance(x, Constant) and x.data.numpy().ndim == 0):
            return x
        return layout_transform(x, _fresh(index_map), axis_separators=seps, input_axis_separators=in_seps)

    def _outputs(self, new: Expr, maps: list, old_sinfo: Any, seps: Any, in_seps: Any) -> Expr:
        olds = [old_sinfo] if isinstance(old_sinfo, TensorStructInfo) else list(old_sinfo.fields)
        first = len(maps) - len(olds)
        if len(olds) == 1:
            return self._restore(new, maps[first], olds[0], _pick(seps, first), _pick(in_seps, first))
        new = self.builder_.emit(new)  # bound once, its outputs taken from the variable
        outs = [self._restore(self.builder_.normalize(TupleGetItem(new, i)), maps[first + i], olds[i],
                              _pick(seps, first + i), _pick(in_seps, first + i)) for i in range(len(olds))]
        return Tuple(outs)

    def _restore(self, x: Expr, index_map: IndexMap | None, old: TensorStructInfo, seps: tuple,
                 in_seps: tuple) -> Expr:
        """``x`` brought back to the layout (and shape) ``old`` of the replaced output."""
        if index_map is None or (isinstance(x, Constant) and x.data.numpy().ndim == 0):
            return x
        inverse, padding = index_map.non_surjective_inverse(list(old.shape_values))
        back = self._transform(x, inverse, seps, in_seps)
        if isinstance(padding, IntImm) and not padding.value:
            return back
        padded = self.builder_.normalize(back)
        return call_tir(self._remove_pad(list(old.shape_values), struct_info_of(padded).dtype), Tuple([padded]), old)

    def _remove_pad(self, shape: list, dtype: str) -> Any:
        gv = self.remove_pad.get(len(shape))
        if gv is None:
            padded = [Var(f"p{i}", d.dtype) for i, d in enumerate(shape)]
            kept = [Var(f"i{i}", d.dtype) for i, d in enumerate(shape)]
            data = te.placeholder(padded, dtype, "input")
            out = te.compute(kept, lambda *i: data(*i), name="output")
            func = te.create_prim_func([data, out]).with_attr(_OPERATOR_NAME, "remove_pad")
            func = PrimFunc(func.params, func.buffer_map, func.body, func.ret_type,
                            {k: v for k, v in func.attrs.items() if k != "global_symbol"})
            gv = self.remove_pad[len(shape)] = self.builder_.add_func(func, "remove_pad")
        return gv


def _mapped_sinfo(sinfo: Any, maps: list) -> Any:
    """The replacement's output struct info: each output's shape through its buffer's map."""
    if not maps:
        return sinfo
    if isinstance(sinfo, TensorStructInfo):
        return _map_tensor(sinfo, maps[-1])
    first = len(maps) - len(sinfo.fields)
    return TupleStructInfo([_map_tensor(f, maps[first + i]) for i, f in enumerate(sinfo.fields)])


def _map_tensor(sinfo: TensorStructInfo, index_map: IndexMap | None) -> TensorStructInfo:
    if index_map is None:
        return sinfo
    shape = [d if d.dtype == "int64" else IntImm("int64", d.value)
             for d in index_map.map_shape(list(sinfo.shape_values))]
    return TensorStructInfo(shape, sinfo.dtype, sinfo.vdevice)


@module_pass(opt_level=0, name="AlterOpImpl")
class AlterOpImpl:
    """``AlterOpImpl(op_impl_map, op_buffer_transforms, op_buffer_axis_separators=None,
    op_buffer_input_axis_separators=None)``: see the module docstring."""

    def __init__(self, op_impl_map: dict, op_buffer_transforms: dict, op_buffer_axis_separators: dict | None = None,
                 op_buffer_input_axis_separators: dict | None = None) -> None:
        self.args = (dict(op_impl_map), dict(op_buffer_transforms), dict(op_buffer_axis_separators or {}),
                     dict(op_buffer_input_axis_separators or {}))

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mutator = _AlterOpImpl(mod, *self.args)
        for gv, func in list(mod.functions.items()):
            if isinstance(func, Function):
                mutator.builder_.update_func(gv, mutator.visit_expr(func))
        return mutator.builder_.get()
