"""The TVMScript printer for Relax: functions, expressions and struct info as text the
Relax parser reads back (``from_source(mod.script())`` is structurally equal to ``mod``).

Choices, close to TVM's output:

* the signature spells symbolic dimensions as strings (``R.Tensor(("n", 784),
  dtype="float32")``, since Python evaluates a signature before any parser sees it)
  and the body declares them first (``n = T.int64()``);
* a binding carries its struct info (``lv: R.Tensor((1, 128), dtype="float32") =
  R.add(x, y)``) unless the value says it already: ``R.call_tir``-style calls with
  ``out_sinfo``, constants, shapes and scalars;
* inside a module, functions are ``cls.name`` (the body starts with ``cls = Module``);
* constants of at most ``inline_const`` (16) elements print inline as
  ``R.const([[1.0, 2.0]], "float32")``; larger ones print as TVM's
  ``metadata["relax.expr.Constant"][k]`` placeholders unless ``show_meta=True``,
  which prints them inline too (and makes the text parse again).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..eras import TODAY_ERA
from ..ir.global_info import vdevice_text
from ..ir.module import GlobalVar
from ..ir.node import Node
from ..ir.op import Op
from ..ir.structural import structural_equal
from ..relax.analysis.struct_info_analysis import tir_vars_in_struct_info
from ..relax.expr import (
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    Expr,
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
from ..relax.struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ..tir.expr import Add, FloorDiv, FloorMod, IntImm, Max, Min, Mul, PrimExpr, Sub
from ..tir.expr import Var as TirVar
from ..tir.index_map import IndexMap
from .printer import _HEADERS_T, _str, _TIRPrinter, register_printer, uses_tir_prefix

__all__ = ["RelaxPrinter"]

_HEADER_R = "# from minitvm.script import relax as R"
_INDENT = "    "
_DIM_INFIX = {Add: ("+", 1), Sub: ("-", 1), Mul: ("*", 2), FloorDiv: ("//", 2), FloorMod: ("%", 2)}
#: calls whose struct info is written in the call itself (no annotation needed)
_SELF_DESCRIBING = (Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm)


class RelaxPrinter:
    """Prints one Relax function (or expression); names are unique within it."""

    def __init__(self, in_module: bool = False, show_meta: bool = False, inline_const: int = 16):
        self.tp = _TIRPrinter()  # naming (shared by Relax and TIR variables) and PrimExprs
        self.tp.used.update({"cls": 1, "metadata": 1})  # names the printed text gives a meaning
        self.in_module = in_module
        self.show_meta = show_meta
        self.inline_const = inline_const
        self.metadata: list[Constant] = []
        self.uses_globals = False
        self.in_signature = False
        self.fragment = False

    # -- names ------------------------------------------------------------------------------
    def define(self, obj: Any, hint: str) -> str:
        return self.tp.define(obj, hint)

    def name_of(self, obj: Any) -> str:
        declaring = self.tp.free_decls is not None and isinstance(obj, Var) and id(obj) not in self.tp.names
        name = self.tp.name_of(obj)
        if declaring:  # verbose_expr: `a: R.Tensor(...)` once, after the dimensions it uses
            self.tp.free_decls.append(f"{name}: {self.sinfo(obj.struct_info)}")
        return name

    # -- dimensions and struct info --------------------------------------------------------------
    def dim(self, e: Any) -> str:
        text = self._dim(e, 0)
        if self.in_signature and not isinstance(e, IntImm):
            return _str(text)  # "n": a signature is evaluated by Python before parsing
        return text

    def _dim(self, e: Any, prec: int) -> str:
        if isinstance(e, IntImm):
            return str(e.value)
        if isinstance(e, TirVar):
            return self.name_of(e)
        if type(e) in _DIM_INFIX:
            op, p = _DIM_INFIX[type(e)]
            text = f"{self._dim(e.a, p)} {op} {self._dim(e.b, p + 1)}"
            return f"({text})" if p < prec else text
        if isinstance(e, (Min, Max)):
            return f"T.{type(e).__name__.lower()}({self._dim(e.a, 0)}, {self._dim(e.b, 0)})"
        return self.tp.expr(e)

    def shape(self, values: Any) -> str:
        dims = [self.dim(v) for v in values]
        return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"

    def sinfo(self, s: Any) -> str:
        if isinstance(s, TensorStructInfo):
            args = []
            values = s.shape_values
            if values is not None:
                args.append(self.shape(values))
            elif s.ndim != -1:
                args.append(f"ndim={s.ndim}")
            if s.dtype != "void":
                args.append(f'dtype="{s.dtype}"')
            if s.vdevice is not None:
                args.append(f'vdevice="{vdevice_text(s.vdevice)}"')
            return f"R.Tensor({', '.join(args)})" if args else "R.Tensor"
        if isinstance(s, ShapeStructInfo):
            if s.values is not None:
                return f"R.Shape([{', '.join(self.dim(v) for v in s.values)}])"
            return f"R.Shape(ndim={s.ndim})"  # ndim=-1 too, as TVM prints an unknown rank
        if isinstance(s, PrimStructInfo):
            if s.value is not None:
                value = self.dim(s.value) if s.value.dtype == "int64" else self.tp.expr(s.value)
                if s.value.dtype != "int64" and value.lstrip("-").isdigit():
                    # a bare literal reads back as int64: say the dtype
                    value = f"T.{s.value.dtype}({value})"
                return f"R.Prim(value={value})"
            return f'R.Prim("{s.dtype}")'
        if isinstance(s, TupleStructInfo):
            return f"R.Tuple({', '.join(self.sinfo(f) for f in s.fields)})" if s.fields else "R.Tuple"
        if isinstance(s, FuncStructInfo):
            ret = self.sinfo(s.ret)
            if s.params is None and s.derive_func is not None:
                derive = getattr(s.derive_func, "value", s.derive_func)
                return f"R.Callable(None, {ret}, {s.purity}, derive_func={_str(str(derive))})"
            if s.params is None:
                return f"R.Callable(None, {ret}, {s.purity})"
            params = ", ".join(self.sinfo(p) for p in s.params)
            if len(s.params) == 1:
                params += ","
            return f"R.Callable(({params}), {ret}, {s.purity})"
        if isinstance(s, ObjectStructInfo):
            return "R.Object"
        return repr(s)

    def out_sinfo(self, sinfo_args: tuple) -> str:
        s = sinfo_args[0]
        if isinstance(s, TupleStructInfo) and s.fields and all(isinstance(f, TensorStructInfo) for f in s.fields):
            return f"[{', '.join(self.sinfo(f) for f in s.fields)}]"
        return self.sinfo(s)

    # -- expressions -------------------------------------------------------------------------------
    def expr(self, e: Any) -> str:
        if isinstance(e, Var):
            return self.name_of(e)
        if isinstance(e, GlobalVar):
            if self.in_module and e.name_hint.isidentifier():
                self.uses_globals = True
                return f"cls.{e.name_hint}"
            if self.fragment:  # an expression printed alone names the function, as TVM's does
                return e.name_hint
            return f'I.GlobalVar("{e.name_hint}")'
        if isinstance(e, Constant):
            return self.constant(e)
        if isinstance(e, Tuple):
            fields = [self.expr(f) for f in e.fields]
            return f"({fields[0]},)" if len(fields) == 1 else f"({', '.join(fields)})"
        if isinstance(e, TupleGetItem):
            return f"{self.expr(e.tuple_value)}[{e.index}]"
        if isinstance(e, ShapeExpr):
            return f"R.shape([{', '.join(self.dim(v) for v in e.values)}])"
        if isinstance(e, PrimValue):
            v = e.value
            return f"R.prim_value({self.dim(v) if v.dtype == 'int64' else self.tp.expr(v)})" \
                if not (isinstance(v, IntImm) and v.dtype == "int32") else f"R.prim_value(T.int32({v.value}))"
        if isinstance(e, StringImm):
            return f"R.str({_str(e.value)})"
        if isinstance(e, DataTypeImm):
            return f'R.dtype("{e.value}")'
        if isinstance(e, ExternFunc):
            if getattr(e.struct_info, "derive_func", None) is not None:
                return f"R.ExternFunc({_str(e.global_symbol)}, {self.sinfo(e.struct_info)})"
            return f"R.ExternFunc({_str(e.global_symbol)})"
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, Op):
            return "R." + e.name.removeprefix("relax.")
        if isinstance(e, PrimExpr):
            return self.dim(e)
        return repr(e)

    def constant(self, c: Constant) -> str:
        arr = np.asarray(c.data)
        if arr.size > self.inline_const and not self.show_meta:
            self.metadata.append(c)
            return f'metadata["relax.expr.Constant"][{len(self.metadata) - 1}]'
        return f'R.const({_literal(arr.tolist())}, "{arr.dtype}")'

    def value(self, v: Any) -> str:
        """An attribute value (a keyword argument of an operator)."""
        if isinstance(v, (Expr, GlobalVar, PrimExpr)):
            return self.expr(v)
        if isinstance(v, StructInfo):
            return self.sinfo(v)
        if isinstance(v, IndexMap):  # relax.layout_transform's map; int32 indices said so, to read back
            text = v.script()
            dtypes = {i.dtype for i in v.initial_indices}
            if len(dtypes) == 1 and dtypes != {"int64"}:
                text = f'{text[:-1]}, index_dtype="{dtypes.pop()}")'
            return text
        if isinstance(v, str):
            return _str(v)
        if isinstance(v, (list, tuple)):
            inner = ", ".join(self.value(x) for x in v)
            return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{self.value(k)}: {self.value(x)}" for k, x in v.items()) + "}"
        return _literal(v)

    def call(self, c: Call) -> str:
        op = c.op
        args = [self.expr(a) for a in c.args]
        if isinstance(op, Op):
            if op.name == "relax.call_tir":
                text = f"R.call_tir({args[0]}, {args[1]}, out_sinfo={self.out_sinfo(c.sinfo_args)}"
                if len(args) > 2:
                    text += f", tir_vars={args[2]}"
                return text + ")"
            if op.name in ("relax.print", "relax.assert_op") and c.args:
                first = 1 if op.name == "relax.print" else 2
                values = args[first:]
                if op.name == "relax.print":
                    parts = list(values)
                else:
                    parts = [args[0]] + ([values[0]] if len(values) == 1 else
                                         [f"[{', '.join(values)}]"] if values else [])
                parts.append(f"format={args[first - 1]}")  # as TVM: R.str("...") for a string
                return f"R.{op.name.removeprefix('relax.')}({', '.join(parts)})"
            if op.name == "relax.call_tir_inplace":
                indices = ", ".join(str(i) for i in (c.attrs or {}).get("inplace_indices", ()))
                text = (f"R.call_tir_inplace({args[0]}, {args[1]}, out_sinfo={self.out_sinfo(c.sinfo_args)}, "
                        f"inplace_indices=[{indices}]")
                if len(args) > 2:
                    text += f", tir_vars={args[2]}"
                return text + ")"
            if op.name == "relax.call_tir_with_grad":
                attrs = c.attrs or {}
                text = (f"R.call_tir_with_grad({args[0]}, {args[1]}, out_sinfo={self.out_sinfo(c.sinfo_args)}, "
                        f"te_grad_name={_str(attrs.get('te_grad_name', ''))}")
                kwargs = attrs.get("te_grad_kwargs") or {}
                if kwargs:  # as TVM: only when there are some
                    text += ", te_grad_kwargs={" + ", ".join(f"{_str(k)}: {v}" for k, v in kwargs.items()) + "}"
                if len(args) > 2:
                    text += f", tir_vars={args[2]}"
                return text + ")"
            if op.name == "relax.call_dps_packed":
                return (f"R.call_dps_packed({_str(c.args[0].global_symbol)}, {args[1]}, "
                        f"out_sinfo={self.out_sinfo(c.sinfo_args)})")
            if op.name == "relax.call_py_func" and isinstance(c.args[0], StringImm):
                return (f"R.call_py_func({_str(c.args[0].value)}, {args[1]}, "
                        f"out_ty={self.out_sinfo(c.sinfo_args)})")
            if op.name == "relax.call_pure_packed":
                rest = "".join(f"{a}, " for a in args[1:])
                return (f"R.call_pure_packed({_str(c.args[0].global_symbol)}, {rest}"
                        f"sinfo_args={self.out_sinfo(c.sinfo_args)})")
            if op.name == "relax.call_inplace_packed" and isinstance(c.args[0], ExternFunc):
                rest = "".join(f"{a}, " for a in args[1:])
                indices = ", ".join(str(i) for i in c.attrs["inplace_indices"])
                return (f"R.call_inplace_packed({_str(c.args[0].global_symbol)}, {rest}inplace_indices=[{indices}], "
                        f"sinfo_args={self.out_sinfo(c.sinfo_args)})")
            if op.name == "relax.call_builtin_with_ctx" and isinstance(c.args[0], ExternFunc):
                sinfo = f", sinfo_args={self.out_sinfo(c.sinfo_args)}" if c.sinfo_args else ""
                return f"R.call_builtin_with_ctx({_str(c.args[0].global_symbol)}, {args[1]}{sinfo})"
            if op.name == "relax.hint_on_device":
                a = c.attrs
                scope = "" if a["memory_scope"] == "global" else f', {_str(a["memory_scope"])}'
                return f"R.hint_on_device({args[0]}, R.device({a['device_type']}, {a['index']}){scope})"
            if op.name == "relax.to_vdevice":
                return f'R.to_vdevice({args[0]}, "{vdevice_text(c.attrs["dst_vdevice"])}")'
            kwargs = [f"{k}={self.value(v)}" for k, v in (c.attrs or {}).items()]
            if c.sinfo_args:  # e.g. R.invoke_closure: the result's struct info is written out
                kwargs.append(f"sinfo_args=({', '.join(self.sinfo(s) for s in c.sinfo_args)},)")
            return f"{self.expr(op)}({', '.join(args + kwargs)})"
        if isinstance(op, ExternFunc) and getattr(op.struct_info, "derive_func", None) is not None:
            return f"{self.expr(op)}({', '.join(args)})"  # the callee says what the call gives
        if isinstance(op, ExternFunc):
            parts = [_str(op.global_symbol)] + args
            if c.sinfo_args:
                parts.append(f"sinfo_args={self.sinfo(c.sinfo_args[0])}")
            return f"R.call_packed({', '.join(parts)})"
        return f"{self.expr(op)}({', '.join(args)})"

    # -- bindings and blocks ---------------------------------------------------------------------------
    def binding(self, b: Binding, depth: int) -> list[str]:
        pad = _INDENT * depth
        if isinstance(b, MatchCast):
            value = self.expr(b.value)
            target = self.sinfo(b.struct_info)
            name = self.define(b.var, b.var.name)
            # as TVM (show_all_struct_info): the variable's struct info annotated, as other bindings
            return [f"{pad}{name}: {self.sinfo(b.var.struct_info)} = R.match_cast({value}, {target})"]
        if isinstance(b.value, If):
            return self.if_binding(b, depth)
        if isinstance(b.value, Function):  # a local function: a nested def named by its variable
            name = self.define(b.var, b.var.name)
            return [f"{pad}{ln}" if ln else ln for ln in self.function(b.value, name, local=True)]
        value = self.expr(b.value)
        if (isinstance(b.value, Call) and isinstance(b.value.op, Op) and _is_void(struct_info_of(b.value))
                and _is_void(b.var.struct_info) and getattr(self, "var_uses", {}).get(id(b.var), 0) == 1):
            # as TVM: a call returning nothing (R.print) prints as a statement; here only an
            # operator's (the parser types it again) whose variable is used nowhere else
            return [f"{pad}{value}"]
        name = self.define(b.var, b.var.name)
        return [f"{pad}{name}{self.annotation(b.var, b.value)} = {value}"]

    def annotation(self, var: Var, value: Any) -> str:
        sinfo = var.struct_info
        evident = isinstance(value, _SELF_DESCRIBING) or (isinstance(value, Call) and bool(value.sinfo_args))
        if evident and structural_equal(sinfo, struct_info_of(value)):
            return ""
        return f": {self.sinfo(sinfo)}"

    def if_binding(self, b: VarBinding, depth: int) -> list[str]:
        pad = _INDENT * depth
        node = b.value
        lines = [f"{pad}if {self.expr(node.cond)}:"]
        name = None
        for i, branch in enumerate((node.true_branch, node.false_branch)):
            if i == 1:
                lines.append(f"{pad}else:")
            self.tp.push()
            seq = branch if isinstance(branch, SeqExpr) else SeqExpr((), branch)
            for block in seq.blocks:
                lines += self.block(block, depth + 1)
            result = self.expr(seq.body)
            self.tp.pop()
            if name is None:
                name = self.define(b.var, b.var.name)
            lines.append(f"{pad}{_INDENT}{name}: {self.sinfo(b.var.struct_info)} = {result}")
        return lines

    def block(self, block: BindingBlock, depth: int) -> list[str]:
        if not isinstance(block, DataflowBlock):
            return [ln for b in block.bindings for ln in self.binding(b, depth)]
        lines = [f"{_INDENT * depth}with R.dataflow():"]
        for b in block.bindings:
            lines += self.binding(b, depth + 1)
        outputs = [self.name_of(b.var) for b in block.bindings if not isinstance(b.var, DataflowVar)]
        lines.append(f"{_INDENT * (depth + 1)}R.output({', '.join(outputs)})")
        return lines

    # -- functions --------------------------------------------------------------------------------------
    def function(self, f: Function, name: str, local: bool = False) -> list[str]:
        if not local:
            self.var_uses = _var_uses(f)
        self.tp.push()
        tir_vars = _function_tir_vars(f)
        for v in tir_vars:
            self.define(v, v.name)
        self.in_signature = True
        params = [f"{self.define(p, p.name)}: {self.sinfo(p.struct_info)}" for p in f.params]
        ret = f" -> {self.sinfo(f.ret_struct_info)}" if f.ret_struct_info is not None else ""
        self.in_signature = False
        options = []
        if not f.is_pure:
            options.append("pure=False")
        attrs = dict(f.attrs or {})
        if attrs.get("global_symbol") == name:
            del attrs["global_symbol"]
        elif "global_symbol" not in attrs and not local:  # local functions are always private
            options.append("private=True")
        deco = f"@R.function({', '.join(options)})" if options else "@R.function"
        head = [deco, f"def {name}({', '.join(params)}){ret}:"]
        body = [f"{_INDENT}{self.name_of(v)} = T.int64()" for v in tir_vars]
        if attrs:
            body.append(f"{_INDENT}R.func_attr({self.value(attrs)})")
        lines = []
        seq = f.body if isinstance(f.body, SeqExpr) else SeqExpr((), f.body)
        for block in seq.blocks:
            lines += self.block(block, 1)
        lines.append(f"{_INDENT}return {self.expr(seq.body)}")
        if self.uses_globals:
            body.append(f"{_INDENT}cls = Module")
        self.tp.pop()
        return head + body + lines


def _function_tir_vars(f: Function) -> list[TirVar]:
    """Symbolic dimensions a function uses, in order of first appearance."""
    seen: dict[int, TirVar] = {}

    def add(sinfo: Any) -> None:
        if isinstance(sinfo, StructInfo):
            for v in tir_vars_in_struct_info(sinfo):
                seen.setdefault(id(v), v)

    for p in f.params:
        add(p.struct_info)
    add(f.ret_struct_info)

    def walk(e: Any) -> None:
        if isinstance(e, SeqExpr):
            for block in e.blocks:
                for b in block.bindings:
                    add(b.var.struct_info)
                    if isinstance(b, MatchCast):
                        add(b.struct_info)
                    walk(b.value)
            walk(e.body)
        elif isinstance(e, If):
            walk(e.true_branch)
            walk(e.false_branch)
        elif isinstance(e, Call):
            for s in e.sinfo_args:
                add(s)
            for a in e.args:
                walk(a)
        elif isinstance(e, (ShapeExpr, PrimValue)):
            add(struct_info_of(e))

    walk(f.body)
    return [v for v in seen.values() if v.dtype == "int64"]


def _literal(v: Any) -> str:
    """A Python literal for a constant's element (nested lists kept)."""
    if isinstance(v, list):
        return "[" + ", ".join(_literal(x) for x in v) + "]"
    if isinstance(v, float) and not math.isfinite(v):
        return f'float("{v}")'
    return repr(v)


