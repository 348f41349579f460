"""A plain-text dump of Relax functions, TVMScript-like, for looking at what the VM
lowering passes did (``print(relax.vm.ir_text.module_text(mod))``).

It reads like ``R.function`` text but is a debugging view, not parseable TVMScript: the
Relax printer of :mod:`minitvm.script` is the real one.
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...ir.op import Op
from ...tir.function import PrimFunc
from ..expr import (
    Call,
    Constant,
    DataflowBlock,
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
)
from ..struct_info import dim_text, shape_text, struct_info_text

__all__ = ["module_text", "function_text", "expr_text"]


def _op_text(op: Any) -> str:
    if isinstance(op, Op):
        name = op.name
        return "R." + name[len("relax."):] if name.startswith("relax.") else name
    if isinstance(op, GlobalVar):
        return f"cls.{op.name_hint}"
    if isinstance(op, ExternFunc):
        return f'R.ExternFunc("{op.global_symbol}")'
    return expr_text(op)


def expr_text(e: Any) -> str:
    """One expression on one line."""
    if isinstance(e, Var):
        return e.name
    if isinstance(e, GlobalVar):
        return f"cls.{e.name_hint}"
    if isinstance(e, Constant):
        return f"R.const(<{e.data.dtype} {shape_text(list(e.data.shape))}>)"
    if isinstance(e, ShapeExpr):
        return f"R.shape([{', '.join(dim_text(v) for v in e.values)}])"
    if isinstance(e, PrimValue):
        return f"R.prim_value({dim_text(e.value)})"
    if isinstance(e, StringImm):
        return f'R.str("{e.value}")'
    if isinstance(e, DataTypeImm):
        return f'R.dtype("{e.value}")'
    if isinstance(e, ExternFunc):
        return f'R.ExternFunc("{e.global_symbol}")'
    if isinstance(e, Tuple):
        inner = ", ".join(expr_text(f) for f in e.fields)
        return f"({inner}{',' if len(e.fields) == 1 else ''})"
    if isinstance(e, TupleGetItem):
        return f"{expr_text(e.tuple_value)}[{e.index}]"
    if isinstance(e, Call):
        args = [expr_text(a) for a in e.args]
        if e.sinfo_args:
            args.append("sinfo_args=" + ", ".join(struct_info_text(s) for s in e.sinfo_args))
        return f"{_op_text(e.op)}({', '.join(args)})"
    return repr(e)


def _seq_lines(seq: Any, indent: str, top: bool = False) -> list[str]:
    if not isinstance(seq, SeqExpr):
        return [f"{indent}{expr_text(seq)}"]
    lines: list[str] = []
    for block in seq.blocks:
        inner = indent
        if isinstance(block, DataflowBlock):
            lines.append(f"{indent}with R.dataflow():")
            inner = indent + "    "
        for b in block.bindings:
            sinfo = struct_info_text(b.var.struct_info) if b.var.struct_info is not None else "?"
            if isinstance(b, MatchCast):
                lines.append(f"{inner}{b.var.name}: {sinfo} = R.match_cast({expr_text(b.value)}, "
                             f"{struct_info_text(b.struct_info)})")
            elif isinstance(b.value, If):
                lines.append(f"{inner}if {expr_text(b.value.cond)}:")
                lines += _seq_lines(b.value.true_branch, inner + "    ")
                lines.append(f"{inner}else:")
                lines += _seq_lines(b.value.false_branch, inner + "    ")
                lines.append(f"{inner}{b.var.name}: {sinfo} = <if result>")
            else:
                lines.append(f"{inner}{b.var.name}: {sinfo} = {expr_text(b.value)}")
    # a branch ends with its value; the function with ``return``
    lines.append(f"{indent}{'return ' if top else ''}{expr_text(seq.body)}")
    return lines


def function_text(func: Function, name: str = "") -> str:
    """``def name(params) -> ret:`` and the bindings, one per line."""
    params = ", ".join(f"{p.name}: {struct_info_text(p.struct_info)}" for p in func.params)
    ret = struct_info_text(func.ret_struct_info) if func.ret_struct_info is not None else "?"
    lines = ["@R.function", f"def {name or func.attrs.get('global_symbol', 'func')}({params}) -> {ret}:"]
    lines += _seq_lines(func.body, "    ", top=True)
    return "\n".join(lines)


def module_text(mod: IRModule) -> str:
    """Every Relax function in full; PrimFuncs by name only."""
    out = []
    for gv, func in mod.items():
        if isinstance(func, Function):
            out.append(function_text(func, gv.name_hint))
        elif isinstance(func, PrimFunc):
            out.append(f"# @T.prim_func {gv.name_hint}")
    return "\n\n".join(out)
