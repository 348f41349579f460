"""Visitors and mutators over Relax, with the hooks TVM's ``PyExprVisitor`` /
``PyExprMutator`` have.

Override ``visit_<node>_`` for the expressions you care about (``visit_call_``,
``visit_var_``, ``visit_function_``, ``visit_tuple_getitem_`` ...) and
``visit_var_binding_`` / ``visit_match_cast_`` / ``visit_dataflow_block_`` ... for
bindings and blocks.  A mutator rebuilds the function through ``self.builder_`` (a
:class:`BlockBuilder`): bindings are re-emitted in order, every rewritten expression is
normalized (its struct info inferred, nested calls bound to variables), and
``self.lookup_binding(var)`` finds what a variable was bound to::

    @relax.expr_functor.mutator
    class AddToMultiply(relax.PyExprMutator):
        def visit_call_(self, call):
            call = self.visit_expr_post_order(call)
            if call.op == tvm.ir.Op.get("relax.add"):
                return relax.op.multiply(*call.args)
            return call

    new_main = AddToMultiply(mod).visit_expr(mod["main"])
"""

from __future__ import annotations

from typing import Any

from ..ir.module import GlobalVar, IRModule
from ..ir.op import Op
from ..ir.structural import structural_equal
from .analysis.struct_info_analysis import is_base_of
from .block_builder import BlockBuilder
from .expr import (
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    struct_info_of,
)
from .struct_info import StructInfo

__all__ = ["ExprVisitor", "ExprMutator", "PyExprVisitor", "PyExprMutator", "visitor", "mutator"]

# expression class -> the suffix of its hook (``visit_<suffix>_``), as TVM names them
_HOOKS: dict[type, str] = {
    Constant: "constant", Tuple: "tuple", Var: "var", DataflowVar: "dataflow_var",
    ShapeExpr: "shape_expr", ExternFunc: "extern_func", GlobalVar: "global_var",
    Function: "function", Call: "call", SeqExpr: "seq_expr", If: "if", Op: "op",
    TupleGetItem: "tuple_getitem", PrimValue: "prim_value", StringImm: "string_imm",
    DataTypeImm: "data_type_imm",
}


#: expression class -> the name of its hook, found once per class (every node visited asks)
_HOOK_NAMES: dict[type, str] = {}


def _hook(expr: Any) -> str:
    name = _HOOK_NAMES.get(type(expr))
    if name is not None:
        return name
    for cls in type(expr).__mro__:
        suffix = _HOOKS.get(cls)
        if suffix is not None:
            name = _HOOK_NAMES[type(expr)] = f"visit_{suffix}_"
            return name
    raise TypeError(f"not a Relax expression: {type(expr).__name__} {expr!r}")


class ExprVisitor:
    """Walks an expression (bindings in order, definitions via ``visit_var_def``)."""

    def visit_expr(self, expr: Any) -> None:
        getattr(self, _hook(expr))(expr)

    # -- expressions --------------------------------------------------------------------------
    def visit_constant_(self, op: Constant) -> None: pass
    def visit_var_(self, op: Var) -> None: pass
    def visit_dataflow_var_(self, op: DataflowVar) -> None: pass
    def visit_shape_expr_(self, op: ShapeExpr) -> None: pass
    def visit_extern_func_(self, op: ExternFunc) -> None: pass
    def visit_global_var_(self, op: GlobalVar) -> None: pass
    def visit_op_(self, op: Op) -> None: pass
    def visit_prim_value_(self, op: PrimValue) -> None: pass
    def visit_string_imm_(self, op: StringImm) -> None: pass
    def visit_data_type_imm_(self, op: DataTypeImm) -> None: pass

    def visit_tuple_(self, op: Tuple) -> None:
        for f in op.fields:
            self.visit_expr(f)

    def visit_tuple_getitem_(self, op: TupleGetItem) -> None:
        self.visit_expr(op.tuple_value)

    def visit_call_(self, op: Call) -> None:
        self.visit_expr(op.op)
        for a in op.args:
            self.visit_expr(a)

    def visit_function_(self, op: Function) -> None:
        for p in op.params:
            self.visit_var_def(p)
        self.visit_expr(op.body)

    def visit_seq_expr_(self, op: SeqExpr) -> None:
        for block in op.blocks:
            self.visit_binding_block(block)
        self.visit_expr(op.body)

    def visit_if_(self, op: If) -> None:
        self.visit_expr(op.cond)
        self.visit_expr(op.true_branch)
        self.visit_expr(op.false_branch)

    # -- bindings and blocks -----------------------------------------------------------------
    def visit_binding(self, binding: Binding) -> None:
        if isinstance(binding, MatchCast):
            self.visit_match_cast_(binding)
        else:
            self.visit_var_binding_(binding)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        self.visit_expr(binding.value)
        self.visit_var_def(binding.var)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        self.visit_expr(binding.value)
        self.visit_var_def(binding.var)

    def visit_binding_block(self, block: BindingBlock) -> None:
        if isinstance(block, DataflowBlock):
            self.visit_dataflow_block_(block)
        else:
            self.visit_binding_block_(block)

    def visit_binding_block_(self, block: BindingBlock) -> None:
        for b in block.bindings:
            self.visit_binding(b)

    def visit_dataflow_block_(self, block: DataflowBlock) -> None:
        for b in block.bindings:
            self.visit_binding(b)

    def visit_var_def(self, var: Var) -> None:
        if isinstance(var, DataflowVar):
            self.visit_dataflow_var_def_(var)
        else:
            self.visit_var_def_(var)

    def visit_var_def_(self, var: Var) -> None: pass
    def visit_dataflow_var_def_(self, var: DataflowVar) -> None: pass


