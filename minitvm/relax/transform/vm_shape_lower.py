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
the new variables it introduces (the match_cast binding stays, as in TVM, naming them).

A dimension that is an expression of variables (``n * 5408`` after a flatten) gets a slot
of its own, computed once its variables are known
(``vm.builtin.eval_shape_expr(shape_heap, 1, EXPR_LOAD, 0, EXPR_IMM, 5408, MUL, 0)``, the
expression in postfix), and is then loaded like a variable; in a ``match_shape`` it is
checked against that slot.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...runtime.vm import builtins as B
from ...tir.expr import Cast, IntImm, PrimExpr
from ...tir.expr import Var as TirVar
from ...tir.functor import post_order_visit
from ...transform import PassContext, module_pass
from ..expr import (
    BindingBlock,
    Function,
    If,
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
from ..vm.ops import starts_with_shape_heap
from ._util import KernelCallMutator, map_functions
from .vm_builtin_lower import builtin_call

__all__ = ["VMShapeLower"]


def _vars_of(d: PrimExpr) -> list[TirVar]:
    found: list[TirVar] = []
    post_order_visit(d, lambda x: found.append(x) if isinstance(x, TirVar) else None)
    return found


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
        self.heap_size = 0
        self.shapes: dict[tuple, Var] = {}  # make_shape codes -> the variable holding that shape
        self.computed: dict[tuple, int] = {}  # eval_shape_expr program -> the slot holding its value
        #: while the parameters are read: checks of expressions, made after the last parameter
        self.deferred: list[tuple] | None = None

    # -- the heap ----------------------------------------------------------------------------------
    def slot(self, v: TirVar) -> int:
        if v not in self.slots:
            self.slots[v] = self.new_slot()
        return self.slots[v]

    def new_slot(self) -> int:
        self.heap_size += 1
        return self.heap_size - 1

    def is_known(self, d: PrimExpr) -> bool:
        """True when every variable of ``d`` has a slot by now (so ``d`` can be computed)."""
        return all(v in self.slots for v in _vars_of(d))

    def postfix(self, d: PrimExpr) -> list[int]:
        """``d`` as an ``eval_shape_expr`` program over constants and heap slots."""
        if isinstance(d, IntImm):
            return [B.EXPR_IMM, d.value]
        if isinstance(d, TirVar):
            return [B.EXPR_LOAD, self.slots[d]]
        if isinstance(d, Cast) and d.dtype.startswith("int") and d.value.dtype.startswith("int"):
            return self.postfix(d.value)
        code = B.EXPR_CODES.get(type(d).__name__)
        if code is None:
            raise NotImplementedError(f"VMShapeLower: {self.func_name}: the dimension {dim_text(d)} uses "
                                      f"{type(d).__name__}, which shape arithmetic does not support")
        return [*self.postfix(d.a), *self.postfix(d.b), code, 0]

    def expr_slot(self, d: PrimExpr) -> int:
        """The slot holding the value of the expression ``d``, computing it here the first time."""
        program = tuple(self.postfix(d))
        if program not in self.computed:
            self.computed[program] = self.new_slot()
            self.builder_.emit(builtin_call("vm.builtin.eval_shape_expr",
                                            [self.heap, PrimValue(self.computed[program]),
                                             *(PrimValue(c) for c in program)]), "_")
        return self.computed[program]

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
            elif self.is_known(d):
                codes += [B.MAKE_LOAD, self.expr_slot(d)]
            else:
                unknown = ", ".join(sorted({v.name for v in _vars_of(d) if v not in self.slots}))
                raise NotImplementedError(f"VMShapeLower: {self.func_name}: the dimension {dim_text(d)} uses "
                                          f"{unknown}, which no parameter or match_cast defines")
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
            self.emit_prim_match(value, sinfo, what)
            return
        dims = _dims_of(sinfo) if isinstance(sinfo, (TensorStructInfo, ShapeStructInfo)) else []
        if dims:
            bb.emit(builtin_call("vm.builtin.match_shape",
                                 [value, self.heap, PrimValue(len(dims)), *self.match_codes(dims),
                                  StringImm(what)]), "_")
            self.emit_expression_checks(value, dims, what)

    def emit_prim_match(self, value: Any, sinfo: PrimStructInfo, what: str) -> None:
        """An ``R.Prim(value=n)``: a scalar of its dtype, stored as ``n`` (first sight) or checked."""
        bb, v = self.builder_, sinfo.value
        bb.emit(builtin_call("vm.builtin.check_prim_value_info", [value, StringImm(sinfo.dtype), StringImm(what)]), "_")
        if isinstance(v, TirVar):
            code, k = (B.MATCH_HEAP, self.slots[v]) if v in self.slots else (B.MATCH_STORE, self.slot(v))
        elif self.deferred is not None:  # an expression: checked once every parameter is read
            self.deferred.append((value, sinfo, what))
            return
        elif self.is_known(v):
            code, k = B.MATCH_HEAP, self.expr_slot(v)
        else:
            return
        bb.emit(builtin_call("vm.builtin.match_prim_value",
                             [value, self.heap, PrimValue(code), PrimValue(k), StringImm(what)]), "_")

    def emit_expression_checks(self, value: Any, dims: list[PrimExpr], what: str) -> None:
        """Check the dimensions that are expressions (``n * 2``) once their variables are known
        (while the parameters are read: after the last of them)."""
        if self.deferred is not None and any(not isinstance(d, (IntImm, TirVar)) for d in dims):
            self.deferred.append((value, dims, what))
            return
        exprs = [i for i, d in enumerate(dims) if not isinstance(d, (IntImm, TirVar)) and self.is_known(d)]
        if not exprs:
            return
        codes: list[int] = []
        for i, d in enumerate(dims):
            codes += [B.MATCH_HEAP, self.expr_slot(d)] if i in exprs else [B.MATCH_ANY, 0]
        self.builder_.emit(builtin_call("vm.builtin.match_shape",
                                        [value, self.heap, PrimValue(len(dims)), *(PrimValue(c) for c in codes),
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
        # shapes and expressions computed inside a branch are not visible after it, nor in the
        # other branch (which runs instead of it)
        saved = dict(self.shapes), dict(self.computed)
        try:
            cond = self.visit_expr(op.cond)
            then = self.visit_with_new_scope(op.true_branch)
            self.shapes, self.computed = dict(saved[0]), dict(saved[1])
            other = self.visit_with_new_scope(op.false_branch)
        finally:
            self.shapes, self.computed = saved
        if cond is op.cond and then is op.true_branch and other is op.false_branch:
            return op
        return If(cond, then, other)

    def visit_prim_value_(self, op: PrimValue) -> Any:
        v = op.value
        if isinstance(v, IntImm) or not v.dtype.startswith(("int", "uint", "bool")):
            return op
        if v.dtype.startswith(("int", "uint")):
            shape = self.visit_shape_expr_(ShapeExpr([v]))
        else:  # a condition (n % 8 == 0): computed into a slot as 1 or 0, read as a one-value shape
            if not self.is_known(v):
                self.make_codes((v,))  # raises, naming the variables nothing defines
            shape = self.builder_.emit(builtin_call("vm.builtin.make_shape", [
                self.heap, PrimValue(1), PrimValue(B.MAKE_LOAD), PrimValue(self.expr_slot(v))]), "shape")
        return self.builder_.emit(builtin_call("vm.builtin.tuple_getitem", [shape, PrimValue(0)],
                                               PrimStructInfo(v.dtype)))

    def visit_match_cast_(self, binding: MatchCast) -> None:
        value = self.visit_expr(binding.value)
        self.emit_match(value, binding.struct_info, f"{self.func_name}: match_cast of {binding.var.name}")
        # kept as a match_cast (as TVM): it still defines the symbolic variables it names
        self.builder_.emit_normalized(MatchCast(binding.var, value, binding.struct_info))


def _check_return(lower: _ShapeLower, body: Any, ret: StructInfo, name: str) -> Any:
    """``body`` with checks of its result against the function's return annotation appended, when
    what the body is known to return does not already satisfy it (as TVM's VMShapeLower: an
    ``R.Object`` returned as ``R.Tensor(("m", "n"))`` is checked, its error naming the return)."""
    if not isinstance(body, SeqExpr) or ret is None or not isinstance(
            ret, (TensorStructInfo, ShapeStructInfo, TupleStructInfo)):
        return body
    got = getattr(body.body, "struct_info_", None)
    if got is not None and ret.is_base_of(got):
        return body
    bb = lower.builder_
    bb.begin_binding_block()
    lower.emit_match(body.body, ret, f"{name}: return value")
    checks = bb.end_block()
    if not checks.bindings:
        return body
    return SeqExpr((*body.blocks, checks), body.body)


def _rewrite(func: Function, mod: IRModule) -> Function:
    if starts_with_shape_heap(func):  # running the pass twice is harmless
        return func
    name = func.attrs.get("global_symbol") or next((gv.name_hint for gv, f in mod.items() if f is func), "function")
    heap = Var("shape_heap", ObjectStructInfo())
    lower = _ShapeLower(mod, heap, name)
    bb = lower.builder_
    bb.begin_binding_block()
    lower.deferred = []
    for p in func.params:
        # static shapes are checked when the VM is entered; symbolic ones fill the heap here
        if any(not isinstance(d, IntImm) for d in _dims_of(p.struct_info)):
            lower.emit_match(p, p.struct_info, f"{name}: argument '{p.name}'")
    deferred, lower.deferred = lower.deferred, None
    for value, dims, what in deferred:  # every variable a parameter defines is known now
        if isinstance(dims, PrimStructInfo):
            lower.emit_prim_match(value, dims, what)
        else:
            lower.emit_expression_checks(value, dims, what)
    prologue = bb.end_block()
    body = lower.visit_with_new_scope(func.body)
    body = _check_return(lower, body, func.ret_struct_info, name)
    if not lower.slots and body is func.body:  # no symbolic dimension, no match_cast, no return check
        return func
    alloc = VarBinding(heap, bb.normalize(builtin_call("vm.builtin.alloc_shape_heap", [PrimValue(lower.heap_size)])))
    head = BindingBlock((alloc, *prologue.bindings))
    blocks = (head, *body.blocks) if isinstance(body, SeqExpr) else (head,)
    new_body = SeqExpr(blocks, body.body if isinstance(body, SeqExpr) else body)
    return Function(func.params, new_body, func.ret_struct_info, func.is_pure, func.attrs)


@module_pass(opt_level=0, name="VMShapeLower")
class VMShapeLower:
    """Symbolic shapes -> shape-heap builtins (match_shape / make_shape): ``VMShapeLower()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, _rewrite)
