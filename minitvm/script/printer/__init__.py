"""The TVMScript printer: IR -> Python-like text that the parser reads back.

``script(node)`` prints PrimFuncs, IRModules, statements and expressions the way
TVM does (``T.grid`` for plain loop nests, ``T.axis.remap`` for blocks that map
loops one to one, the root block elided).  The round trip
``from_source(script(f))`` rebuilds a structurally equal ``f``, which is what the
tests check for every program they build.

Era: a PrimFunc prints in the era of TVM's names it was written in (``PrimFunc.era``: ``T.block``
and ``# from minitvm.script import tir as T`` for the MLC course's, TVM 0.20-0.23; ``T.sblock``,
``T.sblock_alloc_buffer`` and ``tirx`` for TVM 0.27's); a module in the one era its PrimFuncs
name; anything whose era nothing says in TVM 0.27's.  ``script(era="0.23")`` chooses.

Names: a variable prints under its own name unless another live variable already
uses it, then it gets ``_1``, ``_2`` ...; names are released when their scope
(loop, block, function) ends, as Python's own scoping of the reparsed text allows.
"""

from __future__ import annotations

import html
import io
import json
import keyword
import re
import sys
import tokenize
from typing import Any, Callable

from ...eras import ERAS, MLC_ERA, TODAY_ERA
from ...ir.deep import deep_on_overflow
from ...ir.global_info import _PRINTING
from ...ir.module import GlobalVar, IRModule
from ...ir.node import Node
from ...ir.notebook import in_notebook
from ...ir.structural import structural_equal
from ...ir.type import PointerType, PrimType, TupleType, Type
from ...te.reduction import CommReducer
from ...tir import op
from ...tir import op as _op
from ...tir.analysis import buffer_vars, free_scalar_vars
from ...tir.buffer import DEFAULT_ALIGNMENT, Buffer, BufferRegion
from ...tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    IterVar,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Range,
    Select,
    SizeVar,
    StringImm,
    Sub,
    Var,
)
from ...tir.function import PrimFunc, written_era
from ...tir.functor import method_name, post_order_visit
from ...tir.semantics import BY_OP
from ...tir.stmt import (
    Allocate,
    AllocateConst,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    MatchBufferRegion,
    SeqStmt,
    Stmt,
)

__all__ = ["script", "show", "to_html", "register_printer", "check_show_options"]

#: the TIR script module's header line, by era
_HEADERS_T = {MLC_ERA: "# from minitvm.script import tir as T", TODAY_ERA: "# from minitvm.script import tirx as T"}
_HEADER_T = _HEADERS_T[TODAY_ERA]
_HEADER_I = "# from minitvm.script import ir as I"
_HEADER_R = "# from minitvm.script import relax as R"

#: printers for node types defined in higher layers (Relax registers its own)
_EXTRA_PRINTERS: dict[type, Callable[[Any], str]] = {}


#: node types whose text defines every variable it uses (so verbose_expr changes nothing)
_SELF_CONTAINED: set[type] = set()


def register_printer(node_type: type, printer: Callable[[Any], str], self_contained: bool = False) -> None:
    """Let ``script`` print a node type this module does not know (e.g. Relax functions);
    ``self_contained``: its text defines every variable it uses (a function does); otherwise
    the printer gets ``verbose_expr=True`` when asked to declare the free variables first."""
    _EXTRA_PRINTERS[node_type] = printer
    if self_contained:
        _SELF_CONTAINED.add(node_type)


#: TVM's ``script()`` options that change nothing in minitvm's text at these values (the
#: ones it always prints with); another value raises NotImplementedError naming the option
_FIXED_OPTIONS: dict[str, Any] = {
    "ir_prefix": "I", "tir_prefix": "T", "relax_prefix": "R", "module_alias": "cls",
    "buffer_dtype": "float32", "int_dtype": "int32", "float_dtype": "void",
    "num_context_lines": -1, "syntax_sugar": True, "show_object_address": False, "show_all_struct_info": True,
    "path_to_underline": None, "path_to_annotate": None, "obj_to_underline": None, "obj_to_annotate": None,
}
#: options the printers act on (``in_module`` is internal: a function printed inside a module)
_PRINTER_OPTIONS = {"name", "show_meta", "in_module", "era", "verbose_expr"}


@deep_on_overflow  # printing is pure and frequent: a deep thread only for a deep tree
def script(node: Any, show_header: bool = True, *, indent_spaces: int = 4, print_line_numbers: bool = False,
           **options: Any) -> str:
    """TVMScript text of an IRModule, PrimFunc, statement or expression, with TVM's ``script()``
    options: ``name``, ``show_meta`` (Relax constants in full), ``indent_spaces``,
    ``print_line_numbers``; TVM's other options are accepted at their default values only.
    ``era`` ("0.23" or "0.27", minitvm's own) prints in that era's names, whatever the node's."""
    for key, value in list(options.items()):
        if key in _FIXED_OPTIONS:
            if value != _FIXED_OPTIONS[key]:
                raise NotImplementedError(f"script({key}={value!r}): minitvm's printer always prints with "
                                          f"{key}={_FIXED_OPTIONS[key]!r}")
            del options[key]
        elif key not in _PRINTER_OPTIONS:
            raise TypeError(f"script() got an unexpected option {key!r}")
    if options.get("era") is not None and options["era"] not in ERAS:
        raise ValueError(f"script(era={options['era']!r}): the eras are {', '.join(map(repr, ERAS))} "
                         "(the MLC course's names and TVM 0.27's; see minitvm.eras)")
    text = _as_imported(_script(node, show_header, **options))
    if indent_spaces != 4:
        text = "\n".join(_reindent(line, indent_spaces) for line in text.splitlines())
    if print_line_numbers:
        lines = text.splitlines()
        width = len(str(len(lines)))
        text = "\n".join(f"{k:>{width}} {line}" for k, line in enumerate(lines, 1))
    return text


def _as_imported(text: str) -> str:
    """The header lines name the package the user imports: ``tvm`` where ``import tvm`` is
    answered by minitvm (``benchmarks/tvm_tests.py``, TVM's tutorials), else ``minitvm``; the
    parser reads either."""
    if sys.modules.get("tvm") is not sys.modules.get("minitvm") or not text.startswith("# from minitvm."):
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("# from minitvm."):
            break
        lines[i] = "# from tvm." + line[len("# from minitvm."):]
    return "\n".join(lines)


_T_USE = re.compile(r"(?<![\w.])T\.")


def uses_tir_prefix(lines: list[str]) -> bool:
    """Whether printed ``lines`` name anything of ``T`` (so the header imports it)."""
    return any(_T_USE.search(line) for line in lines)


def _reindent(line: str, spaces: int) -> str:
    """A line printed with 4-space indentation, re-indented with ``spaces`` per level."""
    body = line.lstrip(" ")
    levels, extra = divmod(len(line) - len(body), 4)
    return " " * (levels * spaces + extra) + body


def node_era(node: Any) -> str:
    """The era ``node`` prints in: a PrimFunc's own, a module's PrimFuncs' one era, else TVM 0.27's."""
    return written_era(node)


