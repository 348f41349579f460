"""LegalizeOps: every high-level Relax operator call becomes ``R.call_tir`` of a PrimFunc
built from TOPI.

Each operator carries an ``FLegalize`` attribute, a function ``(bb, call) -> Expr`` that
usually is one ``bb.call_te(topi.<op>, *call.args, **attrs)``.  The pass rewrites every
Relax function of the module with an ``ExprMutator``; its BlockBuilder collects the
PrimFuncs, and ``BlockBuilder.add_func`` reuses a structurally equal PrimFunc, so two
``R.add`` calls of the same shapes share one kernel.

A call is left as it is when its operator has no ``FLegalize`` (as in TVM: later passes
or the VM may know it, and the build reports it if nobody does), or when an argument or
the result has no written-out shape (nothing to write a kernel for yet; an unknown dtype
is the legalization's to refuse).  Symbolic
dimensions stay ``tir.Var``s: the PrimFunc is generic over them, and a variable it cannot
read off its input buffers is passed as a trailing scalar argument (``tir_vars``).

    mod = relax.transform.LegalizeOps()(mod)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .... import te, topi
from ....ir.module import IRModule
from ....ir.op import Op
from ....ir.structural import structural_equal, structural_hash
from ....tir.expr import FloatImm, IntImm, PrimExpr
from ....tir.expr import Var as TirVar
from ....tir.function import PrimFunc
from ....tir.functor import post_order_visit
from ....tir.op_table import ELEMENTWISE
from ....transform import PassContext, module_pass
from ...analysis.struct_info_analysis import is_base_of
from ...block_builder import BlockBuilder
from ...expr import Call, Constant, Expr, Function, PrimValue, ShapeExpr, Tuple, TupleGetItem, Var, struct_info_of
from ...expr_functor import ExprMutator, ExprVisitor
from ...op.base import call_tir
from ...struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from .._util import rewrite_with_builder
from . import create, grad, manipulate, nn, qdq, sorting, statistical  # noqa: F401 - register their rules
from .common import LegalizeFunc, _tensors_of, _try_convert_to_scalar_const, register_legalize

__all__ = ["LegalizeOps", "register_legalize", "legalize_call", "high_level_ops"]

def _name(call: Call) -> str:
    """The PrimFunc name TVM would give: the op name without ``relax.`` / ``nn.``."""
    return call.op.name.split(".")[-1]


def _te(fn: Callable, name: str | None = None, **attrs: Any) -> LegalizeFunc:
    """A legalization that is one ``call_te`` of ``fn`` on the call's arguments, the kernel
    named ``name`` (default: after the op)."""
    def legalize(bb: BlockBuilder, call: Call) -> Expr:
        return bb.call_te(fn, *call.args, primfunc_name_hint=name or _name(call), **attrs)
    return legalize


def _out_shape(call: Call) -> list[PrimExpr]:
    return list(call.struct_info.shape_values)


def _out_dtype(call: Call) -> str:
    return call.struct_info.dtype


# -- element-wise ------------------------------------------------------------------------------

def _binary(fn: Callable) -> LegalizeFunc:
    """``fn(a, b)`` with a scalar constant operand folded in (the second one first)."""
    def legalize(bb: BlockBuilder, call: Call) -> Expr:
        lhs, rhs = call.args
        rhs = _try_convert_to_scalar_const(rhs)
        if isinstance(rhs, Expr):
            lhs = _try_convert_to_scalar_const(lhs)
        if not isinstance(lhs, Expr) and not isinstance(rhs, Expr):
            lhs = call.args[0]
        return bb.call_te(fn, lhs, rhs, primfunc_name_hint=_name(call))
    return legalize


# every row of the operator table (minitvm.tir.op_table): binary ops fold a scalar constant operand;
# TVM names the kernels of unary math ops ``tir_<op>`` (``tir_exp``), the others keep TOPI's name
def _integers_only(op_name: str, legalize: LegalizeFunc) -> LegalizeFunc:
    """Refuse a float operand here, where TVM does: its struct info takes ``bitwise_or`` of two
    float tensors (the torch importer's tests write such modules), lowering it cannot."""
    def checked(bb: BlockBuilder, call: Call) -> Expr:
        dtype = call.struct_info.dtype
        if not (dtype == "bool" or dtype.startswith(("int", "uint"))):
            raise TypeError(f"LegalizeOps: {op_name} needs integer or bool tensors, got dtype {dtype}")
        return legalize(bb, call)
    return checked


for _row in ELEMENTWISE:
    _fn = getattr(topi, _row.name)
    if _row.arity == 2:
        _legalize = _binary(_fn)
    else:
        _legalize = _te(_fn, name=f"tir_{_row.name}" if _row.kernel == "tir" else None)
    if _row.dtypes == "int_or_bool":
        _legalize = _integers_only(_row.relax_name, _legalize)
    register_legalize(_row.relax_name, _legalize)

register_legalize("relax.where", _te(topi.where))


@register_legalize("relax.ewise_fma")
def _ewise_fma(bb: BlockBuilder, call: Call) -> Expr:
    def fma(a: te.Tensor, b: te.Tensor, c: te.Tensor) -> te.Tensor:
        return te.compute(a.shape, lambda *i: a(*i) * b(*i) + c(*i), name="T_ewise_fma")
    return bb.call_te(fma, *call.args, primfunc_name_hint="ewise_fma")


@register_legalize("relax.clip")
def _clip(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.clip, call.args[0], call.attrs["min"], call.attrs["max"], primfunc_name_hint="tir_clip")


# -- linear algebra ----------------------------------------------------------------------------

@register_legalize("relax.matmul")
def _matmul(bb: BlockBuilder, call: Call) -> Expr:
    for name, arg in zip(("first", "second"), call.args):
        sinfo = struct_info_of(arg)
        assert not sinfo.is_unknown_dtype, (
            f"To legalize R.matmul, the dtype of both arguments must be known, but the {name} argument "
            f"{arg} has struct info {sinfo}")
    return bb.call_te(topi.nn.matmul, call.args[0], call.args[1], out_dtype=_out_dtype(call),
                      primfunc_name_hint="matmul")


# -- shapes and indexing -----------------------------------------------------------------------

@register_legalize("relax.permute_dims")
def _permute_dims(bb: BlockBuilder, call: Call) -> Expr:
    axes = call.attrs["axes"]
    return bb.call_te(topi.transpose, call.args[0], None if axes is None else list(axes),
                      primfunc_name_hint="transpose")


@register_legalize("relax.reshape")
def _reshape(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.reshape, call.args[0], _out_shape(call), primfunc_name_hint="reshape")


@register_legalize("relax.flatten")
def _flatten(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.reshape, call.args[0], _out_shape(call), primfunc_name_hint="reshape")


@register_legalize("relax.broadcast_to")
def _broadcast_to(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.broadcast_to, call.args[0], _out_shape(call), primfunc_name_hint="broadcast_to")


@register_legalize("relax.expand_dims")
def _expand_dims(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.expand_dims, call.args[0], list(call.attrs["axis"]), primfunc_name_hint="expand_dims")


@register_legalize("relax.squeeze")
def _squeeze(bb: BlockBuilder, call: Call) -> Expr:
    axis = call.attrs["axis"]
    vals = struct_info_of(call.args[0]).shape_values
    if axis is None:  # the dimensions the struct info says are 1
        axis = [k for k, d in enumerate(vals) if isinstance(d, IntImm) and d.value == 1]
    elif vals is not None:  # a listed axis of a constant length other than 1 stays (TVM, torch)
        axis = [a for a in axis if not (isinstance(vals[a], IntImm) and vals[a].value != 1)]
    return bb.call_te(topi.squeeze, call.args[0], list(axis), primfunc_name_hint="squeeze")


@register_legalize("relax.concat")
def _concat(bb: BlockBuilder, call: Call) -> Expr:
    def concat(*ts: te.Tensor, axis: int) -> te.Tensor:
        return topi.concatenate(ts, axis)
    axis = call.attrs["axis"]
    return bb.call_te(concat, *_tensors_of(bb, call.args[0]), axis=0 if axis is None else axis,
                      primfunc_name_hint="concatenate")


@register_legalize("relax.stack")
def _stack(bb: BlockBuilder, call: Call) -> Expr:
    def stack(*ts: te.Tensor, axis: int) -> te.Tensor:
        return topi.concatenate([topi.expand_dims(t, axis) for t in ts], axis)
    axis = call.attrs["axis"]
    ndim = struct_info_of(call).ndim
    return bb.call_te(stack, *_tensors_of(bb, call.args[0]), axis=axis % ndim, primfunc_name_hint="stack")


@register_legalize("relax.split")
def _split(bb: BlockBuilder, call: Call) -> Expr:
    spec = call.attrs["indices_or_sections"]
    out = bb.call_te(topi.split, call.args[0], spec if isinstance(spec, int) else list(spec),
                     call.attrs["axis"], primfunc_name_hint="split")
    if len(out.sinfo_args) == 1 and isinstance(out.sinfo_args[0], TensorStructInfo):
        return Tuple([bb.emit(out)])  # one piece: still a tuple, as the op says
    return out


@register_legalize("relax.take")
def _take(bb: BlockBuilder, call: Call) -> Expr:
    return bb.call_te(topi.take, call.args[0], call.args[1], call.attrs["axis"], mode=call.attrs.get("mode", "fast"),
                      primfunc_name_hint="take")


@register_legalize("relax.strided_slice")
def _strided_slice(bb: BlockBuilder, call: Call) -> Expr:
    a = call.attrs
    return bb.call_te(topi.strided_slice, call.args[0], list(a["begin"]), list(a["end"]),
                      list(a["strides"]), list(a["axes"]), assume_inbound=a.get("assume_inbound", False),
                      primfunc_name_hint="strided_slice")


# -- reductions and search ---------------------------------------------------------------------

for _op_name, _fn in [("sum", topi.sum), ("mean", topi.mean), ("max", topi.max), ("min", topi.min),
                      ("prod", topi.prod), ("argmax", topi.argmax), ("argmin", topi.argmin)]:
    def _make(fn: Callable) -> LegalizeFunc:
        def legalize(bb: BlockBuilder, call: Call) -> Expr:
            axis = call.attrs["axis"]
            return bb.call_te(fn, call.args[0], None if axis is None else axis,
                              call.attrs["keepdims"], primfunc_name_hint=_name(call))
        return legalize
    register_legalize(f"relax.{_op_name}", _make(_fn))


# -- the pass ------------------------------------------------------------------------------------

def _fully_known(sinfo: Any) -> bool:
    """A tensor (or tuple of tensors) with a known shape; other values pass.  As in TVM the
    shape must be written out (one held by a variable is not known here), and the dtype is
    the legalization's business (R.matmul asks for it with a clear message)."""
    if isinstance(sinfo, TensorStructInfo):
        return isinstance(sinfo.shape, ShapeExpr)
    if isinstance(sinfo, TupleStructInfo):
        return all(_fully_known(f) for f in sinfo.fields)
    return True


def legalize_call(bb: BlockBuilder, call: Call, custom: dict[str, LegalizeFunc] | None = None) -> Expr:
    """``call`` legalized through ``bb`` when its op has a legalization and its shapes are
    known, else ``call`` itself."""
    if not isinstance(call.op, Op):
        return call
    fn = (custom or {}).get(call.op.name) or call.op.get_attr("FLegalize")
    if fn is None:
        return call
    # a data-dependent op (FDataDependent, e.g. dynamic_strided_slice) has an output shape
    # known only at run time: its legalization computes it, so only its inputs need shapes
    output_known = call.op.get_attr("FDataDependent") or _fully_known(call.struct_info)
    # TVM's RequiresArgumentShapes=False (relax.inspect.*): legalized whatever is known
    needs_shapes = call.op.get_attr("RequiresArgumentShapes") is not False
    if needs_shapes and (not all(_fully_known(struct_info_of(a)) for a in call.args) or not output_known):
        return call
    return _keep_struct_info(fn(bb, call), call.struct_info)


def _keep_struct_info(new: Expr, sinfo: StructInfo) -> Expr:
    """A ``call_tir`` whose output struct info TOPI wrote differently (``h + 2 - 3 + 1``
    for ``h``) but provably equal gets the op's own, so the bindings keep their types."""
    if not (isinstance(new, Call) and isinstance(new.op, Op) and new.op.name == "relax.call_tir"):
        return new
    out = new.sinfo_args[0]
    if structural_equal(out, sinfo) or not (is_base_of(out, sinfo) and is_base_of(sinfo, out)):
        return new
    return Call(new.op, new.args, new.attrs, [sinfo])


class _Legalizer(ExprMutator):
    def __init__(self, mod: IRModule, custom: dict[str, LegalizeFunc] | None):
        super().__init__(mod)
        self.custom = custom
        #: identical calls (a model's repeated layers) are legalized once: see _memo_key
        self.memo: dict[int, list[tuple[Any, Any]]] = {}

    def visit_call_(self, call: Call) -> Expr:
        call = self.visit_expr_post_order(call)
        if not isinstance(call, Call):
            return call
        signature = _memo_signature(call, self.custom)
        if signature is None:
            return legalize_call(self.builder_, call, self.custom)
        key = structural_hash(signature)
        for seen, template in self.memo.get(key, ()):
            if structural_equal(seen, signature):
                return _from_template(template, call)
        block = self.builder_._blocks[-1].bindings if self.builder_._blocks else None
        emitted = len(block) if block is not None else 0
        new = legalize_call(self.builder_, call, self.custom)
        template = _template(new, call)
        if template is not None and (block is None or len(block) == emitted):
            self.memo.setdefault(key, []).append((signature, template))
        return new


def _static(sinfo: Any) -> bool:
    """A tensor (or tuple of them) whose shape is all numbers: nothing symbolic to rename."""
    if isinstance(sinfo, TensorStructInfo):
        return sinfo.static_shape is not None
    if isinstance(sinfo, TupleStructInfo):
        return all(_static(f) for f in sinfo.fields)
    return False


def _memo_signature(call: Call, custom: dict[str, LegalizeFunc] | None) -> tuple | None:
    """What a legalization may depend on, as a structurally comparable tuple: the op, its
    attributes, its sinfo_args, each argument's struct info (variables and constants with static
    shapes; a 0-d constant also by its bytes, which a rule may fold into the kernel) or value
    (shape and prim literals), and which arguments are the same object.  None when the call is
    not one to reuse (a symbolic shape, a tuple, anything else).  A model's weights are
    constants: each layer's ``add(x, bias)`` differs from the next only in the bias's data,
    which the kernel takes as an argument.  (The registered rules read a constant's data only
    to fold a 0-d one; a custom rule may read more, so there constants are not reused.)"""
    if not isinstance(call.op, Op) or not _static(call.struct_info):
        return None
    constants_reused = not (custom and call.op.name in custom)
    parts: list[Any] = []
    first: dict[int, int] = {}
    for i, a in enumerate(call.args):
        if isinstance(a, Var) and _static(a.struct_info):
            parts.append(("var", first.setdefault(id(a), i), a.struct_info))
        elif isinstance(a, Constant) and constants_reused and _static(a.struct_info):
            scalar = np.asarray(a.data).tobytes() if not a.data.shape else None
            parts.append(("const", first.setdefault(id(a), i), a.struct_info, scalar))
        elif isinstance(a, (ShapeExpr, PrimValue)) and not _free_tir_vars(a):
            parts.append(("value", a))
        else:
            return None
    return (call.op.name, call.attrs, tuple(call.sinfo_args), tuple(parts))


def _free_tir_vars(e: Any) -> bool:
    values = e.values if isinstance(e, ShapeExpr) else [e.value]
    return not all(isinstance(v, (IntImm, FloatImm)) for v in values)


def _template(new: Any, call: Call) -> tuple | None:
    """A legalization that is one ``call_tir`` of a kernel on some of ``call``'s variables, as
    (the call, the argument index of each field) to rebuild for an identical call; else None."""
    if not (isinstance(new, Call) and isinstance(new.op, Op) and new.op.name == "relax.call_tir"
            and isinstance(new.args[1], Tuple)):
        return None
    index = []
    for field in new.args[1].fields:
        where = [i for i, a in enumerate(call.args) if a is field]
        if not where:
            return None
        index.append(where[0])
    if len(new.args) > 2 and not (isinstance(new.args[2], ShapeExpr) and not _free_tir_vars(new.args[2])):
        return None
    return new, tuple(index)


def _from_template(template: tuple, call: Call) -> Call:
    new, index = template
    fields = Tuple([call.args[i] for i in index])
    return Call(new.op, [new.args[0], fields, *new.args[2:]], new.attrs, new.sinfo_args)


@module_pass(opt_level=0, name="LegalizeOps")
class LegalizeOps:
    """Replace Relax operator calls by ``call_tir`` of TOPI-generated PrimFuncs.

    ``customize_legalize_map`` maps op names to legalization functions ``(bb, call) ->
    Expr`` used instead of the registered ``FLegalize``.  Calls of ops without a
    legalization, or whose shapes are unknown, are kept unchanged.
    """

    def __init__(self, customize_legalize_map: dict[str, LegalizeFunc] | None = None,
                 enable_warning: bool = False):
        self.custom = dict(customize_legalize_map or {})
        self.enable_warning = enable_warning

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out, _ = rewrite_with_builder(mod, _Legalizer(mod, self.custom))
        if self.enable_warning:
            import warnings

            left = high_level_ops(out)
            if left:
                warnings.warn(f"LegalizeOps left these operators as they were: {', '.join(left)}", stacklevel=2)
        return out


#: operators the VM lowering handles itself (everything else needs LegalizeOps)
_LOWERED_BY_VM = frozenset({"relax.call_tir", "relax.call_tir_inplace", "relax.call_dps_packed",
                            "relax.call_pure_packed", "relax.builtin.alloc_tensor", "relax.memory.alloc_storage",
                            "relax.memory.alloc_tensor", "relax.print", "relax.assert_op",
                            "relax.call_py_func", "relax.call_builtin_with_ctx", "relax.null_value",
                            "relax.call_inplace_packed"})


class _OpCollector(ExprVisitor):
    def __init__(self) -> None:
        self.ops: dict[str, None] = {}

    def visit_call_(self, op: Call) -> None:
        if isinstance(op.op, Op) and op.op.name not in _LOWERED_BY_VM:
            self.ops.setdefault(op.op.name)
        super().visit_call_(op)


def high_level_ops(mod: IRModule) -> list[str]:
    """Names of the operators in ``mod`` that only LegalizeOps can lower, in order of use."""
    c = _OpCollector()
    for _, func in mod.items():
        if isinstance(func, Function):
            c.visit_expr(func)
    return list(c.ops)