def _var_uses(root: Any) -> dict[int, int]:
    """How many times each Relax variable (by id) occurs under ``root``, its definition included."""
    uses: dict[int, int] = {}
    seen: set[int] = set()
    stack = [root]
    while stack:
        x = stack.pop()
        if isinstance(x, Var):
            uses[id(x)] = uses.get(id(x), 0) + 1
            continue
        if isinstance(x, (tuple, list)):
            stack.extend(x)
        elif isinstance(x, Node) and id(x) not in seen:
            seen.add(id(x))
            stack.extend(getattr(x, name) for name in type(x)._field_names)
    return uses


def _is_void(sinfo: Any) -> bool:
    """Whether ``sinfo`` is the empty tuple (TVM's void type)."""
    return isinstance(sinfo, TupleStructInfo) and not sinfo.fields


# -- entry points (registered with script()) --------------------------------------------------------------

def _print_function(f: Function, show_header: bool = True, name: str | None = None,
                    in_module: bool = False, show_meta: bool = False, era: str = TODAY_ERA, **_: Any) -> str:
    p = RelaxPrinter(in_module=in_module, show_meta=show_meta)
    name = name or (f.attrs or {}).get("global_symbol") or "main"
    lines = p.function(f, name)
    header = []
    if show_header:
        header = [_HEADERS_T[era]] if uses_tir_prefix(lines) else []  # as TVM: only when T is used
        header += [_HEADER_R, ""]
    if p.metadata and not in_module:
        header.append("# metadata: large constants are not shown; script(show_meta=True) prints them")
    return "\n".join(header + lines)