def _script(node: Any, show_header: bool = True, **kwargs: Any) -> str:
    kwargs["era"] = kwargs.get("era") or node_era(node)
    verbose = kwargs.pop("verbose_expr", False)
    for cls in type(node).__mro__:
        if cls in _EXTRA_PRINTERS:
            if verbose and cls not in _SELF_CONTAINED:  # a fragment: its printer declares what is free
                kwargs["verbose_expr"] = True
            return _EXTRA_PRINTERS[cls](node, show_header=show_header, **kwargs)
    p = _TIRPrinter(kwargs["era"])
    if isinstance(node, IRModule):
        return p.print_module(node, show_header, **kwargs)
    if isinstance(node, PrimFunc):
        lines = [_HEADERS_T[p.era], ""] if show_header else []
        name = kwargs.get("name") or node.attrs.get("global_symbol") or "main"
        return "\n".join(lines + p.print_prim_func(node, name))
    if verbose:  # a fragment: first what its free variables and buffers are (TVM's verbose_expr)
        p.free_decls = []
        text = p.name_of(node) if isinstance(node, Buffer) else _fragment(p, node)
        return "\n".join(p.free_decls + [text])
    return _fragment(p, node)


def _fragment(p: "_TIRPrinter", node: Any) -> str:
    """A statement, expression, buffer, region, range or iterator as text."""
    if isinstance(node, Stmt):
        # a statement printed alone scopes nothing after it: as TVM, no concise form at its root
        # (``with T.LetStmt(v) as x:``, not ``x: T.int32 = v``)
        p.tail = False
        return "\n".join(p.print_stmt(node))
    if isinstance(node, (PrimExpr, CommReducer)):
        return p.expr(node)
    if isinstance(node, Buffer):
        return p.buffer_decl(node, "T.Buffer")
    if isinstance(node, BufferRegion):
        return p.region(node)
    if isinstance(node, MatchBufferRegion):  # as its line in a block: `B = T.match_buffer(A[...], shape)`
        source = p.region(node.source)
        decl = p.buffer_decl(node.buffer, "T.match_buffer", first_arg=source, default_dtype=True)
        return f"{p.define(node.buffer, node.buffer.name)} = {decl}"
    if isinstance(node, Range):  # an IR-level node: TVM prints it in the I namespace
        return f"I.Range({p.expr(node.min)}, {p.expr(_add(node.min, node.extent))})"
    if isinstance(node, IterVar):
        dom = f"T.Range({p.expr(node.dom.min)}, {p.expr(_add(node.dom.min, node.dom.extent))})"
        kind = _ITER_KIND_NAMES.get(node.iter_type, node.iter_type)
        return f"T.iter_var({p.expr(node.var)}, {dom}, {_str(kind)}, {_str(node.thread_tag)})"
    if isinstance(node, GlobalVar):
        return f"I.GlobalVar(\"{node.name_hint}\")"
    if isinstance(node, Type):
        return _type_text(node)
    return repr(node)


#: TVM's names of the iteration kinds (its IterVarType enum), as T.iter_var prints them
_ITER_KIND_NAMES = {"spatial": "DataPar", "reduce": "CommReduce", "thread": "ThreadIndex",
                    "scan": "Ordered", "opaque": "Opaque"}


def _target_config(t: Any) -> dict:
    """A Target as the dict T.target reads back: its kind, options, keys and host (as TVM prints)."""
    config = dict(t.export())
    config["keys"] = list(t.keys)
    if t.host is not None:
        config["host"] = _target_config(t.host)
    return config


def _let_vars(body: Any) -> list[Var]:
    """The variables the Let expressions of ``body`` bind, in order."""
    found: list[Var] = []
    post_order_visit(body, lambda n: found.append(n.var) if isinstance(n, Let) else None)
    return found


def _type_text(t: Type) -> str:
    """An IR type as TVMScript spells it: ``T.float32``, ``T.handle("int32", "global")``,
    ``T.Tuple(T.float32, T.int32)``."""
    if isinstance(t, PrimType):
        return f"T.{t.dtype}"
    if isinstance(t, PointerType):
        element = t.element_type
        void = isinstance(element, TupleType) and not element.fields
        args = [_str(element.dtype) if isinstance(element, PrimType) else '"void"' if void else _type_text(element)]
        if t.storage_scope:
            args.append(_str(t.storage_scope))
        return f"T.handle({', '.join(args)})"
    if isinstance(t, TupleType):
        return f"T.Tuple({', '.join(_type_text(f) for f in t.fields)})"
    return repr(t)


def _var_type(v: Var) -> str:
    """A variable's annotation: ``T.int32``, or a typed handle's ``T.handle("float32")``."""
    return _type_text(v.type_annotation) if v.type_annotation is not None else f"T.{v.dtype}"


def check_show_options(what: str, style: str | None, black_format: bool | None) -> None:
    """TVM's ``show()`` highlights with a pygments ``style`` and may format with black; minitvm
    has its own highlighter, so those options are refused, not ignored."""
    if style is not None:
        raise NotImplementedError(f"{what}(style={style!r}): minitvm highlights with its own colours, "
                                  "not a pygments style")
    if black_format:
        raise NotImplementedError(f"{what}(black_format=True): minitvm does not format with black")


def show(node: Any, style: str | None = None, black_format: bool | None = False, **kwargs: Any) -> None:
    """Print the text; in a Jupyter kernel, display it highlighted."""
    check_show_options("show", style, black_format)
    if in_notebook():
        from IPython.display import HTML, display  # IPython is optional: a kernel has it loaded

        display(HTML(to_html(node, **kwargs)))
        return
    print(script(node, **kwargs))


# -- expressions --------------------------------------------------------------------------------

#: an expression this many operators tall is printed in parts (see _TIRPrinter._expr)
_HOIST_HEIGHT = 32

# Python precedence, higher binds tighter
_PREC_OR, _PREC_AND, _PREC_NOT, _PREC_CMP = 1, 2, 3, 4
_PREC_ADD, _PREC_MUL, _PREC_UNARY, _PREC_ATOM = 9, 10, 11, 13

_INFIX: dict[type, tuple[str, int]] = {
    Add: ("+", _PREC_ADD), Sub: ("-", _PREC_ADD), Mul: ("*", _PREC_MUL),
    FloorDiv: ("//", _PREC_MUL), FloorMod: ("%", _PREC_MUL),
    EQ: ("==", _PREC_CMP), NE: ("!=", _PREC_CMP), LT: ("<", _PREC_CMP), LE: ("<=", _PREC_CMP),
    GT: (">", _PREC_CMP), GE: (">=", _PREC_CMP), And: ("and", _PREC_AND), Or: ("or", _PREC_OR),
}

#: the folding operator the parser builds each binary node's usual spelling with
_PARSED_WITH: dict[type, Callable[[Any, Any], Any]] = {
    Add: _op.add, Sub: _op.sub, Mul: _op.mul, Div: _op.div, Mod: _op.truncmod, FloorDiv: _op.floordiv,
    FloorMod: _op.floormod, Min: _op.min, Max: _op.max, EQ: _op.equal, NE: _op.not_equal, LT: _op.less,
    LE: _op.less_equal, GT: _op.greater, GE: _op.greater_equal, And: _op.logical_and, Or: _op.logical_or,
}


