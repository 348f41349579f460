"""VMShapeLower: symbolic dimensions live in the VM's shape heap.

A function that mentions symbolic dimensions (``n`` in ``x: R.Tensor((n, 784))``) gets a
heap of one integer slot per dimension variable, allocated first thing::

    shape_heap = vm.builtin.alloc_shape_heap(R.prim_value(1))
    _ = vm.builtin.match_shape(x, shape_heap, 2, MATCH_STORE, 0, MATCH_IMM, 784, "main: x")

``match_shape`` stores ``n`` at its first sight (slot 0) and checks it everywhere else.
Then every shape that mentions ``n`` is built at run time from the heap
(``vm.builtin.make_shape(shape_heap, 2, MAKE_LOAD, 0, MAKE_IMM, 128)``), a scalar ``n``
passed to a kernel (``R.prim_value(n)``) is read back out of such a shape, and
``R.match_cast`` becomes checks (``check_tensor_info`` + ``match_shape``) that also define
the new variables it introduces.

Dimensions that are expressions of variables (``n * 2``) are not supported yet: the pass
says so, naming the expression.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...runtime.vm import builtins as B
from ...tir.expr import IntImm, PrimExpr
from ...tir.expr import Var as TirVar
from ...transform import PassContext, module_pass
from ..expr import (
    BindingBlock,
    Call,
    ExternFunc,
    Function,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..struct_info import (
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    dim_text,
)
from ._util import KernelCallMutator, map_functions
from .vm_builtin_lower import builtin_call

__all__ = ["VMShapeLower"]



def _dims_of(sinfo: StructInfo) -> list[PrimExpr]:
    if isinstance(sinfo, TensorStructInfo):
        return list(sinfo.shape_values or ())
    if isinstance(sinfo, ShapeStructInfo):
        return list(sinfo.values or ())
    if isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
        return [sinfo.value]
    if isinstance(sinfo, TupleStructInfo):
        return [d for f in sinfo.fields for d in _dims_of(f)]
    return []


class _ShapeLower(KernelCallMutator):
    def __init__(self, mod: IRModule, heap: Var, func_name: str):
        super().__init__(mod)
        self.heap = heap
        self.func_name = func_name
        self.slots: dict[TirVar, int] = {}
        self.shapes: dict[tuple, Var] = {}  # make_shape codes -> the variable holding that shape

    # -- the heap ----------------------------------------------------------------------------------
    def slot(self, v: TirVar) -> int:
        if v not in self.slots:
            self.slots[v] = len(self.slots)
        return self.slots[v]

    def match_codes(self, dims: list[PrimExpr]) -> list[PrimValue]:
        """(code, value) pairs of match_shape; first sights of a variable store it."""
        codes: list[int] = []
        for d in dims:
            if isinstance(d, IntImm):
                codes += [B.MATCH_IMM, d.value]
            elif isinstance(d, TirVar):
                if d in self.slots:
                    codes += [B.MATCH_HEAP, self.slots[d]]
                else:
                    codes += [B.MATCH_STORE, self.slot(d)]
            else:
                codes += [B.MATCH_ANY, 0]  # an expression: checked where its variables are defined
        return [PrimValue(c) for c in codes]

    def make_codes(self, dims: tuple) -> list[PrimValue]:
        codes: list[int] = []
        for d in dims:
            if isinstance(d, IntImm):
                codes += [B.MAKE_IMM, d.value]
            elif isinstance(d, TirVar) and d in self.slots:
                codes += [B.MAKE_LOAD, self.slots[d]]
            else:
                raise NotImplementedError(
                    f"VMShapeLower: {self.func_name}: the dimension {dim_text(d)} is "
                    + ("an expression of symbolic variables; only plain variables (n) and constants are "
                       "supported so far" if not isinstance(d, TirVar) else
                       "a symbolic variable that no parameter or match_cast defines"))
        return codes and [PrimValue(c) for c in codes]

    def emit_match(self, value: Any, sinfo: StructInfo, what: str) -> None:
        bb = self.builder_
        if isinstance(sinfo, TensorStructInfo):
            bb.emit(builtin_call("vm.builtin.check_tensor_info",
                                 [value, PrimValue(sinfo.ndim), StringImm("" if sinfo.is_unknown_dtype else
                                                                          sinfo.dtype), StringImm(what)]), "_")
        elif isinstance(sinfo, ShapeStructInfo):
            bb.emit(builtin_call("vm.builtin.check_shape_info", [value, PrimValue(sinfo.ndim), StringImm(what)]), "_")
        elif isinstance(sinfo, TupleStructInfo):
            bb.emit(builtin_call("vm.builtin.check_tuple_info", [value, PrimValue(len(sinfo.fields)),
                                                                 StringImm(what)]), "_")
            for i, f in enumerate(sinfo.fields):
                if _dims_of(f):
                    item = bb.emit(TupleGetItem(value, i))
                    self.emit_match(item, f, f"{what}[{i}]")
            return
        elif isinstance(sinfo, PrimStructInfo) and sinfo.value is not None and not isinstance(sinfo.value, IntImm):
            raise NotImplementedError(f"VMShapeLower: {what}: symbolic scalars (R.Prim(value=...)) are not "
                                      "supported yet")
        dims = _dims_of(sinfo) if isinstance(sinfo, (TensorStructInfo, ShapeStructInfo)) else []
        if dims:
            bb.emit(builtin_call("vm.builtin.match_shape",
                                 [value, self.heap, PrimValue(len(dims)), *self.match_codes(dims),
                                  StringImm(what)]), "_")

    # -- rewriting ---------------------------------------------------------------------------------
    def visit_shape_expr_(self, op: ShapeExpr) -> Any:
        if all(isinstance(v, IntImm) for v in op.values):
            return op
        codes = self.make_codes(op.values)
        key = tuple(c.value.value for c in codes)
        if key not in self.shapes:  # one make_shape per distinct shape (per scope)
            self.shapes[key] = self.builder_.emit(
                builtin_call("vm.builtin.make_shape", [self.heap, PrimValue(len(op.values)), *codes],
                             ShapeStructInfo(op.values)), "shape")
        return self.shapes[key]

    def visit_if_(self, op: Any) -> Any:
        saved = dict(self.shapes)  # shapes made inside a branch are not visible after it
        try:
            return super().visit_if_(op)
        finally:
            self.shapes = saved

    def visit_prim_value_(self, op: PrimValue) -> Any:
        if isinstance(op.value, IntImm) or not op.value.dtype.startswith(("int", "uint")):
            return op
        shape = self.visit_shape_expr_(ShapeExpr([op.value]))
        return self.builder_.emit(builtin_call("vm.builtin.tuple_getitem", [shape, PrimValue(0)],
                                               PrimStructInfo("int64")))

    def visit_match_cast_(self, binding: MatchCast) -> None:
        value = self.visit_expr(binding.value)
        self.emit_match(value, binding.struct_info, f"{self.func_name}: match_cast of {binding.var.name}")
        self.builder_.emit_normalized(VarBinding(binding.var, value))


def _already_lowered(func: Function) -> bool:
    """True when the function starts by allocating a shape heap (running the pass twice is harmless)."""
    body = func.body
    if not isinstance(body, SeqExpr) or not body.blocks or not body.blocks[0].bindings:
        return False
    value = body.blocks[0].bindings[0].value
    return isinstance(value, Call) and isinstance(value.op, ExternFunc) and \
        value.op.global_symbol == "vm.builtin.alloc_shape_heap"


def _rewrite(func: Function, mod: IRModule) -> Function:
    if _already_lowered(func):
        return func
    name = func.attrs.get("global_symbol") or next((gv.name_hint for gv, f in mod.items() if f is func), "function")
    heap = Var("shape_heap", ObjectStructInfo())
    lower = _ShapeLower(mod, heap, name)
    bb = lower.builder_
    bb.begin_binding_block()
    for p in func.params:
        # static shapes are checked when the VM is entered; symbolic ones fill the heap here
        if any(not isinstance(d, IntImm) for d in _dims_of(p.struct_info)):
            lower.emit_match(p, p.struct_info, f"{name}: argument '{p.name}'")
    prologue = bb.end_block()
    body = lower.visit_with_new_scope(func.body)
    if not lower.slots and body is func.body:  # no symbolic dimension, no match_cast
        return func
    alloc = VarBinding(heap, bb.normalize(builtin_call("vm.builtin.alloc_shape_heap", [PrimValue(len(lower.slots))])))
    head = BindingBlock((alloc, *prologue.bindings))
    blocks = (head, *body.blocks) if isinstance(body, SeqExpr) else (head,)
    new_body = SeqExpr(blocks, body.body if isinstance(body, SeqExpr) else body)
    return Function(func.params, new_body, func.ret_struct_info, func.is_pure, func.attrs)


@module_pass(opt_level=0, name="VMShapeLower")
class VMShapeLower:
    """Symbolic shapes -> shape-heap builtins (match_shape / make_shape): ``VMShapeLower()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _rewrite)