def _fragment_printer(verbose_expr: bool, show_meta: bool = False) -> RelaxPrinter:
    p = RelaxPrinter(show_meta=show_meta)
    p.fragment = True
    if verbose_expr:  # TVM's verbose_expr: the free variables are declared first, in order of use
        p.tp.free_decls = []
    return p


def _with_declarations(p: RelaxPrinter, lines: list[str]) -> str:
    return "\n".join((p.tp.free_decls or []) + lines)


def _print_expr(e: Expr, show_meta: bool = False, verbose_expr: bool = False, **_: Any) -> str:
    p = _fragment_printer(verbose_expr, show_meta)
    if isinstance(e, SeqExpr):
        lines = [ln for block in e.blocks for ln in p.block(block, 0)]
        return _with_declarations(p, lines + [p.expr(e.body)])
    if isinstance(e, If):
        return _with_declarations(p, p.if_binding(VarBinding(Var("result", struct_info_of(e)), e), 0))
    return _with_declarations(p, [p.expr(e)])


def _print_binding(b: Any, verbose_expr: bool = False, **_: Any) -> str:
    p = _fragment_printer(verbose_expr)
    return _with_declarations(p, p.block(b, 0) if isinstance(b, BindingBlock) else p.binding(b, 0))


def _print_sinfo(s: StructInfo, verbose_expr: bool = False, **_: Any) -> str:
    p = _fragment_printer(verbose_expr)
    return _with_declarations(p, [p.sinfo(s)])


register_printer(Function, _print_function, self_contained=True)
register_printer(Expr, _print_expr)
register_printer(Binding, _print_binding)
register_printer(BindingBlock, _print_binding)
register_printer(StructInfo, _print_sinfo)