def _parser_folds(e: Any) -> bool:
    """Whether parsing ``e`` in its usual spelling would fold it (``x + 0`` reads back as ``x``):
    then it is printed as the node, ``T.Add(x, 0)``, and the round trip stays exact."""
    try:
        again = _PARSED_WITH[type(e)](e.a, e.b)
    except RecursionError:  # not a refusal: script() prints the tree again on a deep thread
        raise
    except Exception:  # the operator refuses these operands (a constant division by zero ...)
        return True
    return not (type(again) is type(e) and again.a is e.a and again.b is e.b)


#: float intrinsics printed as T.<name>(x) / T.<name>(x, y): every math row of the semantics table
#: (the value is the T helper's name)
_UNARY_CALLS = {f"tir.{n}": n for n in _op.MATH_INTRINSICS if BY_OP[f"tir.{n}"].arity == 1}
_UNARY_CALLS.update({f"tir.{n}": n for n in ("isnan", "popcount")})
_UNARY_CALLS["tir.fabs"] = "abs"
_BINARY_CALLS = {f"tir.{n}": n for n in _op.MATH_INTRINSICS if BY_OP[f"tir.{n}"].arity == 2}
#: integer intrinsics printed as T.<name>(...) (as TVM prints them); their T helpers fold
#: constants, so a call on constants only keeps the T.call_intrin spelling
_INT_CALLS = {f"tir.{n}": n for n in ("shift_left", "shift_right", "bitwise_and", "bitwise_or", "bitwise_xor",
                                      "bitwise_not")}
_UNARY_CALLS["tir.likely"] = "likely"
_UNARY_CALLS["tir.ret"] = "ret"

_RESERVED = {"T", "I", "R", "range", "True", "False", "None"} | set(keyword.kwlist)


def _add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return op.add(a, b)


def _is_zero(e: Any) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def _is_plain_int(e: Any) -> bool:
    """Printed as a bare Python int literal."""
    return isinstance(e, IntImm) and e.dtype == "int32"


def _is_true(e: Any) -> bool:
    return isinstance(e, IntImm) and e.dtype == "bool" and e.value == 1


def _str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