class ExprMutator:
    """Rebuilds expressions through ``self.builder_``; unchanged parts stay the same objects."""

    def __init__(self, mod: IRModule | None = None) -> None:
        self.builder_ = BlockBuilder(mod)
        self.var_remap_: dict[Var, Var] = {}

    def __getattr__(self, name: str) -> Any:
        # a subclass whose __init__ forgot super().__init__() still gets its state
        if name == "builder_":
            self.builder_ = BlockBuilder()
            return self.builder_
        if name == "var_remap_":
            self.var_remap_ = {}
            return self.var_remap_
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- entry points ----------------------------------------------------------------------
    def visit_expr(self, expr: Any) -> Any:
        """Rewrite ``expr`` (through the ``visit_<node>_`` hooks) and normalize the result."""
        return self.builder_.normalize(getattr(self, _hook(expr))(expr))

    def visit_expr_post_order(self, expr: Any) -> Any:
        """Rewrite the children of ``expr`` only (the default hook, whatever a subclass
        overrides) and normalize: call it first in a ``visit_call_`` override."""
        return self.builder_.normalize(getattr(ExprMutator, _hook(expr))(self, expr))

    def visit_with_new_scope(self, expr: Any) -> Any:
        """Rewrite a function body or branch; bindings it needs stay inside it."""
        self.builder_.begin_binding_block()
        try:
            new = self.visit_expr(expr)
        finally:
            prologue = self.builder_.end_block()
        if prologue.bindings:
            new = self.builder_.normalize(SeqExpr((prologue,), new))
        return new

    # -- variables ---------------------------------------------------------------------------
    def set_var_remap(self, var: Var, new_var: Var) -> None:
        """Uses of ``var`` after this point become ``new_var``."""
        self.var_remap_[var] = new_var

    def get_var_remap(self, var: Var) -> Var | None:
        return self.var_remap_.get(var)

    def lookup_binding(self, var: Any) -> Any:
        """The value ``var`` is bound to in the function being rewritten, or None."""
        return self.builder_.lookup_binding(var) if isinstance(var, Var) else None

    def with_struct_info(self, var: Var, struct_info: StructInfo) -> Var:
        """``var`` itself when its struct info is ``struct_info``, else a new variable of the
        same name and kind with it."""
        if var.struct_info is struct_info or (var.struct_info is not None
                                              and structural_equal(var.struct_info, struct_info)):
            return var
        return type(var)(var.name, struct_info)

    # -- expressions -----------------------------------------------------------------------
    def visit_constant_(self, op: Constant) -> Any: return op
    def visit_shape_expr_(self, op: ShapeExpr) -> Any: return op
    def visit_extern_func_(self, op: ExternFunc) -> Any: return op
    def visit_global_var_(self, op: GlobalVar) -> Any: return op
    def visit_op_(self, op: Op) -> Any: return op
    def visit_prim_value_(self, op: PrimValue) -> Any: return op
    def visit_string_imm_(self, op: StringImm) -> Any: return op
    def visit_data_type_imm_(self, op: DataTypeImm) -> Any: return op

    def visit_var_(self, op: Var) -> Any:
        return self.var_remap_.get(op, op)

    def visit_dataflow_var_(self, op: DataflowVar) -> Any:
        return self.var_remap_.get(op, op)

    def visit_tuple_(self, op: Tuple) -> Any:
        fields = [self.visit_expr(f) for f in op.fields]
        return op if _same(fields, op.fields) else Tuple(fields)

    def visit_tuple_getitem_(self, op: TupleGetItem) -> Any:
        tup = self.visit_expr(op.tuple_value)
        return op if tup is op.tuple_value else TupleGetItem(tup, op.index)

    def visit_call_(self, op: Call) -> Any:
        callee = self.visit_expr(op.op)
        args = [self.visit_expr(a) for a in op.args]
        if callee is op.op and _same(args, op.args):
            return op
        return Call(callee, args, op.attrs, op.sinfo_args)

    def visit_if_(self, op: If) -> Any:
        cond = self.visit_expr(op.cond)
        then = self.visit_with_new_scope(op.true_branch)
        other = self.visit_with_new_scope(op.false_branch)
        if cond is op.cond and then is op.true_branch and other is op.false_branch:
            return op
        return If(cond, then, other)

    def visit_function_(self, op: Function) -> Any:
        params = [self.visit_var_def(p) for p in op.params]
        body = self.visit_with_new_scope(op.body)
        if _same(params, op.params) and body is op.body:
            return op
        ret = op.ret_struct_info
        body_sinfo = struct_info_of(body)
        if not _same(params, op.params) or (ret is not None and body_sinfo is not None
                                            and not is_base_of(ret, body_sinfo)):
            ret = None  # derived again from the new body
        if ret is None:
            return self.builder_.normalize(Function(params, body, None, op.is_pure, op.attrs))
        return Function(params, body, ret, op.is_pure, op.attrs)

    def visit_seq_expr_(self, op: SeqExpr) -> Any:
        blocks = [self.visit_binding_block(b) for b in op.blocks]
        self.builder_.begin_binding_block()
        try:
            body = self.visit_expr(op.body)
        finally:
            prologue = self.builder_.end_block()
        if prologue.bindings:
            blocks.append(prologue)
        kept = [b for b in blocks if b.bindings]
        if _same(kept, op.blocks) and body is op.body:
            return op
        return SeqExpr(tuple(kept), body)

    # -- bindings and blocks -------------------------------------------------------------------
    def visit_binding(self, binding: Binding) -> None:
        if isinstance(binding, MatchCast):
            self.visit_match_cast_(binding)
        else:
            self.visit_var_binding_(binding)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        """Re-emit ``var = value`` with the rewritten value (a new variable only if the
        value's struct info changed; later uses are remapped to it)."""
        value = self.visit_expr(binding.value)
        var = self.visit_var_def(binding.var)
        # (a variable built without struct info takes its value's, as TVM's mutator gives it)
        if var is binding.var and value is binding.value and struct_info_of(var) is not None:
            self.builder_.emit_normalized(binding)
            return
        new_var = self.with_struct_info(var, value.struct_info)
        if new_var is not binding.var:
            self.set_var_remap(binding.var, new_var)
        self.builder_.emit_normalized(VarBinding(new_var, value))

    def visit_match_cast_(self, binding: MatchCast) -> None:
        value = self.visit_expr(binding.value)
        var = self.visit_var_def(binding.var)
        if var is binding.var and value is binding.value:
            self.builder_.emit_normalized(binding)
            return
        if var is not binding.var:
            self.set_var_remap(binding.var, var)
        self.builder_.emit_normalized(MatchCast(var, value, binding.struct_info))

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        if isinstance(block, DataflowBlock):
            return self.visit_dataflow_block_(block)
        return self.visit_binding_block_(block)

    def visit_binding_block_(self, block: BindingBlock) -> BindingBlock:
        self.builder_.begin_binding_block()
        try:
            for b in block.bindings:
                self.visit_binding(b)
        finally:
            new = self.builder_.end_block()
        return _reuse(new, block)

    def visit_dataflow_block_(self, block: DataflowBlock) -> BindingBlock:
        self.builder_.begin_dataflow_block()
        try:
            for b in block.bindings:
                self.visit_binding(b)
        finally:
            new = self.builder_.end_block()
        return _reuse(new, block)

    def visit_var_def(self, var: Var) -> Var:
        if isinstance(var, DataflowVar):
            return self.visit_dataflow_var_def_(var)
        return self.visit_var_def_(var)

    def visit_var_def_(self, var: Var) -> Var:
        return var

    def visit_dataflow_var_def_(self, var: DataflowVar) -> Var:
        return var


