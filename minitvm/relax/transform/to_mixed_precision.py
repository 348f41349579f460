"""ToMixedPrecision: float32 dataflow computed in float16 where it is safe (TVM's
``relax.transform.ToMixedPrecision``).

``ToMixedPrecision(out_dtype="float32", fp16_input_names=None)``.  Each operator has a policy
(:mod:`minitvm.relax.op._op_mixed_precision`): "always" operators (matmul, convolutions) read
float16 inputs and accumulate in ``out_dtype``; "follow" operators run in float16 when every
input is float16 already or a constant float16 can hold; "never" operators stay float32.
A first walk, backwards over each dataflow block, decides which variables are only ever read
as float16; the second rewrites the block, casting (``R.astype``) where a value's producer
and its readers disagree.  A dataflow block's outputs keep their dtypes; parameters named in
``fp16_input_names`` become float16 parameters.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...ir.module import IRModule
from ...transform import PassContext, module_pass
from ..expr import (
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..expr_functor import ExprMutator
from ..op._op_mixed_precision import ALWAYS, FOLLOW, NEVER, policy
from ..op.datatype import astype
from ..struct_info import TensorStructInfo, TupleStructInfo
from ._util import map_functions, unbound_item

__all__ = ["ToMixedPrecision"]

_FP16, _FP32, _UNKNOWN = "float16", "float32", "float0"  # float0: nothing required yet

# A nested dtype ("ntype"): a dtype string for a tensor, a list of ntypes for a tuple.


def _ntype(sinfo: Any, dtype: str | None = None) -> Any:
    if isinstance(sinfo, TupleStructInfo):
        return [_ntype(f, dtype) for f in sinfo.fields]
    if dtype is not None:
        return dtype
    return str(sinfo.dtype) if isinstance(sinfo, TensorStructInfo) and sinfo.dtype else ""


def _nested_tensor(expr: Any) -> bool:
    def check(sinfo: Any) -> bool:
        if isinstance(sinfo, TupleStructInfo):
            return all(check(f) for f in sinfo.fields)
        return isinstance(sinfo, TensorStructInfo)
    return check(getattr(expr, "struct_info", None))


def _bits(dtype: str) -> int:
    m = re.search(r"(\d+)$", dtype)
    return int(m.group(1)) if m else 0


def _combine(a: Any, b: Any, leaf: Any) -> Any:
    if isinstance(a, list):
        return [_combine(x, y, leaf) for x, y in zip(a, b)]
    return leaf(a, b)


def _merge(a: Any, b: Any) -> Any:
    """The stricter requirement: the wider float wins (float32 over float16 over unknown)."""
    return _combine(a, b, lambda x, y: y if x == "" else x if y == "" else (x if _bits(x) > _bits(y) else y))


class _Decisions:
    """Walks each dataflow block backwards: what each variable's readers require of it."""

    def __init__(self) -> None:
        self.required: dict[Var, Any] = {}

    def _update(self, var: Var, ntype: Any) -> None:
        old = self.required.get(var)
        self.required[var] = ntype if old is None else _merge(old, ntype)

    def _tracked(self, var: Var) -> Any:
        if var not in self.required:
            self.required[var] = _ntype(var.struct_info, _UNKNOWN)
        return self.required[var]

    def _require(self, arg: Expr, ntype: Any) -> None:
        if isinstance(arg, Tuple) and isinstance(ntype, list):
            for f, t in zip(arg.fields, ntype):
                self._require(f, t)
        elif isinstance(arg, Var):
            self._update(arg, ntype)
        elif not isinstance(arg, Constant):
            raise TypeError(f"ToMixedPrecision: unsupported argument {type(arg).__name__}")

    def _require_all(self, args: Any, dtype: str) -> None:
        for a in args:
            if _nested_tensor(a):
                self._require(a, _ntype(a.struct_info, dtype))

    def _read_fp32(self, expr: Any) -> None:
        """A value read by something without a policy: its variables are float32."""
        if isinstance(expr, Var):
            if _nested_tensor(expr):
                self._update(expr, _ntype(expr.struct_info, _FP32))
        elif isinstance(expr, Call):
            for a in expr.args:
                self._read_fp32(a)
        elif isinstance(expr, Tuple):
            for f in expr.fields:
                self._read_fp32(f)
        elif isinstance(expr, TupleGetItem):
            self._read_fp32(expr.tuple_value)
        elif isinstance(expr, SeqExpr):
            self.visit_seq(expr)

    def visit_seq(self, seq: SeqExpr) -> None:
        self._read_fp32(seq.body)
        for block in reversed(seq.blocks):
            if isinstance(block, DataflowBlock):
                for b in reversed(block.bindings):
                    self._binding(b)

    def _binding(self, b: Any) -> None:
        value = b.value
        if not isinstance(b, VarBinding):
            self._read_fp32(value)
        elif isinstance(value, Call) and policy(value.op) != -1:
            self._require_all(value.args, _FP16 if policy(value.op) == ALWAYS else _FP32)
        elif isinstance(value, Tuple):
            self._require_all_fields(value, self._tracked(b.var))
        elif isinstance(value, TupleGetItem):
            need = self._tracked(b.var)
            fields = value.tuple_value.struct_info.fields
            self._require(value.tuple_value, [need if i == value.index else _ntype(f, _UNKNOWN)
                                              for i, f in enumerate(fields)])
        else:
            self._read_fp32(value)

    def _require_all_fields(self, tup: Tuple, ntype: Any) -> None:
        for f, t in zip(tup.fields, ntype):
            self._require(f, t)