class _TIRPrinter:
    def __init__(self, era: str = TODAY_ERA) -> None:
        self.era = era  # whose names blocks print with: T.block (0.23) or T.sblock (0.27)
        self.sblock = "T.block" if era == MLC_ERA else "T.sblock"
        self.names: dict[int, str] = {}
        self.scopes: list[list[int]] = [[]]  # ids defined in each open scope
        self.used: dict[str, int] = {}  # live name -> how many live objects hold it (0 or 1)
        self.keep: list[Any] = []
        self.loops: dict[int, For] = {}  # live loop var id -> its loop (for T.axis.remap)
        self.indent = 0
        # whether the statement being printed ends its body, so a statement scoping "the rest
        # of the body" (T.launch_thread, T.attr) may print without a `with`
        self.tail = True
        # `name = T.meta_var(...)` lines the statement being printed needs first (None: outside
        # a statement, where nothing is hoisted); see _expr
        self.hoisted: list[str] | None = None
        self.height = 0  # the tallest operand printed so far of the expression being printed
        # with verbose_expr=True, the declarations of free variables and buffers, in order
        self.free_decls: list[str] | None = None

    # -- naming ------------------------------------------------------------------------------
    def define(self, obj: Any, hint: str) -> str:
        base = re.sub(r"\W", "_", hint or "v")
        if not base or base[0].isdigit():
            base = "v_" + base
        name, k = base, 0
        while name in self.used or name in _RESERVED:
            k += 1
            name = f"{base}_{k}"
        self.used[name] = 1
        self.names[id(obj)] = name
        self.scopes[-1].append(id(obj))
        self.keep.append(obj)
        if isinstance(obj, Buffer) and id(obj.data) not in self.names:
            # the buffer's data pointer (in T.tvm_access_ptr, T.call_extern ...) reads `A.data`
            self.names[id(obj.data)] = f"{name}.data"
            self.scopes[-1].append(id(obj.data))
        return name

    def name_of(self, obj: Any) -> str:
        name = self.names.get(id(obj))
        if name is None:  # a free variable: name it for the rest of the text
            scope, self.scopes = self.scopes, self.scopes[:1]
            name = self.define(obj, getattr(obj, "name", "v"))
            self.scopes = scope
            if self.free_decls is not None:
                self._declare_free(obj, name)
        return name

    def _declare_free(self, obj: Any, name: str) -> None:
        """``a = T.int32()`` / ``A = T.Buffer((128,))`` for a free variable or buffer, in order of
        first use (TVM's ``verbose_expr=True``); a buffer's own free shape variables come first."""
        if isinstance(obj, Buffer):
            decl = self.buffer_decl(obj, "T.Buffer", default_dtype=True)
        elif isinstance(obj, Var):
            size = "is_size_var=True" if isinstance(obj, SizeVar) else ""
            decl = f"T.{obj.dtype}({size})"
        else:
            return
        self.free_decls.append(f"{name} = {decl}")

    def push(self) -> None:
        self.scopes.append([])

    def pop(self) -> None:
        for oid in self.scopes.pop():
            name = self.names.pop(oid, None)
            self.used.pop(name, None)

    # -- expressions -------------------------------------------------------------------------
    def expr(self, e: Any) -> str:
        return self._expr(e)[0]

    def _paren(self, e: Any, min_prec: int) -> str:
        text, prec = self._expr(e)
        return f"({text})" if prec < min_prec else text

    def _expr(self, e: Any) -> tuple[str, int]:
        outer, self.height = self.height, 0
        text, prec = self._expr_node(e)
        height = self.height + 1
        if height >= _HOIST_HEIGHT and self.hoisted is not None:
            # Python refuses text nested more than 200 parentheses deep: a tall expression is
            # printed in parts, each bound by T.meta_var (a parse-time name, no LetStmt), so
            # that it reads back as the same tree
            name = self.define(object(), "d")
            self.hoisted.append(f"{name} = T.meta_var({text})")
            text, prec, height = name, _PREC_ATOM, 1
        self.height = max(outer, height)
        return text, prec

    def _expr_node(self, e: Any) -> tuple[str, int]:
        if isinstance(e, Var):
            return self.name_of(e), _PREC_ATOM
        if isinstance(e, IntImm):
            if e.dtype == "int32":
                return str(e.value), (_PREC_UNARY if e.value < 0 else _PREC_ATOM)
            if e.dtype == "bool":
                return f"T.bool({bool(e.value)})", _PREC_ATOM
            return f"T.{e.dtype}({e.value})", _PREC_ATOM
        if isinstance(e, FloatImm):
            value = repr(float(e.value))
            if value in ("inf", "-inf", "nan"):
                value = f'"{value}"'
            return f"T.{e.dtype}({value})", _PREC_ATOM
        if isinstance(e, StringImm):
            return _str(e.value), _PREC_ATOM
        if (isinstance(e, Sub) and isinstance(e.a, (IntImm, FloatImm)) and e.a.value == 0
                and e.a.dtype == e.b.dtype):  # how op.neg spells -x
            return f"-{self._paren(e.b, _PREC_UNARY)}", _PREC_UNARY
        if type(e) in _PARSED_WITH and _parser_folds(e):
            return f"T.{type(e).__name__}({self.expr(e.a)}, {self.expr(e.b)})", _PREC_ATOM
        if type(e) in _INFIX:
            op, prec = _INFIX[type(e)]
            right_min = prec + 1 if prec != _PREC_CMP else _PREC_CMP + 1
            left_min = prec if prec != _PREC_CMP else _PREC_CMP + 1
            left = self._paren(e.a, left_min)
            if _is_plain_int(e.a) and _is_plain_int(e.b):
                # two bare ints would be computed by Python (`2 // 0` fails, `2 < 3` is a bool)
                left = f"T.int32({e.a.value})"
            return f"{left} {op} {self._paren(e.b, right_min)}", prec
        if isinstance(e, Div):
            if e.dtype.startswith("float"):
                return f"{self._paren(e.a, _PREC_MUL)} / {self._paren(e.b, _PREC_MUL + 1)}", _PREC_MUL
            return f"T.Div({self.expr(e.a)}, {self.expr(e.b)})", _PREC_ATOM  # an integer Div, as TVM
        if isinstance(e, Mod):
            return f"T.truncmod({self.expr(e.a)}, {self.expr(e.b)})", _PREC_ATOM
        if isinstance(e, (Min, Max)):
            return f"T.{type(e).__name__.lower()}({self.expr(e.a)}, {self.expr(e.b)})", _PREC_ATOM
        if isinstance(e, Not):
            return f"not {self._paren(e.a, _PREC_NOT)}", _PREC_NOT
        if isinstance(e, Cast):
            return f'T.Cast("{e.dtype}", {self.expr(e.value)})', _PREC_ATOM
        if isinstance(e, Select):
            return (f"T.Select({self.expr(e.condition)}, {self.expr(e.true_value)}, "
                    f"{self.expr(e.false_value)})"), _PREC_ATOM
        if isinstance(e, BufferLoad):
            if e.predicate is not None:  # a predicated vector load, as TVM prints it
                indices = ", ".join(self.expr(i) for i in e.indices)
                return (f"{self.name_of(e.buffer)}.vload([{indices}], predicate={self.expr(e.predicate)})",
                        _PREC_ATOM)
            return f"{self.name_of(e.buffer)}[{self.indices(e.indices)}]", _PREC_ATOM
        if isinstance(e, Ramp):
            return f"T.Ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})", _PREC_ATOM
        if isinstance(e, Broadcast):
            return f"T.Broadcast({self.expr(e.value)}, {e.lanes})", _PREC_ATOM
        if isinstance(e, Call):
            return self._call(e), _PREC_ATOM
        if isinstance(e, Let):
            # TVM's T.Let binds a variable declared before it (``x = T.int32()``), as a free one
            value = self.expr(e.value)
            var = self.name_of(e.var)
            body = self.expr(e.body)
            return f"T.Let({body}, where={{{var}: {value}}})", _PREC_ATOM
        if isinstance(e, Range):
            return f"{self.expr(e.min)}:{self.expr(_add(e.min, e.extent))}", _PREC_ATOM
        if isinstance(e, (int, float, bool, str)) or e is None:
            return self.value(e), _PREC_ATOM
        if isinstance(e, CommReducer):
            return self._comm_reducer(e), _PREC_ATOM
        return repr(e), _PREC_ATOM

    def _comm_reducer(self, r: CommReducer) -> str:
        """``T.comm_reducer(lambda x, y: x + y, [T.float32(0.0)])``: its parameters named in a scope
        of their own."""
        identity = ", ".join(self.expr(e) for e in r.identity_element)
        self.push()
        try:
            params = ", ".join(self.define(v, v.name) for v in (*r.lhs, *r.rhs))
            results = [self.expr(x) for x in r.result]
        finally:
            self.pop()
        body = results[0] if len(results) == 1 else f"({', '.join(results)})"
        return f"T.comm_reducer(lambda {params}: {body}, [{identity}])"

    def _call(self, e: Call) -> str:
        args = [self.expr(a) for a in e.args]
        if e.op in _UNARY_CALLS and len(e.args) == 1 and e.args[0].dtype == e.dtype:
            return f"T.{_UNARY_CALLS[e.op]}({args[0]})"
        if e.op == "tir.reinterpret" and len(args) == 1:
            return f"T.reinterpret({_str(e.dtype)}, {args[0]})"
        if e.op == "tir.isnan" and e.dtype == "bool" and len(args) == 1:
            return f"T.isnan({args[0]})"
        if e.op in _BINARY_CALLS and len(args) == 2 and e.args[0].dtype == e.dtype:
            return f"T.{_BINARY_CALLS[e.op]}({args[0]}, {args[1]})"
        if (e.op in _INT_CALLS and all(a.dtype == e.dtype for a in e.args)
                and not all(isinstance(a, IntImm) for a in e.args)):
            return f"T.{_INT_CALLS[e.op]}({', '.join(args)})"
        if (e.op == "tir.if_then_else" and len(args) == 3 and e.args[1].dtype == e.dtype
                and e.args[1].dtype == e.args[2].dtype):
            return f"T.if_then_else({', '.join(args)})"
        if e.op in ("tir.call_extern", "tir.call_llvm_pure_intrin") and e.args and isinstance(e.args[0], StringImm):
            return f'T.{e.op.removeprefix("tir.")}("{e.dtype}", {", ".join(args)})'
        if e.op == "tir.tvm_call_packed" and e.args and isinstance(e.args[0], StringImm):
            # as TVM prints it (both eras parse T.call_packed and T.tvm_call_packed)
            return f"T.call_packed({', '.join(args + ([] if e.dtype == 'int32' else [f'dtype={_str(e.dtype)}']))})"
        builtin = _op.BUILTIN_OPS.get(e.op)
        if builtin is not None and _builtin_dtype_readable(builtin, e):
            # as TVM prints builtins: the dtype only where the builtin takes it as an argument
            if builtin.dtype == "first":
                args.insert(0, _str(e.dtype))
            elif builtin.dtype == "last":
                args.append(_str(e.dtype))
            return f"T.{builtin.name}({', '.join(args)})"
        return f'T.call_intrin("{e.dtype}", {_str(e.op)}, {", ".join(args)})'.replace(", )", ")")

    def indices(self, indices: tuple) -> str:
        if not indices:
            return "()"  # a 0-d buffer: A[()]
        return ", ".join(self._index(i) for i in indices)

    def _index(self, i: Any) -> str:
        """An index; a vector one with a constant stride as TVM prints it, a slice
        (``A[i:i + 4]``, ``A[i:i + 8:2]``) that reads back as the same T.Ramp."""
        if isinstance(i, Ramp) and isinstance(i.stride, IntImm):
            stop = _add(i.base, _op.mul(IntImm(i.stride.dtype, i.lanes), i.stride))
            step = "" if i.stride.value == 1 else f":{self.expr(i.stride)}"
            return f"{self.expr(i.base)}:{self.expr(stop)}{step}"
        return self.expr(i)

    def value(self, v: Any) -> str:
        """A Python value inside an attribute dict."""
        if type(v).__name__ == "Target" and hasattr(v, "export"):  # (a Target: script sits below target)
            return f"T.target({self.value(_target_config(v))})"
        if isinstance(v, IntImm) and v.dtype != "bool":
            return f"T.{v.dtype}({v.value})"  # typed, so it parses back as an IntImm, not an int
        if isinstance(v, Node):
            return self.expr(v) if isinstance(v, PrimExpr) else script(v)
        if isinstance(v, str):
            return _str(v)
        if isinstance(v, dict):
            return "{" + ", ".join(f"{self.value(k)}: {self.value(x)}" for k, x in v.items()) + "}"
        if isinstance(v, (list, tuple)):
            inner = ", ".join(self.value(x) for x in v)
            return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
        return repr(v)

    def region(self, r: BufferRegion) -> str:
        parts = []
        for rng in r.region:
            if isinstance(rng.extent, IntImm) and rng.extent.value == 1 and rng.extent.dtype == rng.min.dtype:
                parts.append(self.expr(rng.min))
            else:
                parts.append(self._expr(rng)[0])
        return f"{self.name_of(r.buffer)}[{', '.join(parts) or '()'}]"

    def shape(self, shape: tuple) -> str:
        items = [self.expr(s) for s in shape]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    def buffer_decl(self, b: Buffer, ctor: str, first_arg: str | None = None,
                    default_dtype: bool = False) -> str:
        args = [first_arg] if first_arg is not None else []
        args.append(self.shape(b.shape))
        if not (default_dtype and b.dtype == "float32"):
            args.append(f'"{b.dtype}"')
        if b.strides:
            args.append(f"strides={self.shape(b.strides)}")
        if not (isinstance(b.elem_offset, IntImm) and b.elem_offset.value == 0
                and b.elem_offset.dtype == "int32"):
            args.append(f"elem_offset={self.expr(b.elem_offset)}")
        if b.scope != "global":
            args.append(f'scope="{b.scope}"')
        if b.data_alignment != DEFAULT_ALIGNMENT:
            args.append(f"align={b.data_alignment}")
        if b.offset_factor != 1:
            args.append(f"offset_factor={b.offset_factor}")
        if b.axis_separators:
            args.append(f"axis_separators={list(b.axis_separators)}")
        return f"{ctor}({', '.join(args)})"

    # -- functions and modules ---------------------------------------------------------------
    def print_module(self, mod: IRModule, show_header: bool, **kwargs: Any) -> str:
        has_other = any(not isinstance(f, PrimFunc) for f in mod.functions.values())
        lines = ["@I.ir_module", "class Module:"]
        if mod.attrs:
            lines.append(f"    I.module_attrs({self.value(dict(mod.attrs))})")
        if mod.global_infos:
            infos = ", ".join(f'"{k}": [{", ".join(repr(i) for i in v)}]' for k, v in mod.global_infos.items())
            lines.append(f"    I.module_global_infos({{{infos}}})")
        _PRINTING.append(mod.global_infos)
        try:
            self._print_functions(mod, lines, kwargs)
        finally:
            _PRINTING.pop()
        if show_header:  # as TVM: the tir line only when the text uses T (a Relax-only module may not)
            t_line = [_HEADERS_T[self.era]] if uses_tir_prefix(lines) else []
            lines = [_HEADER_I, *t_line] + ([_HEADER_R] if has_other else []) + [""] + lines
        return "\n".join(lines)

    def _print_functions(self, mod: IRModule, lines: list, kwargs: dict) -> None:
        first = True
        for gv, func in mod.functions.items():
            if not first:
                lines.append("")
            first = False
            if isinstance(func, PrimFunc):
                body = _TIRPrinter(self.era).print_prim_func(func, gv.name_hint)
            elif not hasattr(func, "params"):  # a Relax ExternFunc: `name = R.ExternFunc("symbol")`
                body = [f"{gv.name_hint} = {script(func, show_header=False)}"]
            else:
                # other dialects (Relax) print their functions; `in_module` lets them write
                # `cls.name` for the module's GlobalVars
                body = script(func, show_header=False, name=gv.name_hint, in_module=True,
                              **kwargs).splitlines()
            lines += ["    " + ln if ln else "" for ln in body]
        if first:
            lines.append("    pass")

    def print_prim_func(self, f: PrimFunc, name: str) -> list[str]:
        self.push()
        attrs = dict(f.attrs)
        if self.era == TODAY_ERA:  # TVM 0.27 spells TIR's attribute keys tirx.<name> (tir.function.FuncAttrs)
            attrs = {"tirx." + k[4:] if isinstance(k, str) and k.startswith("tir.") else k: v for k, v in attrs.items()}
        symbol = attrs.get("global_symbol")
        if symbol == name:
            del attrs["global_symbol"]
        decorator = "@T.prim_func" if symbol is not None else "@T.prim_func(private=True)"
        params, matched = [], []
        scalar_params = {id(p) for p in f.params if p not in f.buffer_map}
        printed_scalars: set[int] = set()
        for p in f.params:
            buffer = f.buffer_map.get(p)
            if buffer is None:
                params.append(f"{self.define(p, p.name)}: {_var_type(p)}")
                printed_scalars.add(id(p))
            elif all(id(v) in printed_scalars for v in buffer_vars(buffer)):
                decl = self.buffer_decl(buffer, "T.Buffer")
                params.append(f"{self.define(buffer, buffer.name)}: {decl}")
            else:
                # a shape with variables defined later (or nowhere else): TVM's dynamic-shape
                # spelling, a T.handle parameter plus T.match_buffer in the body
                hint = p.name if p.name != buffer.name else (
                    p.name.lower() if p.name.lower() != p.name else p.name + "_handle")
                params.append(f"{self.define(p, hint)}: T.handle")
                matched.append((p, buffer))
        returns = f" -> {_type_text(f.ret_type)}" if isinstance(f.ret_type, PrimType) else ""
        lines = [decorator, f"def {name}({', '.join(params)}){returns}:"]
        self.indent = 1
        if attrs:
            lines.append(self._line(f"T.func_attr({self.value(attrs)})"))
        shape_vars = [v for _, b in matched for v in buffer_vars(b) if id(v) not in scalar_params]
        for v in shape_vars:
            if id(v) not in self.names:
                lines.append(self._line(f"{self.define(v, v.name)} = T.{v.dtype}()"))
        # scalars the body uses but nothing defines (TVM prints them the same way)
        for v in free_scalar_vars(f, {id(x) for x in shape_vars} | scalar_params):
            if id(v) not in self.names:
                lines.append(self._line(f"{self.define(v, v.name)} = T.{v.dtype}()"))
        for v in _let_vars(f.body):  # T.Let's variables are declared before use, as in TVM
            if id(v) not in self.names:
                lines.append(self._line(f"{self.define(v, v.name)} = T.{v.dtype}()"))
        for p, buffer in matched:
            decl = self.buffer_decl(buffer, "T.match_buffer", first_arg=self.name_of(p))
            lines.append(self._line(f"{self.define(buffer, buffer.name)} = {decl}"))
        lines += self._declare_views(f)
        for iv in _env_threads(f.body):
            dtype = "" if iv.var.dtype == "int32" else f", {_str(iv.var.dtype)}"
            lines.append(self._line(f"{self.define(iv.var, iv.var.name)} = T.env_thread({_str(iv.thread_tag)}{dtype})"))
        body = f.body
        if self._root_elidable(body):
            lines.append(self._line(f'# with {self.sblock}("root"):'))
            for b in body.block.alloc_buffers:
                lines.append(self._alloc_line(b))
            body = body.block.body
        lines += self.print_stmt(body)
        self.indent = 0
        self.pop()
        return lines

    def _declare_views(self, f: PrimFunc) -> list[str]:
        """``A_1 = T.Buffer((16384,), data=A.data)`` for buffers the body uses but never declares.

        Lowering (flattening) makes such views of the parameters' memory; TVM declares
        them the same way at the top of the function.  Views of ``T.allocate`` /
        ``T.allocate_const`` storage are declared where that storage is (``_views_of``).
        """
        consts: set[int] = set()  # storage allocated in the body: its views are declared there

        def storage(n: Any) -> None:
            if isinstance(n, AllocateConst):
                consts.add(id(n.buffer_var))
            elif isinstance(n, Allocate):
                consts.add(id(n.buffer.data))
            elif isinstance(n, LetStmt) and n.var.dtype == "handle":  # a pointer bound in the body
                consts.add(id(n.var))
            elif isinstance(n, Block):  # views of a block's buffers are declared in the block
                consts.update(id(b.data) for b in n.alloc_buffers)
                consts.update(id(m.buffer.data) for m in n.match_buffers)

        post_order_visit(f.body, storage)
        owners = {id(b.data): b for b in f.buffer_map.values()}
        lines = []
        for b in _undeclared_buffers(f.body, f.buffer_map.values()):
            if id(b.data) in consts:
                continue
            owner = owners.get(id(b.data))
            data = f"{self.name_of(owner)}.data" if owner is not None else self.name_of(b.data)
            decl = self.buffer_decl(b, "T.Buffer")
            lines.append(self._line(f"{self.define(b, b.name)} = {decl[:-1]}, data={data})"))
        return lines

    @staticmethod
    def _root_elidable(body: Any) -> bool:
        """The parser re-creates an implicit root block exactly when this holds."""
        if not isinstance(body, BlockRealize):
            return False
        b = body.block
        if (b.name_hint != "root" or body.iter_values or b.iter_vars or b.reads or b.writes
                or b.init is not None or b.annotations or b.match_buffers or not _is_true(body.predicate)):
            return False
        inner = b.body
        # a lone opaque block inside would be taken for the root itself when reparsed
        if isinstance(inner, BlockRealize) and not inner.iter_values and not b.alloc_buffers:
            return False
        return bool(b.alloc_buffers) or _has_block(inner)

    # -- statements --------------------------------------------------------------------------
    def _line(self, text: str) -> str:
        return "    " * self.indent + text

    def _alloc_line(self, b: Buffer) -> str:
        decl = self.buffer_decl(b, "T.sblock_alloc_buffer" if self.era == TODAY_ERA else "T.alloc_buffer",
                                default_dtype=True)
        return self._line(f"{self.define(b, b.name)} = {decl}")

    def print_stmt(self, s: Stmt) -> list[str]:
        method = getattr(self, method_name(type(s)), None)  # visit_<node>_, as tir.functor names it
        if method is None:
            return [self._line(f"# {type(s).__name__}: {s!r}")]
        outer, self.hoisted = self.hoisted, []
        try:
            lines = method(s)
            return [self._line(h) for h in self.hoisted] + lines
        finally:
            self.hoisted = outer

    def _body(self, s: Stmt) -> list[str]:
        self.indent += 1
        self.push()
        tail, self.tail = self.tail, True
        try:
            return self.print_stmt(s)
        finally:
            self.tail = tail
            self.pop()
            self.indent -= 1

    def visit_seq_stmt_(self, s: SeqStmt) -> list[str]:
        lines: list[str] = []
        tail = self.tail
        for k, x in enumerate(s.seq):
            self.tail = tail and k == len(s.seq) - 1
            lines += self.print_stmt(x)
        self.tail = tail
        return lines

    def visit_attr_stmt_(self, s: AttrStmt) -> list[str]:
        value = self.expr(s.value)
        node = s.node
        target = None
        if s.attr_key in ("thread_extent", "virtual_thread") and isinstance(node, IterVar):
            if id(node.var) in self.names:  # declared by T.env_thread at the top
                head = f"T.launch_thread({self.name_of(node.var)}, {value})"
            else:
                head = f"T.launch_thread({_str(node.thread_tag)}, {value})"
                target = node.var
        else:
            if isinstance(node, Buffer):
                node_text = self.name_of(node)
            elif isinstance(node, StringImm):
                node_text = _str(node.value)
            else:
                node_text = self.expr(node)
            head = f"T.attr({node_text}, {_str(s.attr_key)}, {value})"
        if self.tail:  # concise, as TVM: the statement scopes the rest of this body
            if target is not None:
                head = f"{self.define(target, target.name)} = {head}"
            return [self._line(head)] + self.print_stmt(s.body)
        self.indent += 1
        self.push()
        tail, self.tail = self.tail, True
        try:
            if target is not None:
                head = f"{head} as {self.define(target, target.name)}"
            body = self.print_stmt(s.body)
        finally:
            self.tail = tail
            self.pop()
            self.indent -= 1
        return [self._line(f"with {head}:")] + body

    def visit_buffer_store_(self, s: BufferStore) -> list[str]:
        if s.predicate is not None:  # a predicated vector store, as TVM prints it
            indices = ", ".join(self.expr(i) for i in s.indices)
            return [self._line(f"{self.name_of(s.buffer)}.vstore([{indices}], {self.expr(s.value)}, "
                               f"predicate={self.expr(s.predicate)})")]
        return [self._line(f"{self.name_of(s.buffer)}[{self.indices(s.indices)}] = {self.expr(s.value)}")]

    def visit_evaluate_(self, s: Evaluate) -> list[str]:
        if isinstance(s.value, Call) and s.value.op == "tir.ret":  # TVM prints T.ret(x) as Python's return
            return [self._line(f"return {self.expr(s.value.args[0])}")]
        text = self.expr(s.value)
        if isinstance(s.value, Call) and text.startswith("T."):  # a call reads as a statement, as TVM prints it
            return [self._line(text)]
        return [self._line(f"T.evaluate({text})")]

    def visit_let_stmt_(self, s: LetStmt) -> list[str]:
        value = self.expr(s.value)
        if not self.tail:  # more statements follow: the let scopes only its own body
            views = (lambda name: self._views_of(s.body, s.var, name, "T.Buffer")) if s.var.dtype == "handle" else None
            return self._scoped(lambda: self.define(s.var, s.var.name),
                                lambda name: f"with T.LetStmt({value}) as {name}:", s.body, views)
        name = self.define(s.var, s.var.name)
        lines = [self._line(f"{name}: {_var_type(s.var)} = {value}")]
        if s.var.dtype == "handle":  # views of the memory this pointer names are declared after it
            lines += self._views_of(s.body, s.var, name, "T.Buffer")
        return lines + self.print_stmt(s.body)

    def _scoped(self, define: Callable[[], str], head: Callable[[str], str], body: Stmt,
                prelude: Callable[[str], list[str]] | None = None) -> list[str]:
        """``with <head> as name:`` and the indented body (after ``prelude`` lines), the name
        scoped to it."""
        self.indent += 1
        self.push()
        tail, self.tail = self.tail, True
        try:
            name = define()
            lines = [self._line(head(name))]
            if prelude is not None:
                lines += prelude(name)
            lines += self.print_stmt(body)
        finally:
            self.tail = tail
            self.pop()
            self.indent -= 1
        lines[0] = lines[0][4:]  # the `with` line sits at the outer indentation
        return lines

    def visit_assert_stmt_(self, s: AssertStmt) -> list[str]:
        head = f"{self.expr(s.condition)}, {_str(s.message)}"
        if not self.tail:  # more statements follow: the assertion guards only its own body
            return self._scoped(lambda: "", lambda _: f"with T.Assert({head}):", s.body)
        return [self._line(f"assert {head}")] + self.print_stmt(s.body)

    def visit_allocate_(self, s: Allocate) -> list[str]:
        b = s.buffer
        args = [f"[{', '.join(self.expr(x) for x in b.shape)}]", f'"{b.dtype}"', f'"{b.scope}"']  # a list, as TVM
        if not self.tail:  # more statements follow: the storage lives for its own body only
            return self._scoped(lambda: self.define(b, b.name),
                                lambda name: f"with T.allocate({', '.join(args)}) as {name}:", s.body,
                                lambda name: self._views_of(s.body, b.data, name))
        name = self.define(b, b.name)
        lines = [self._line(f"{name} = T.allocate({', '.join(args)})")]
        return lines + self._views_of(s.body, b.data, name) + self.print_stmt(s.body)

    def _views_of(self, body: Stmt, data: Var, source: str, spelling: str = "T.decl_buffer") -> list[str]:
        """``V = T.decl_buffer(shape, dtype, data=source)`` for the buffers ``body`` uses that view
        the storage ``data`` (declared here, where the storage exists)."""
        lines = []
        for b in _undeclared_buffers(body, ()):
            if b.data is data and id(b) not in self.names:
                decl = self.buffer_decl(b, spelling)
                lines.append(self._line(f"{self.define(b, b.name)} = {decl[:-1]}, data={source})"))
        return lines

    def visit_allocate_const_(self, s: AllocateConst) -> list[str]:
        extents = ", ".join(self.expr(e) for e in s.extents)
        name = self.define(s.buffer_var, s.buffer_var.name)
        args = [self.value(list(s.data)), _str(s.dtype), f"[{extents}]"]
        if s.annotations:
            args.append(f"annotations={self.value(dict(s.annotations))}")
        lines = [self._line(f"{name} = T.allocate_const({', '.join(args)})")]
        return lines + self._views_of(s.body, s.buffer_var, name) + self.print_stmt(s.body)

    def visit_if_then_else_(self, s: IfThenElse) -> list[str]:
        lines = [self._line(f"if {self.expr(s.condition)}:")] + self._body(s.then_case)
        if s.else_case is not None:
            lines += [self._line("else:")] + self._body(s.else_case)
        return lines

    def _is_grid_loop(self, s: Any) -> bool:
        return (isinstance(s, For) and s.kind == ForKind.SERIAL and not s.annotations
                and s.thread_binding is None and _is_zero(s.min) and s.min.dtype == s.loop_var.dtype
                and s.extent.dtype == s.loop_var.dtype)

    def visit_for_(self, s: For) -> list[str]:
        loops = [s]
        if self._is_grid_loop(s):
            while self._is_grid_loop(loops[-1].body) and not _uses_any(
                    loops[-1].body.extent, [lp.loop_var for lp in loops]):
                loops.append(loops[-1].body)
        if len(loops) > 1:
            header = f"T.grid({', '.join(self.expr(lp.extent) for lp in loops)})"
        elif self._is_grid_loop(s):
            header = f"range({self.expr(s.extent)})"
        else:
            kind = {ForKind.SERIAL: "serial", ForKind.PARALLEL: "parallel", ForKind.VECTORIZED: "vectorized",
                    ForKind.UNROLLED: "unroll", ForKind.THREAD_BINDING: "thread_binding"}[s.kind]
            if _is_zero(s.min) and s.min.dtype == s.loop_var.dtype and s.extent.dtype == s.loop_var.dtype:
                args = [self.expr(s.extent)]
            else:
                args = [self.expr(s.min), self.expr(_add(s.min, s.extent))]
            if s.kind == ForKind.THREAD_BINDING:
                args.append(f"thread={_str(str(s.thread_binding))}")
            if s.annotations:
                args.append(f"annotations={self.value(dict(s.annotations))}")
            header = f"T.{kind}({', '.join(args)})"
        self.push()
        names = []
        for lp in loops:
            names.append(self.define(lp.loop_var, lp.loop_var.name))
            self.loops[id(lp.loop_var)] = lp
        lines = [self._line(f"for {', '.join(names)} in {header}:")]
        lines += self._body(loops[-1].body)
        for lp in loops:
            del self.loops[id(lp.loop_var)]
        self.pop()
        return lines

    def visit_block_realize_(self, s: BlockRealize) -> list[str]:
        return self._block(s.block, s.iter_values, s.predicate)

    def visit_block_(self, s: Block) -> list[str]:
        # a Block outside its BlockRealize has no iteration values: TVM prints it so, its axes
        # with a domain only (``vi = T.axis.spatial(128)``)
        return self._block(s, None, IntImm("bool", 1))

    def _block(self, b: Block, values: tuple | None, predicate: PrimExpr) -> list[str]:
        no_realize = ", no_realize=True" if values is None else ""
        lines = [self._line(f"with {self.sblock}({_str(b.name_hint)}{no_realize}):")]
        self.indent += 1
        self.push()
        if values is None:
            lines += [self._single_axis(iv, None) for iv in b.iter_vars]
        else:
            value_texts = [self.expr(v) for v in values]  # bindings use the enclosing names
            lines += self._axes(b, values, value_texts)
        if not _is_true(predicate):
            lines.append(self._line(f"T.where({self.expr(predicate)})"))
        lines.append(self._line(f"T.reads({', '.join(self.region(r) for r in b.reads)})"))
        lines.append(self._line(f"T.writes({', '.join(self.region(r) for r in b.writes)})"))
        if b.annotations:
            lines.append(self._line(f"{self.sblock}_attr({self.value(dict(b.annotations))})"))
        for buf in b.alloc_buffers:
            lines.append(self._alloc_line(buf))
        for m in b.match_buffers:
            source = self.region(m.source)
            decl = self.buffer_decl(m.buffer, "T.match_buffer", first_arg=source)
            lines.append(self._line(f"{self.define(m.buffer, m.buffer.name)} = {decl}"))
        for own in (*b.alloc_buffers, *(m.buffer for m in b.match_buffers)):
            # `A_i32 = T.Buffer((1,), "int32", data=A.data)`: another view of the block's buffer
            lines += self._views_of(b.body, own.data, f"{self.name_of(own)}.data", "T.Buffer")
        if b.init is not None:
            lines.append(self._line("with T.init():"))
            lines += self._body(b.init)
        tail, self.tail = self.tail, True
        lines += self.print_stmt(b.body)
        self.tail = tail
        self.pop()
        self.indent -= 1
        return lines

    def _axes(self, b: Block, values: tuple, value_texts: list[str]) -> list[str]:
        """The block's axes; each run of two or more that bind an enclosing loop over its whole
        range prints as one ``T.axis.remap`` (as TVM groups them), the others one by one."""
        kinds = {"spatial": "S", "reduce": "R"}

        def remappable(iv: IterVar, v: Any) -> bool:
            return (isinstance(v, Var) and id(v) in self.loops and iv.iter_type in kinds
                    and structural_equal(iv.dom, Range(self.loops[id(v)].min, self.loops[id(v)].extent))
                    and iv.var.dtype == v.dtype)

        lines: list[str] = []
        run: list[int] = []

        def flush() -> None:
            if len(run) == 1:
                lines.append(self._single_axis(b.iter_vars[run[0]], value_texts[run[0]]))
            elif run:
                ivs = [b.iter_vars[k] for k in run]
                letters = "".join(kinds[iv.iter_type] for iv in ivs)
                names = [self.define(iv.var, iv.var.name) for iv in ivs]
                texts = ", ".join(value_texts[k] for k in run)
                lines.append(self._line(f'{", ".join(names)} = T.axis.remap("{letters}", [{texts}])'))
            run.clear()

        for k, (iv, v) in enumerate(zip(b.iter_vars, values)):
            if remappable(iv, v):
                run.append(k)
            else:
                flush()
                lines.append(self._single_axis(iv, value_texts[k]))
        flush()
        return lines

    def _single_axis(self, iv: IterVar, text: str | None) -> str:
        dom = iv.dom
        if _is_zero(dom.min) and dom.min.dtype == dom.extent.dtype:
            dom_text = self.expr(dom.extent)
        else:
            dom_text = f"({self.expr(dom.min)}, {self.expr(_add(dom.min, dom.extent))})"
        name = self.define(iv.var, iv.var.name)
        return self._line(f"{name} = T.axis.{iv.iter_type}({dom_text}{'' if text is None else ', ' + text})")