def _same(new: Any, old: Any) -> bool:
    return len(new) == len(old) and all(a is b for a, b in zip(new, old))


def _reuse(new: BindingBlock, old: BindingBlock | None) -> BindingBlock:
    """The old block object when the rewrite kept every binding."""
    if old is not None and type(new) is type(old) and _same(new.bindings, old.bindings):
        return old
    return new


# TVM's names for the Python-subclassable functors
PyExprVisitor = ExprVisitor
PyExprMutator = ExprMutator


def visitor(visitor_cls: type | None = None) -> Any:
    """Class decorator for a ``PyExprVisitor`` subclass (as ``@relax.expr_functor.visitor``)."""
    def wrap(cls: type) -> type:
        if not (isinstance(cls, type) and issubclass(cls, ExprVisitor)):
            raise TypeError(f"@relax.expr_functor.visitor expects a subclass of relax.PyExprVisitor, got {cls!r}")
        return cls

    return wrap if visitor_cls is None else wrap(visitor_cls)


def mutator(mutator_cls: type | None = None) -> Any:
    """Class decorator for a ``PyExprMutator`` subclass (as ``@relax.expr_functor.mutator``)."""
    def wrap(cls: type) -> type:
        if not (isinstance(cls, type) and issubclass(cls, ExprMutator)):
            raise TypeError(f"@relax.expr_functor.mutator expects a subclass of relax.PyExprMutator, got {cls!r}")
        return cls

    return wrap if mutator_cls is None else wrap(mutator_cls)
