"""Relax ASTs as nested ``Node(field=value, ...)`` text (TVM's ``relax.testing.ast_printer``).

``dump_ast(expr)`` shows how an expression is put together, one node per constructor call,
fields indented under it: a teaching and debugging view, not TVMScript.  Struct info
annotations and call attributes can be left out (``include_struct_info_annotations=False``,
``include_call_attrs=False``).  Bindings and binding blocks can be dumped too.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ...ir.module import GlobalVar
from ...ir.op import Op
from ...tir.expr import IntImm
from ...tir.expr import Var as TirVar
from .. import struct_info as si
from ..expr import (
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

__all__ = ["ASTPrinter", "dump_ast"]


def _quoted(text: Any) -> str:
    return f'"{text}"'


def _prim_text(e: Any) -> str:
    """A PrimExpr as TVM's str() writes it in these dumps: int64 literals typed, a non-int64
    variable with its dtype."""
    if isinstance(e, int):
        e = IntImm("int64", e)
    if isinstance(e, TirVar) and e.dtype != "int64":
        return f"{e.name}: {e.dtype}"
    return str(e)


class ASTPrinter:
    """The printer behind :func:`dump_ast`; ``visit_expr``, ``visit_struct_info_`` and the
    ``visit_<node>_`` methods each return text."""

    def __init__(self, indent_str: str = "    ", include_struct_info_annotations: bool = True,
                 include_call_attrs: bool = True) -> None:
        self.indent_str = indent_str
        self.include_struct_info_annotations = include_struct_info_annotations
        self.include_call_attrs = include_call_attrs

    # -- layout -----------------------------------------------------------------------------
    def indent(self, text: str) -> str:
        return "" if text == "" else "\n".join(self.indent_str + line for line in text.split("\n"))

    def build_list(self, members: Iterable[str], open_tok: str = "[", close_tok: str = "]",
                   force_newline: bool = False) -> str:
        """``[a, b]`` one member per indented line; a single short member stays inline."""
        items = list(members)
        if not items:
            return open_tok + close_tok
        if len(items) == 1 and not force_newline and "\n" not in items[0]:
            return open_tok + items[0] + close_tok
        return open_tok + "\n" + ",\n".join(self.indent(m) for m in items) + "\n" + close_tok

    def build_ast_node(self, nodename: str, force_newline: bool = False, **fields: Any) -> str:
        return self.build_list((f"{k}={v}" for k, v in fields.items()), f"{nodename}(", ")", force_newline)

    def build_expr(self, node: Any, nodename: str, force_newline: bool = False, **fields: Any) -> str:
        sinfo = struct_info_of(node)
        if sinfo is not None and self.include_struct_info_annotations:
            fields["struct_info"] = self.visit_struct_info_(sinfo)
        return self.build_ast_node(nodename, force_newline, **fields)

    # -- dispatch ---------------------------------------------------------------------------
    def visit_expr(self, expr: Any) -> str:
        for cls, method in _DISPATCH:
            if isinstance(expr, cls):
                return getattr(self, method)(expr)
        raise TypeError(f"dump_ast: cannot print a {type(expr).__name__}")

    # -- expressions ------------------------------------------------------------------------
    def visit_constant_(self, op: Constant) -> str:
        data = np.asarray(op.data)
        return self.build_expr(op, "Constant", force_newline=getattr(data, "ndim", 0) > 0, data=str(data))

    def visit_tuple_(self, op: Tuple) -> str:
        return self.build_expr(op, "Tuple", fields=self.build_list(self.visit_expr(f) for f in op.fields))

    def visit_var_(self, op: Var) -> str:
        return self.build_expr(op, "Var", name_hint=_quoted(op.name_hint))

    def visit_dataflow_var_(self, op: DataflowVar) -> str:
        return self.build_expr(op, "DataflowVar", name_hint=_quoted(op.name_hint))

    def visit_shape_expr_(self, op: ShapeExpr) -> str:
        return self.build_expr(op, "ShapeExpr", values=self.build_list(self.visit_prim_expr_(v) for v in op.values))

    def visit_extern_func_(self, op: ExternFunc) -> str:
        return self.build_ast_node("ExternFunc", global_symbol=_quoted(op.global_symbol))

    def visit_global_var_(self, op: GlobalVar) -> str:
        return self.build_expr(op, "GlobalVar", name_hint=_quoted(op.name_hint))

    def visit_op_(self, op: Op) -> str:
        return self.build_ast_node("Op", name=_quoted(op.name))

    def visit_function_(self, op: Function) -> str:
        fields: dict[str, Any] = {
            "params": self.build_list(self.visit_expr(p) for p in op.params),
            "body": self.visit_expr(op.body),
            "ret_struct_info": self.visit_struct_info_(op.ret_struct_info),
            "is_pure": op.is_pure,
        }
        if op.attrs:
            fields["attrs"] = self.build_list((f"{_quoted(k)}: {_quoted(v)}" for k, v in op.attrs.items()), "{", "}")
        return self.build_expr(op, "Function", **fields)

    def visit_call_(self, op: Call) -> str:
        fields: dict[str, Any] = {"op": self.visit_expr(op.op),
                                  "args": self.build_list(self.visit_expr(a) for a in op.args)}
        if op.sinfo_args:
            fields["sinfo_args"] = self.build_list(self.visit_struct_info_(s) for s in op.sinfo_args)
        if op.attrs and self.include_call_attrs:
            fields["attrs"] = self.build_list((f"{_quoted(k)}: {_attr_text(v)}" for k, v in dict(op.attrs).items()),
                                              "{", "}")
        return self.build_expr(op, "Call", **fields)

    def visit_seq_expr_(self, op: SeqExpr) -> str:
        return self.build_expr(op, "SeqExpr", blocks=self.build_list(self.visit_binding_block_(b) for b in op.blocks),
                               body=self.visit_expr(op.body))

    def visit_if_(self, op: If) -> str:
        return self.build_expr(op, "If", cond=self.visit_expr(op.cond), true_branch=self.visit_expr(op.true_branch),
                               false_branch=self.visit_expr(op.false_branch))

    def visit_prim_value_(self, op: PrimValue) -> str:
        return self.build_expr(op, "PrimValue", value=self.visit_prim_expr_(op.value))

    def visit_string_imm_(self, op: StringImm) -> str:
        return self.build_expr(op, "StringImm", value=_quoted(op.value))

    def visit_data_type_imm_(self, op: DataTypeImm) -> str:
        return self.build_expr(op, "DataTypeImm", value=op.value)

    def visit_tuple_getitem_(self, op: TupleGetItem) -> str:
        return self.build_expr(op, "TupleGetItem", tuple_value=self.visit_expr(op.tuple_value), index=str(op.index))

    def visit_prim_expr_(self, e: Any) -> str:
        return self.build_ast_node("PrimExpr", value=f"`{_prim_text(e)}`")

    # -- struct info --------------------------------------------------------------------------
    def visit_struct_info_(self, s: Any) -> str:
        if isinstance(s, si.ShapeStructInfo):
            fields: dict[str, Any] = {"ndim": str(s.ndim)}
            if s.values is not None:
                fields["values"] = self.build_list(self.visit_prim_expr_(v) for v in s.values)
            return self.build_ast_node("ShapeStructInfo", **fields)
        if isinstance(s, si.ObjectStructInfo):
            return self.build_ast_node("ObjectStructInfo")
        if isinstance(s, si.PrimStructInfo):
            return self.build_ast_node("PrimStructInfo", dtype=s.dtype)
        if isinstance(s, si.TensorStructInfo):
            fields = {"dtype": s.dtype}
            if s.shape is not None:
                fields["shape"] = self.visit_expr(s.shape)
            else:
                fields["ndim"] = str(s.ndim)
            return self.build_ast_node("TensorStructInfo", **fields)
        if isinstance(s, si.TupleStructInfo):
            return self.build_ast_node("TupleStructInfo", fields=self.build_list(self.visit_struct_info_(f)
                                                                                 for f in s.fields))
        if isinstance(s, si.FuncStructInfo):
            fields = {}
            if s.params is not None:
                fields["params"] = self.build_list(self.visit_struct_info_(p) for p in s.params)
            fields["ret"] = self.visit_struct_info_(s.ret)
            fields["purity"] = bool(s.purity)
            return self.build_ast_node("FuncStructInfo", **fields)
        raise ValueError(f"dump_ast: not a Relax struct info: {s!r} ({type(s).__name__})")

    # -- bindings -----------------------------------------------------------------------------
    def visit_binding_block_(self, block: BindingBlock) -> str:
        name = "DataflowBlock" if isinstance(block, DataflowBlock) else "BindingBlock"
        return self.build_ast_node(name, bindings=self.build_list((self.visit_binding_(b) for b in block.bindings),
                                                                  force_newline=True))

    visit_dataflow_block_ = visit_binding_block_

    def visit_binding_(self, binding: Binding) -> str:
        if isinstance(binding, MatchCast):
            return self.visit_match_cast_(binding)
        if isinstance(binding, VarBinding):
            return self.visit_var_binding_(binding)
        raise ValueError(f"dump_ast: not a binding: {type(binding).__name__}")

    def visit_match_cast_(self, b: MatchCast) -> str:
        return self.build_ast_node("MatchCast", var=self.visit_expr(b.var), value=self.visit_expr(b.value),
                                   struct_info=self.visit_struct_info_(b.struct_info))

    def visit_var_binding_(self, b: VarBinding) -> str:
        return self.build_ast_node("VarBinding", var=self.visit_expr(b.var), value=self.visit_expr(b.value))


def _attr_text(value: Any) -> str:
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, IntImm):
        return str(bool(value.value)) if value.dtype == "bool" else str(int(value.value))
    return str(value)


# most specific classes first (a DataflowVar is a Var, a DataflowBlock a BindingBlock)
_DISPATCH = [(DataflowBlock, "visit_binding_block_"), (BindingBlock, "visit_binding_block_"),
             (Binding, "visit_binding_"), (DataflowVar, "visit_dataflow_var_"), (Var, "visit_var_"),
             (Constant, "visit_constant_"), (Tuple, "visit_tuple_"), (ShapeExpr, "visit_shape_expr_"),
             (ExternFunc, "visit_extern_func_"), (GlobalVar, "visit_global_var_"), (Op, "visit_op_"),
             (Function, "visit_function_"), (Call, "visit_call_"), (SeqExpr, "visit_seq_expr_"),
             (If, "visit_if_"), (PrimValue, "visit_prim_value_"), (StringImm, "visit_string_imm_"),
             (DataTypeImm, "visit_data_type_imm_"), (TupleGetItem, "visit_tuple_getitem_")]


def dump_ast(exp: Any, indent_str: str = "    ", include_struct_info_annotations: bool = True,
             include_call_attrs: bool = True) -> str:
    """The AST of ``exp`` (an expression, a binding or a binding block) as text."""
    return ASTPrinter(indent_str, include_struct_info_annotations, include_call_attrs).visit_expr(exp)
