"""ConvertLayout: rewrite the operators of each dataflow block into desired layouts, e.g.
every ``conv2d`` NHWC with OHWI weights, and let the operators after them follow.

One forward walk over each dataflow block records every variable's current layout (see
:mod:`.infer_layout_utils` for how layouts are named).  For a call, the operator's layout
rule (``FRelaxInferLayout``, :mod:`.infer_layout_ops`) says which layouts its arguments must
come in; each argument not already in it is converted -- ``R.permute_dims`` when only whole
axes move, ``R.layout_transform`` when an axis is split into blocks (``NCHW4c``) -- and the
result's layout is recorded.  An operator without a rule gets its arguments back in their
original layouts, and so does every variable that leaves the block: outside, nothing changes.

    mod = relax.transform.ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"]})(mod)

``layout_cb(call)``, when given, returns the desired layouts for that one call instead.
"""

from __future__ import annotations

from typing import Any, Callable

from ...ir.module import IRModule
from ...ir.op import Op
from ...transform import PassContext, module_pass
from ..expr import (
    Call,
    DataflowBlock,
    DataflowVar,
    Expr,
    MatchCast,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    struct_info_of,
)
from ..expr_functor import ExprMutator
from ..op.layout import layout_transform
from ..op.manipulate import permute_dims
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from . import infer_layout_ops  # noqa: F401 - registers the operators' layout rules
from ._util import map_functions
from .infer_layout_utils import (
    UNKNOWN,
    forward_index_map,
    get_nlayout,
    has_unknown,
    initial_layout,
    initial_nlayout,
    layout_axes,
    transpose_like,
)

__all__ = ["ConvertLayout"]


def _is_nested_tensor(sinfo: StructInfo | None) -> bool:
    if isinstance(sinfo, TupleStructInfo):
        return all(_is_nested_tensor(f) for f in sinfo.fields)
    return isinstance(sinfo, TensorStructInfo)