def _undeclared_buffers(body: Any, declared_buffers: Any) -> list[Buffer]:
    """Buffers ``body`` accesses that no block, allocation or ``declared_buffers`` declares."""
    declared = {id(b) for b in declared_buffers}
    used: list[Buffer] = []

    def visit(n: Any) -> None:
        if isinstance(n, Block):
            declared.update(id(b) for b in n.alloc_buffers)
            declared.update(id(m.buffer) for m in n.match_buffers)
        elif isinstance(n, Allocate):
            declared.add(id(n.buffer))
        elif isinstance(n, (BufferLoad, BufferStore, BufferRegion)):
            if all(n.buffer is not u for u in used):
                used.append(n.buffer)

    post_order_visit(body, visit)
    return [b for b in used if id(b) not in declared]


def _builtin_dtype_readable(builtin: Any, e: Call) -> bool:
    """Whether ``T.<builtin>(args)`` parses back to a call of ``e``'s dtype."""
    if builtin.dtype in ("first", "last"):
        return True
    if builtin.dtype.startswith("arg:"):
        k = int(builtin.dtype[4:])
        return k < len(e.args) and e.args[k].dtype == e.dtype
    return builtin.dtype == e.dtype


def _env_threads(body: Stmt) -> list[IterVar]:
    """Thread indices printed as ``T.env_thread`` at the top of the function: those launched
    more than once, or used outside their launch (as TVM's printer decides)."""
    launches: dict[int, list[AttrStmt]] = {}

    def collect(n: Any) -> None:
        if isinstance(n, AttrStmt) and isinstance(n.node, IterVar) and n.attr_key in (
                "thread_extent", "virtual_thread"):
            launches.setdefault(id(n.node.var), []).append(n)

    post_order_visit(body, collect)

    def uses(tree: Any, var: Var) -> int:
        found: list[Any] = []
        post_order_visit(tree, lambda x: found.append(x) if x is var else None)
        return len(found)

    out = []
    for stmts in launches.values():
        var = stmts[0].node.var
        if len(stmts) > 1 or uses(body, var) - 1 > uses((stmts[0].value, stmts[0].body), var):
            out.append(stmts[0].node)
    return out