class _Rewriter(ExprMutator):
    def __init__(self, required: dict, out_dtype: str, fp16_inputs: set[str], mod: IRModule | None) -> None:
        super().__init__(mod)
        self.required, self.out_dtype, self.fp16_inputs = required, out_dtype, fp16_inputs
        self.params: list[Var] = []

    def _in_dataflow(self) -> bool:
        blocks = self.builder_._blocks
        return bool(blocks) and blocks[-1].is_dataflow

    # -- casts ------------------------------------------------------------------------------
    def _rewrite(self, expr: Expr, to: Any) -> Expr:
        """``expr`` cast to the nested dtype ``to`` (float16/float32 tensors only)."""
        sinfo = expr.struct_info
        if isinstance(sinfo, TupleStructInfo):
            fields = list(expr.fields) if isinstance(expr, Tuple) else \
                [unbound_item(expr, i) for i in range(len(sinfo.fields))]
            new = [self._rewrite(f, t) for f, t in zip(fields, to)]
            # unbound items: nothing is emitted unless a field is really cast
            return expr if all(a is b for a, b in zip(new, fields)) else Tuple(new)
        have = _ntype(sinfo)
        if to == have or have in ("",) or have not in (_FP16, _FP32):
            return expr
        return astype(expr, to)

    def _remapped(self, var: Var) -> Var:
        if var in self.var_remap_:
            return self.var_remap_[var]
        sinfo = var.struct_info
        if var.name_hint in self.fp16_inputs and isinstance(sinfo, TensorStructInfo):
            new = Var(var.name_hint, TensorStructInfo(sinfo.shape, _FP16, sinfo.vdevice))
            self.var_remap_[var] = new
            return new
        return var

    def _remap_args(self, args: Any) -> list:
        def sub(e: Any) -> Any:
            if isinstance(e, Var):
                return self.var_remap_.get(e, e)
            if isinstance(e, Tuple):
                fields = [sub(f) for f in e.fields]
                return e if all(a is b for a, b in zip(fields, e.fields)) else Tuple(fields)
            return e
        return [sub(a) for a in args]

    def _cast_if_fp16_only(self, var: Var) -> None:
        cur = self._remapped(var)
        need = self.required.get(var)
        if need is None:
            return
        to = _combine(_ntype(cur.struct_info), need, lambda have, req: req if req == _FP16 else have)
        new = self._rewrite(cur, to)
        if new is not cur:
            self.var_remap_[var] = self.builder_.emit(new)

    def _fp16_castable(self, args: Any) -> bool:
        for a in args:
            if not _nested_tensor(a):
                continue
            sinfo = a.struct_info
            if isinstance(sinfo, TensorStructInfo) and str(sinfo.dtype) == _FP16:
                continue
            if isinstance(a, Constant) and _in_fp16_range(a):
                continue
            if isinstance(a, Tuple) and self._fp16_castable(a.fields):
                continue
            return False
        return True

    # -- the ExprMutator hooks ---------------------------------------------------------------
    def visit_var_def(self, var: Var) -> Var:
        return self._remapped(var)

    def visit_var_(self, op: Var) -> Any:
        if not self._in_dataflow():
            return super().visit_var_(op)
        if op in self.var_remap_:
            return self._rewrite(self.var_remap_[op], _ntype(op.struct_info))
        return op

    visit_dataflow_var_ = visit_var_

    def visit_function_(self, op: Function) -> Any:
        self.params = list(op.params)
        return super().visit_function_(op)

    def visit_dataflow_block_(self, block: DataflowBlock) -> Any:
        self.builder_.begin_dataflow_block()
        try:
            for p in self.params:
                self._cast_if_fp16_only(p)
            for b in block.bindings:
                self.visit_binding(b)
                self._cast_if_fp16_only(b.var)
            for p in self.params:
                self.var_remap_.pop(p, None)
        finally:
            new = self.builder_.end_block()
        return new

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = binding.value
        if not self._in_dataflow():
            return super().visit_var_binding_(binding)
        if isinstance(value, Call) and policy(value.op) != -1:
            if value.op.name == "relax.wrap_param":  # the parameter itself: casts follow it
                return self._reemit(binding, value.args[0])
            return self._reemit(binding, self._call(binding, value))
        if isinstance(value, (Tuple, TupleGetItem)):
            if isinstance(value, Tuple):
                new = self.builder_.normalize(Tuple(self._remap_args(value.fields)))
            else:
                new = TupleGetItem(self._remap_args([value.tuple_value])[0], value.index)
            if not isinstance(binding.var, DataflowVar):
                new = self._rewrite(self.builder_.normalize(new), _ntype(binding.var.struct_info))
            return self._reemit(binding, self.builder_.normalize(new))
        return super().visit_var_binding_(binding)

    def _call(self, binding: VarBinding, call: Call) -> Expr:
        kind = policy(call.op)
        args = self._remap_args(call.args)
        new = Call(call.op, args, call.attrs, call.sinfo_args)
        dtype = None
        if kind == ALWAYS:
            dtype = _FP16
            new = call.op.get_attr("FInferMixedPrecision")(new, self.out_dtype)
        elif kind == FOLLOW:
            dtype = _FP16 if self._fp16_castable(new.args) else _FP32
        elif kind == NEVER and any(a is not b for a, b in zip(args, call.args)):
            new = Call(call.op, [self._rewrite(a, _ntype(o.struct_info)) for a, o in zip(args, call.args)],
                       call.attrs, call.sinfo_args)
        if dtype is None:
            return self.builder_.normalize(new)
        cast = [self._rewrite(a, _ntype(a.struct_info, dtype)) if _nested_tensor(a) else a for a in new.args]
        value = self.builder_.normalize(Call(new.op, cast, new.attrs, new.sinfo_args))
        if not isinstance(binding.var, DataflowVar):
            value = self._rewrite(value, _ntype(binding.var.struct_info))
        elif kind == ALWAYS:
            value = self._rewrite(value, _ntype(value.struct_info, dtype))
        return self.builder_.normalize(value)

    def _reemit(self, binding: VarBinding, value: Expr) -> None:
        var = self.visit_var_def(binding.var)
        if var is binding.var and value is binding.value:
            self.builder_.emit_normalized(binding)
            return
        new_var = self.with_struct_info(var, value.struct_info)
        if new_var is not var:
            self.var_remap_[binding.var] = new_var
        self.builder_.emit_normalized(VarBinding(new_var, value))


def _in_fp16_range(const: Constant) -> bool:
    data = const.data.numpy() if hasattr(const.data, "numpy") else np.asarray(const.data)
    if data.dtype == np.float16:
        return True
    if data.dtype.kind not in "fi":
        return False
    return bool(np.all(np.abs(data.astype("float64")) <= 65504))


def to_mixed_precision(func: Function, out_dtype: str, fp16_input_names: Any, mod: IRModule | None) -> Function:
    decisions = _Decisions()
    if isinstance(func.body, SeqExpr):
        decisions.visit_seq(func.body)
    return _Rewriter(decisions.required, out_dtype, set(fp16_input_names or ()), mod).visit_expr(func)


@module_pass(opt_level=0, name="ToMixedPrecision")
class ToMixedPrecision:
    """``ToMixedPrecision(out_dtype="float32", fp16_input_names=None)``: see the module docstring."""

    def __init__(self, out_dtype: str = "float32", fp16_input_names: Any = None) -> None:
        self.out_dtype, self.fp16_input_names = str(out_dtype), fp16_input_names

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda f, m: to_mixed_precision(f, self.out_dtype, self.fp16_input_names, m))