class _LayoutConverter(ExprMutator):
    def __init__(self, mod: IRModule, desired: dict, layout_cb: Callable | None) -> None:
        super().__init__(mod)
        self.desired = {k: list(v) for k, v in desired.items()}
        self.layout_cb = layout_cb
        self.layouts: dict[Var, Any] = {}
        self.in_dataflow = False

    # -- converting one expression ---------------------------------------------------------------
    def convert(self, expr: Expr, to: Any) -> Expr:
        """``expr`` (its variables remapped) brought from its current layout to ``to``."""
        return self._convert_leaf(self._remapped(expr), get_nlayout(self.layouts, expr), to)

    def _remapped(self, expr: Expr) -> Expr:
        if isinstance(expr, Var):
            return self.var_remap_.get(expr, expr)
        if isinstance(expr, Tuple):
            fields = [self._remapped(f) for f in expr.fields]
            return expr if all(a is b for a, b in zip(fields, expr.fields)) else Tuple(fields)
        return expr

    def _convert_leaf(self, expr: Expr, src: Any, dst: Any) -> Expr:
        if isinstance(src, list) and isinstance(dst, list):
            fields = expr.fields if isinstance(expr, Tuple) else [TupleGetItem(expr, i) for i in range(len(src))]
            new = [self._convert_leaf(f, s, d) for f, s, d in zip(fields, src, dst)]
            return expr if all(a is b for a, b in zip(new, fields)) else Tuple(new)
        if src == dst or src == "":
            return expr
        if UNKNOWN in (src, dst):
            raise ValueError(f"ConvertLayout: cannot convert {expr!r} between layouts {src!r} and {dst!r} "
                             "when only one of them is known")
        sinfo = struct_info_of(expr)
        if not isinstance(sinfo, TensorStructInfo):
            raise ValueError(f"ConvertLayout: expected a tensor, got {expr!r}")
        if len(layout_axes(src)) == len(layout_axes(dst)):
            init = initial_layout(sinfo.ndim)
            return permute_dims(expr, [init.index(ch) for ch in transpose_like(init, src, dst)])
        return layout_transform(expr, forward_index_map(src, dst))

    def convert_args(self, args: list, to: list) -> list:
        return [self.convert(a, to[i]) if i < len(to) else a for i, a in enumerate(args)]

    def reemit(self, binding: VarBinding, value: Expr) -> None:
        var = binding.var
        if value is binding.value:
            self.builder_.emit_normalized(binding)
            return
        new_var = self.with_struct_info(var, value.struct_info)
        if new_var is not var:
            self.set_var_remap(var, new_var)
        self.builder_.emit_normalized(VarBinding(new_var, value))

    # -- blocks and bindings -----------------------------------------------------------------------
    def visit_dataflow_block_(self, block: DataflowBlock) -> Any:
        self.layouts, self.in_dataflow = {}, True
        try:
            return super().visit_dataflow_block_(block)
        finally:
            self.in_dataflow = False

    def visit_var_(self, op: Var) -> Any:
        # a use the rules do not cover: the variable goes back to its original layout
        return self.convert(op, initial_nlayout(op)) if self.in_dataflow else super().visit_var_(op)

    def visit_dataflow_var_(self, op: DataflowVar) -> Any:
        return self.visit_var_(op)

    def visit_binding(self, binding: Any) -> None:
        if not self.in_dataflow:
            return super().visit_binding(binding)
        if isinstance(binding, MatchCast):
            self._match_cast(binding)
        elif isinstance(binding.value, Call):
            self._call(binding, binding.value)
        elif isinstance(binding.value, Tuple):
            self._tuple(binding, binding.value)
        elif isinstance(binding.value, TupleGetItem):
            self._get_item(binding, binding.value)
        else:
            super().visit_binding(binding)
        self.layouts.setdefault(binding.var, initial_nlayout(binding.var))

    def _infer(self, call: Call) -> Any:
        rule = call.op.get_attr("FRelaxInferLayout") if isinstance(call.op, Op) else None
        if rule is None:
            return None
        if any(_is_nested_tensor(struct_info_of(a)) and has_unknown(get_nlayout(self.layouts, a))
               for a in call.args):
            return None
        desired = self.desired if self.layout_cb is None else {k: list(v) for k, v in self.layout_cb(call).items()}
        return rule(call, desired, self.layouts)

    def _call(self, binding: VarBinding, call: Call) -> None:
        res = self._infer(call)
        var = binding.var
        is_df = isinstance(var, DataflowVar)
        if res is None or (not _is_nested_tensor(var.struct_info) and not is_df):
            args = self.convert_args(call.args, [initial_nlayout(a) for a in call.args])
            self.reemit(binding, self.builder_.normalize(Call(call.op, args, call.attrs, call.sinfo_args)))
            self.layouts[var] = initial_nlayout(var)
            return
        args = self.convert_args(call.args, res.input_layouts)
        for i, arg in res.new_args.items():
            args[i] = arg
        new = self.builder_.normalize(Call(call.op, args, res.new_attrs, call.sinfo_args))
        out = res.output_layouts[0]
        if is_df:
            self.reemit(binding, new)
            self.layouts[var] = out
            return
        if out != initial_nlayout(var):  # leaving the block: back to the original layout
            tmp = self.builder_.emit(new)
            self.layouts[tmp] = out
            new = self.builder_.normalize(self.convert(tmp, initial_nlayout(var)))
        self.reemit(binding, new)
        self.layouts[var] = initial_nlayout(var)

    def _tuple(self, binding: VarBinding, tup: Tuple) -> None:
        is_df = isinstance(binding.var, DataflowVar)
        layouts = [get_nlayout(self.layouts, f) if is_df else initial_nlayout(f) for f in tup.fields]
        fields = self.convert_args(list(tup.fields), layouts)
        self.reemit(binding, self.builder_.normalize(Tuple(fields)))
        if _is_nested_tensor(binding.var.struct_info):
            self.layouts[binding.var] = layouts

    def _get_item(self, binding: VarBinding, item: TupleGetItem) -> None:
        is_df = isinstance(binding.var, DataflowVar)
        layout = get_nlayout(self.layouts, item.tuple_value) if is_df else initial_nlayout(item.tuple_value)
        tup = self.convert(item.tuple_value, layout)
        self.reemit(binding, self.builder_.normalize(TupleGetItem(tup, item.index)))
        if isinstance(layout, list):
            self.layouts[binding.var] = layout[item.index]

    def _match_cast(self, binding: MatchCast) -> None:
        if not isinstance(binding.var, DataflowVar):
            return super().visit_binding(binding)
        src = initial_nlayout(binding.value)
        cur = get_nlayout(self.layouts, binding.value)
        sinfo = _permuted_sinfo(binding.struct_info, src, cur)
        if sinfo is binding.struct_info:
            return super().visit_binding(binding)
        new_var = self.builder_.match_cast(self.convert(binding.value, cur), sinfo)
        self.layouts[binding.var] = cur
        self.set_var_remap(binding.var, new_var)


def _permuted_sinfo(sinfo: StructInfo, src: Any, dst: Any) -> StructInfo:
    """A match_cast's struct info with its shape reordered from layout ``src`` to ``dst``."""
    if isinstance(src, list):
        fields = [_permuted_sinfo(f, s, d) for f, s, d in zip(sinfo.fields, src, dst)]
        return sinfo if all(a is b for a, b in zip(fields, sinfo.fields)) else TupleStructInfo(fields)
    if src == dst:
        return sinfo
    if UNKNOWN in (src, dst) or not isinstance(sinfo, TensorStructInfo):
        raise ValueError(f"ConvertLayout: cannot move match_cast struct info between {src!r} and {dst!r}")
    if sinfo.shape_values is None:
        return sinfo
    vals = list(sinfo.shape_values)
    return TensorStructInfo([vals[src.index(ch)] for ch in dst], sinfo.dtype, sinfo.vdevice)


@module_pass(opt_level=0, name="ConvertLayout")
class ConvertLayout:
    """``ConvertLayout(desired_layouts, layout_cb=None)``: ``desired_layouts`` maps an operator
    name to its layouts (``{"relax.nn.conv2d": ["NHWC", "OHWI"]}``: data, kernel, and
    optionally output); ``layout_cb(call)`` returns such a map per call."""

    def __init__(self, desired_layouts: dict, layout_cb: Callable | None = None) -> None:
        self.desired_layouts = dict(desired_layouts)
        self.layout_cb = layout_cb

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        def rewrite(func: Any, m: IRModule) -> Any:
            return _LayoutConverter(m, self.desired_layouts, self.layout_cb).visit_expr(func)
        return map_functions(mod, rewrite)