def _uses_any(e: Any, variables: list[Var]) -> bool:
    ids = {id(v) for v in variables}
    found = []
    post_order_visit(e, lambda x: found.append(x) if id(x) in ids else None)
    return bool(found)


def _has_block(s: Any) -> bool:
    found = []
    post_order_visit(s, lambda x: found.append(x) if isinstance(x, BlockRealize) else None)
    return bool(found)




# -- HTML ---------------------------------------------------------------------------------------

_STYLE = {
    "keyword": "color:#7928a1;font-weight:bold", "string": "color:#2a7d2e", "number": "color:#0b6e99",
    "comment": "color:#8a8a8a;font-style:italic", "namespace": "color:#b35c00",
    "decorator": "color:#b35c00", "builtin": "color:#0b6e99",
}
_BUILTINS = {"range", "True", "False", "None"}


@deep_on_overflow
def to_html(node: Any, **kwargs: Any) -> str:
    """The text of ``node`` highlighted with inline styles (no CSS file, no pygments needed)."""
    text = node if isinstance(node, str) else script(node, **kwargs)
    out: list[str] = []
    lines = text.splitlines(keepends=True)
    pos = (1, 0)
    prev_op = ""

    def gap_to(start: tuple[int, int]) -> str:
        (r0, c0), (r1, c1) = pos, start
        if r0 == r1:
            return lines[r0 - 1][c0:c1] if r0 - 1 < len(lines) else ""
        chunk = lines[r0 - 1][c0:] + "".join(lines[r0:r1 - 1]) + lines[r1 - 1][:c1]
        return chunk

    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.ENDMARKER,):
                break
            if tok.type in (tokenize.INDENT, tokenize.DEDENT):
                continue
            out.append(html.escape(gap_to(tok.start)))
            style = None
            if tok.type == tokenize.COMMENT:
                style = "comment"
            elif tok.type == tokenize.STRING:
                style = "string"
            elif tok.type == tokenize.NUMBER:
                style = "number"
            elif tok.type == tokenize.NAME:
                if keyword.iskeyword(tok.string) and tok.string not in _BUILTINS:
                    style = "keyword"
                elif tok.string in ("T", "I", "R"):
                    style = "namespace"
                elif prev_op == "@":
                    style = "decorator"
                elif tok.string in _BUILTINS:
                    style = "builtin"
            piece = html.escape(tok.string)
            out.append(f'<span style="{_STYLE[style]}">{piece}</span>' if style else piece)
            prev_op = tok.string if tok.type == tokenize.OP else ("" if tok.string != "." else prev_op)
            pos = tok.end
    except (tokenize.TokenError, IndentationError):  # not Python-shaped text: show it plain
        return _pre(html.escape(text))
    return _pre("".join(out))


def _pre(body: str) -> str:
    return ('<pre style="font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px;'
            'line-height:1.4;background:#f8f8f8;padding:8px;border-radius:4px;overflow-x:auto">'
            f"{body}</pre>")
