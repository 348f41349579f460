"""The reference interpreter: run a PrimFunc on numpy arrays, exactly.

It is the oracle compiled code is checked against, so every operation keeps the meaning
it has in TIR (and in C): integers wrap around in their dtype, ``Div``/``Mod`` truncate
while ``floordiv``/``floormod`` round down, ``float32`` math stays in ``float32``, and an
out-of-bounds access raises ``IndexError`` naming the buffer (negative indices never wrap).

A tree-walking interpreter would be far too slow for real loop nests, so the PrimFunc is
translated once into Python source (one Python function, loops as ``for ... in range``,
buffers as flat numpy arrays) and ``exec``-ed; :func:`python_source` shows that code.

Two representations of integers keep the generated code both fast and exact:

* an integer expression whose bounds (from the loop ranges, by :mod:`minitvm.arith`)
  fit its dtype is computed with plain Python ints — it cannot overflow, so wrapping
  would change nothing;
* any other integer (a value loaded from a buffer, or something that could overflow) is
  a numpy scalar of its dtype (``np.int32``), whose arithmetic wraps like the machine's.

Floats are always numpy scalars of their dtype.  Both block-level TIR (blocks, ``init``,
predicates, ``alloc_buffer``, ``match_buffer``) and lowered TIR (flat 1-D buffers sharing
their ``data`` variable with the parameters) run.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import keyword
import math
import re
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..arith import Analyzer
from ..arith.int_bound import dtype_range
from ..ir import dtype as _dt
from ..ir.deep import deep
from ..tir.buffer import Buffer
from ..tir.expr import (
    Add,
    And,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Range,
    Select,
    StringImm,
    Sub,
    Var,
)
from ..tir.function import PrimFunc
from ..tir.functor import method_name
from ..tir.semantics import BY_NODE, LLVM_PURE_INTRIN, ROWS, cast_value, kind_of, node_operands, row_of
from ..tir.stmt import (
    Allocate,
    AssertStmt,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)
from ..tir.transform.lower_init_block import init_condition
from ..tir.transform.lower_opaque_block import MatchedView, MatchedViews
from .signature import FunctionSignature

__all__ = ["run_prim_func", "python_source", "compile_prim_func"]

TraceFn = Callable[[str, str, Any], None]

# -- runtime helpers the generated code calls ------------------------------------------------


def _checked(index: Any, extent: Any, buffer: str, dim: int | None) -> Any:
    if 0 <= index < extent:
        return index
    where = "" if dim is None else f" in dimension {dim}"
    raise IndexError(f"buffer {buffer}: index {int(index)} is out of bounds for extent "
                     f"{int(extent)}{where}")


def _uninitialized(size: int, dtype: type) -> np.ndarray:
    """Fresh storage, filled so that reading it before writing shows: NaN for floats, a
    0xA5A5... pattern for integers.  (Zeros would hide a missing init, as the reduction's
    identity is often zero; native code would read garbage there.)"""
    array = np.empty(size, dtype=dtype)
    if np.issubdtype(dtype, np.floating):
        array.fill(np.nan)
    else:
        array.view(np.uint8).fill(0xA5)
    return array


def _read(trace: TraceFn, name: str, array: np.ndarray, flat: int, index: Any) -> Any:
    trace("read", name, index)
    return array[flat]


def _np_type_name(dtype: str) -> str:
    return "bool_" if dtype == "bool" else dtype


_NAMESPACE: dict[str, Any] = {
    "np": np, "_checked": _checked, "_read": _read, "_uninitialized": _uninitialized, "_cast": cast_value,
    # every operation of the semantics table, for each dtype it takes: _floordiv_int32(a, b)
    **{f"_{row.name}_{dtype}": functools.partial(row.numpy, dtype)
       for row in ROWS for dtype in _dt.SUPPORTED if kind_of(dtype) in row.kinds},
    **{_np_type_name(d): np.dtype(d).type for d in _dt.SUPPORTED},
}
_RESERVED = set(_NAMESPACE) | set(dir(builtins)) | set(keyword.kwlist) | {"_trace", "_value"}

# -- code generation -------------------------------------------------------------------------

# Python operator precedences, loosest first: an operand looser than its operator gets parens
_COND, _OR, _AND, _NOT, _CMP, _ADD, _MUL, _UNARY, _ATOM = 1, 2, 3, 4, 5, 7, 8, 9, 11


#: an expression this many operators tall is moved into a local function (see ``hoist``)
_HOIST_HEIGHT = 32


@dataclass
class Code:
    """A generated Python expression: its text, precedence and value representation.

    ``kind`` is "py" (a Python int or bool, exact), "lit" (a Python literal of the
    expression's dtype) or "np" (a numpy scalar of the expression's dtype).
    """

    text: str
    prec: int
    kind: str


class _PythonCodegen:
    """Writes one Python function for a PrimFunc, statement by statement."""

    def __init__(self, func: PrimFunc, trace: bool):
        self.func = func
        self.trace = trace
        self.lines: list[str] = []
        self.depth = 1
        self.analyzer = Analyzer()
        self.names: dict[int, str] = {}
        self.kinds: dict[int, str] = {}
        self.used_names: set[str] = set(_RESERVED)
        self.arrays: dict[int, str] = {}
        self.array_dtypes: dict[int, str] = {}  # the dtype of each array (its data Var's id)
        self.views = MatchedViews()
        self.keep: list[Any] = []  # objects whose ids key the tables above
        self.height = 0  # the tallest expression generated so far among the current one's operands

    # -- names ------------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = re.sub(r"\W", "_", hint).lstrip("_") or "v"
        if base[0].isdigit():
            base = "v" + base
        name, k = base, 1
        while name in self.used_names:
            name, k = f"{base}_{k}", k + 1
        self.used_names.add(name)
        return name

    def define(self, var: Var, kind: str) -> str:
        name = self.fresh(var.name)
        self.names[id(var)] = name
        self.kinds[id(var)] = kind
        self.keep.append(var)
        return name

    def array_of(self, buffer: Buffer) -> str:
        name = self.arrays.get(id(buffer.data))
        if name is None:
            raise ValueError(f"buffer {buffer.name} is accessed but its memory ({buffer.data.name}) "
                             "is neither a parameter nor allocated in an enclosing scope")
        if self.array_dtypes[id(buffer.data)] != buffer.dtype:
            # the same bytes read as another dtype (a view made at each access: it is valid in any scope)
            return f"{name}.view({_np_type_name(buffer.dtype)})"
        return name

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    # -- bounds -----------------------------------------------------------------------------
    def bound(self, e: PrimExpr) -> tuple[int, int]:
        return self.analyzer.interval(e)

    def fits(self, e: PrimExpr) -> bool:
        """True if every value ``e`` can take fits its dtype (so Python ints are exact)."""
        lo, hi = self.bound(e)
        dlo, dhi = dtype_range(e.dtype)
        return dlo <= lo and hi <= dhi

    # -- expressions ------------------------------------------------------------------------
    @staticmethod
    def wrap(code: Code, prec: int, strict: bool = False) -> str:
        looser = code.prec < prec or (strict and code.prec == prec)
        return f"({code.text})" if looser else code.text

    def as_np(self, code: Code, dtype: str) -> Code:
        if code.kind == "np":
            return code
        return Code(f"{_np_type_name(dtype)}({code.text})", _ATOM, "np")

    def as_int(self, code: Code) -> str:
        """A Python int for index arithmetic (exact, never wraps)."""
        return code.text if code.kind in ("py", "lit") else f"int({code.text})"

    def expr(self, e: PrimExpr) -> Code:
        method = getattr(self, method_name(type(e)), None)  # visit_<node>_, as tir.functor names it
        if method is None:
            raise NotImplementedError(f"the interpreter cannot evaluate {type(e).__name__} ({e!r})")
        outer, self.height = self.height, 0
        code = method(e)
        height = self.height + 1
        if height >= _HOIST_HEIGHT:
            code, height = self.hoist(code), 1
        self.height = max(outer, height)
        return code

    def hoist(self, code: Code) -> Code:
        """``code`` as the call of a local function returning it: Python refuses source nested
        more than 200 parentheses deep, and a deep expression prints as nested parentheses.
        A call (not a temporary) keeps the evaluation where and when it was (in a loop's
        condition, a lazy branch); the function reads the kernel's variables as a closure."""
        name = self.fresh("subexpr")
        self.emit(f"def {name}():")
        self.emit(f"    return {code.text}")
        return Code(f"{name}()", _ATOM, code.kind)

    def visit_int_imm_(self, e: IntImm) -> Code:
        if e.dtype == "bool":
            return Code(str(bool(e.value)), _ATOM, "py")
        return Code(str(e.value), _ATOM if e.value >= 0 else _UNARY, "lit")

    def visit_float_imm_(self, e: FloatImm) -> Code:
        if math.isfinite(e.value):
            return Code(repr(float(e.value)), _ATOM if e.value >= 0 else _UNARY, "lit")
        return Code(f'{_np_type_name(e.dtype)}("{e.value}")', _ATOM, "np")

    def visit_string_imm_(self, e: StringImm) -> Code:
        raise NotImplementedError(f"the interpreter has no use for the string {e.value!r}")

    def visit_var_(self, e: Var) -> Code:
        name = self.names.get(id(e))
        if name is None:
            raise ValueError(f"variable {e.name} is used but not defined")
        return Code(name, _ATOM, self.kinds[id(e)])

    visit_size_var_ = visit_var_

    def _binary(self, e: PrimExpr, symbol: str, prec: int) -> Code:
        row = BY_NODE[type(e)]
        row.check(e.dtype, "the interpreter")
        a, b = self.expr(e.a), self.expr(e.b)
        if e.dtype == "bool":  # + is or, * is and
            return self._row(row.name, "bool", a, b, kind="py")
        if _dt.is_int(e.dtype) and a.kind != "np" and b.kind != "np" and self.fits(e):
            kind = "py"
        else:
            kind = "np"
            if a.kind != "np" and b.kind != "np":
                a = self.as_np(a, e.dtype)
        return Code(f"{self.wrap(a, prec)} {symbol} {self.wrap(b, prec, strict=True)}", prec, kind)

    def visit_add_(self, e: Add) -> Code:
        return self._binary(e, "+", _ADD)

    def visit_sub_(self, e: Sub) -> Code:
        return self._binary(e, "-", _ADD)

    def visit_mul_(self, e: Mul) -> Code:
        return self._binary(e, "*", _MUL)

    def _call(self, fn: str, e: PrimExpr, *args: Code, kind: str) -> Code:
        return Code(f"{fn}({', '.join(a.text for a in args)})", _ATOM, kind)

    def _row(self, name: str, dtype: str, *args: Code, kind: str) -> Code:
        """A call of the semantics table's meaning of ``name`` (``_floordiv_int32(a, b)``)."""
        return Code(f"_{name}_{dtype}({', '.join(a.text for a in args)})", _ATOM, kind)

    def _int_division(self, e: PrimExpr, symbol: str, row: str, exact_if_nonneg: bool) -> Code:
        a, b = self.expr(e.a), self.expr(e.b)
        divisor = e.b.value if isinstance(e.b, IntImm) else None
        kind = "py" if a.kind != "np" and b.kind != "np" and self.fits(e) else "np"
        if kind == "np" and a.kind != "np" and b.kind != "np":
            a = self.as_np(a, e.dtype)
        # the Python operator is right when the divisor is a nonzero constant and, for the
        # truncating kinds, the dividend cannot be negative (then both roundings agree)
        operator_ok = divisor is not None and divisor != 0
        if exact_if_nonneg:
            operator_ok = operator_ok and divisor > 0 and self.bound(e.a)[0] >= 0
        if operator_ok:
            return Code(f"{self.wrap(a, _MUL)} {symbol} {self.wrap(b, _MUL, strict=True)}", _MUL, kind)
        return self._row(row, e.dtype, a, b, kind=kind)

    def _float_row(self, name: str, e: PrimExpr, *args: PrimExpr) -> Code:
        codes = [self.as_np(self.expr(a), e.dtype) for a in args]
        return self._row(name, e.dtype, *codes, kind="np")

    def visit_floor_div_(self, e: FloorDiv) -> Code:
        if _dt.is_float(e.dtype):
            return self._float_row("floordiv", e, e.a, e.b)
        return self._int_division(e, "//", "floordiv", exact_if_nonneg=False)

    def visit_floor_mod_(self, e: FloorMod) -> Code:
        if _dt.is_float(e.dtype):
            return self._float_row("floormod", e, e.a, e.b)
        return self._int_division(e, "%", "floormod", exact_if_nonneg=False)

    def visit_div_(self, e: Div) -> Code:
        BY_NODE[Div].check(e.dtype, "the interpreter")
        if _dt.is_float(e.dtype):
            a, b = self.expr(e.a), self.expr(e.b)
            if a.kind != "np" and b.kind != "np":
                a = self.as_np(a, e.dtype)
            return Code(f"{self.wrap(a, _MUL)} / {self.wrap(b, _MUL, strict=True)}", _MUL, "np")
        return self._int_division(e, "//", "div", exact_if_nonneg=True)

    def visit_mod_(self, e: Mod) -> Code:
        BY_NODE[Mod].check(e.dtype, "the interpreter")
        if _dt.is_float(e.dtype):
            return self._float_row("mod", e, e.a, e.b)
        return self._int_division(e, "%", "mod", exact_if_nonneg=True)

    def _min_max(self, e: PrimExpr, builtin: str) -> Code:
        a, b = self.expr(e.a), self.expr(e.b)
        if _dt.is_float(e.dtype):  # NaN and signed zeros: the table's meaning
            return self._row(builtin, e.dtype, self.as_np(a, e.dtype), self.as_np(b, e.dtype), kind="np")
        if a.kind != "np" and b.kind != "np":
            return self._call(builtin, e, a, b, kind="py")
        return self._call(builtin, e, self.as_np(a, e.dtype), self.as_np(b, e.dtype), kind="np")

    def visit_min_(self, e: Min) -> Code:
        return self._min_max(e, "min")

    def visit_max_(self, e: Max) -> Code:
        return self._min_max(e, "max")

    def _compare(self, e: PrimExpr, symbol: str) -> Code:
        a, b = self.expr(e.a), self.expr(e.b)
        return Code(f"{self.wrap(a, _CMP, strict=True)} {symbol} {self.wrap(b, _CMP, strict=True)}",
                    _CMP, "py")

    def visit_lt_(self, e): return self._compare(e, "<")
    def visit_le_(self, e): return self._compare(e, "<=")
    def visit_gt_(self, e): return self._compare(e, ">")
    def visit_ge_(self, e): return self._compare(e, ">=")
    def visit_eq_(self, e): return self._compare(e, "==")
    def visit_ne_(self, e): return self._compare(e, "!=")

    def visit_and_(self, e: And) -> Code:
        a, b = self.expr(e.a), self.expr(e.b)
        return Code(f"{self.wrap(a, _AND)} and {self.wrap(b, _AND, strict=True)}", _AND, "py")

    def visit_or_(self, e: Or) -> Code:
        a, b = self.expr(e.a), self.expr(e.b)
        return Code(f"{self.wrap(a, _OR)} or {self.wrap(b, _OR, strict=True)}", _OR, "py")

    def visit_not_(self, e: Not) -> Code:
        return Code(f"not {self.wrap(self.expr(e.a), _NOT)}", _NOT, "py")

    def _choice(self, dtype: str, condition: PrimExpr, then_value: PrimExpr, else_value: PrimExpr,
                whole: PrimExpr) -> Code:
        cond, t, f = self.expr(condition), self.expr(then_value), self.expr(else_value)
        exact_ints = _dt.is_int(dtype) and t.kind != "np" and f.kind != "np" and self.fits(whole)
        if dtype == "bool" or exact_ints:
            kind = "py"
        else:
            kind = "np"
            t, f = self.as_np(t, dtype), self.as_np(f, dtype)
        then_text, cond_text = self.wrap(t, _COND, strict=True), self.wrap(cond, _COND, strict=True)
        return Code(f"{then_text} if {cond_text} else {self.wrap(f, _COND)}", _COND, kind)

    def visit_select_(self, e: Select) -> Code:
        return self._choice(e.dtype, e.condition, e.true_value, e.false_value, e)

    def visit_call_(self, e: Call) -> Code:
        if e.op == "tir.if_then_else":
            return self._choice(e.dtype, *e.args, e)
        row = row_of(e)
        if row is None:
            what = f"{e.op}({e.args[0]})" if e.op == LLVM_PURE_INTRIN and e.args else e.op
            raise NotImplementedError(f"the interpreter does not know the intrinsic {what}")
        operands = node_operands(e)
        dtype = e.dtype if row.result is None else operands[0].dtype
        row.check(dtype, "the interpreter")
        call = self._row(row.name, dtype, *(self.as_np(self.expr(a), dtype) for a in operands), kind="np")
        if row.result == "bool":
            return Code(call.text, _ATOM, "py")
        return Code(f"{_np_type_name(e.dtype)}({call.text})", _ATOM, "np")

    def visit_cast_(self, e: Cast) -> Code:
        value, target, source = self.expr(e.value), e.dtype, e.value.dtype
        if _dt.is_float(target):
            return Code(f"{_np_type_name(target)}({value.text})", _ATOM, "np")
        if target == "bool":
            return Code(f"{self.wrap(value, _CMP, strict=True)} != 0", _CMP, "py")
        if (_dt.is_int(source) or source == "bool") and value.kind != "np" and self.fits(e):
            return Code(value.text, value.prec, "py") if source != "bool" else \
                Code(f"int({value.text})", _ATOM, "py")
        if _dt.is_float(source):  # saturating, NaN -> 0: the table's meaning
            return Code(f'_cast({value.text}, "{source}", "{target}")', _ATOM, "np")
        if value.kind != "np" or source == "bool":
            value = Code(f"{_np_type_name(source)}({value.text})", _ATOM, "np")
        # numpy's astype wraps integers, as the table's casts do
        return Code(f"{value.text}.astype({_np_type_name(target)})", _ATOM, "np")

    def visit_let_(self, e: Let) -> Code:
        value = self.expr(e.value)
        name = self.define(e.var, value.kind if value.kind != "lit" else "py")
        interval = self.bound(e.value) if _dt.is_int(e.value.dtype) else None
        with self.analyzer.interval_scope(e.var, interval):
            body = self.expr(e.body)
        return Code(f"(({name} := {value.text}), {body.text})[1]", _ATOM, body.kind)

    def visit_buffer_load_(self, e: BufferLoad) -> Code:
        array, name, flat, nd = self.access(e.buffer, e.indices)
        if self.trace:
            return Code(f'_read(_trace, "{name}", {array}, {flat}, {nd})', _ATOM, "np")
        return Code(f"{array}[{flat}]", _ATOM, "np")

    # -- buffer accesses ----------------------------------------------------------------------
    def access(self, buffer: Buffer, indices: Sequence[PrimExpr]) -> tuple[str, str, str, str]:
        """(array name, buffer name, checked flat index, index as the trace reports it)."""
        buffer, indices = self.views.resolve(buffer, tuple(indices))
        array = self.array_of(buffer)
        checked = [self.checked_index(index, extent, buffer.name, dim if len(indices) > 1 else None)
                   for dim, (index, extent) in enumerate(zip(indices, buffer.shape))]
        if not checked:
            flat = Code("0", _ATOM, "lit")
        elif buffer.strides:
            terms = [f"{self.wrap(c, _MUL)} * {self.wrap(self.expr(st), _MUL, strict=True)}"
                     for c, st in zip(checked, buffer.strides)]
            flat = Code(" + ".join(terms), _ADD, "py")
        else:
            # row-major: ((i0 * n1 + i1) * n2 + i2) ...
            flat = checked[0]
            for c, extent in zip(checked[1:], buffer.shape[1:]):
                extent_text = self.wrap(Code(self.as_int(self.expr(extent)), _ATOM, "py"), _MUL)
                flat = Code(f"{self.wrap(flat, _MUL)} * {extent_text} + {self.wrap(c, _ADD)}",
                            _ADD, "py")
        offset = buffer.elem_offset
        if not (isinstance(offset, IntImm) and offset.value == 0):
            flat = Code(f"{flat.text} + {self.as_int(self.expr(offset))}", _ADD, "py")
        nd = checked[0].text if len(checked) == 1 else f"({', '.join(c.text for c in checked)})"
        return array, buffer.name, flat.text, nd

    def checked_index(self, index: PrimExpr, extent: PrimExpr, name: str, dim: int | None) -> Code:
        """``index`` as a Python int, wrapped in a bounds check unless bounds prove it safe."""
        code = self.expr(index)
        lo, hi = self.bound(index)
        if code.kind != "np" and isinstance(extent, IntImm) and 0 <= lo and hi < extent.value:
            return code
        text = self.as_int(code)
        return Code(f'_checked({text}, {self.as_int(self.expr(extent))}, "{name}", {dim})', _ATOM, "py")

    # -- statements ---------------------------------------------------------------------------
    def stmt(self, s: Stmt) -> None:
        method = getattr(self, method_name(type(s)), None)
        if method is None:
            raise NotImplementedError(f"the interpreter cannot run {type(s).__name__}")
        method(s)

    def body(self, s: Stmt) -> None:
        """An indented block; Python needs at least one statement in it."""
        self.depth += 1
        before = len(self.lines)
        self.stmt(s)
        if len(self.lines) == before:
            self.emit("pass")
        self.depth -= 1

    def visit_seq_stmt_(self, s: SeqStmt) -> None:
        for x in s.seq:
            self.stmt(x)

    def visit_for_(self, s: For) -> None:
        start, extent = self.expr(s.min), self.expr(s.extent)
        if isinstance(s.min, IntImm) and s.min.value == 0:
            bounds = extent.text
        elif isinstance(s.min, IntImm) and isinstance(s.extent, IntImm):
            bounds = f"{s.min.value}, {s.min.value + s.extent.value}"
        else:
            bounds = f"{start.text}, {self.wrap(start, _ADD)} + {self.wrap(extent, _ADD, strict=True)}"
        name = self.define(s.loop_var, "py")
        note = "" if s.kind == ForKind.SERIAL else f"  # {s.kind} (run serially here)"
        self.emit(f"for {name} in range({bounds}):{note}")
        with self.analyzer.bound_scope(s.loop_var, Range(s.min, s.extent)):
            self.body(s.body)

    def visit_if_then_else_(self, s: IfThenElse) -> None:
        self.emit(f"if {self.expr(s.condition).text}:")
        with self.analyzer.constraint_scope(s.condition):
            self.body(s.then_case)
        if s.else_case is not None:
            self.emit("else:")
            self.body(s.else_case)

    def visit_let_stmt_(self, s: LetStmt) -> None:
        value = self.expr(s.value)
        if value.kind == "lit":
            value = self.as_np(value, s.value.dtype) if _dt.is_float(s.value.dtype) else value
        name = self.define(s.var, "np" if value.kind == "np" else "py")
        self.emit(f"{name} = {value.text}")
        interval = self.bound(s.value) if _dt.is_int(s.value.dtype) else None
        with self.analyzer.interval_scope(s.var, interval):
            self.stmt(s.body)

    def visit_assert_stmt_(self, s: AssertStmt) -> None:
        self.emit(f"if not ({self.expr(s.condition).text}):")
        self.depth += 1
        self.emit(f"raise AssertionError({s.message!r})")
        self.depth -= 1
        self.stmt(s.body)

    def visit_evaluate_(self, s: Evaluate) -> None:
        if isinstance(s.value, Call) and s.value.op == "tir.prefetch":
            return  # a cache hint: nothing to compute
        if not isinstance(s.value, (IntImm, FloatImm)):
            self.emit(self.expr(s.value).text)

    def visit_buffer_store_(self, s: BufferStore) -> None:
        value = self.expr(s.value)
        array, name, flat, nd = self.access(s.buffer, s.indices)
        if self.trace:
            self.emit(f"_value = {value.text}")
            self.emit(f'_trace("write", "{name}", {nd})')
            self.emit(f"{array}[{flat}] = _value")
        else:
            self.emit(f"{array}[{flat}] = {value.text}")

    def allocate(self, buffer: Buffer) -> None:
        size = "1"
        for extent in buffer.shape:
            code = self.as_int(self.expr(extent))
            size = code if size == "1" else f"{size} * {code}"
        name = self.fresh(buffer.name)
        self.arrays[id(buffer.data)] = name
        self.array_dtypes[id(buffer.data)] = buffer.dtype
        self.keep.append(buffer)
        self.emit(f"{name} = _uninitialized({size}, {_np_type_name(buffer.dtype)})")

    def visit_allocate_(self, s: Allocate) -> None:
        self.allocate(s.buffer)
        self.stmt(s.body)

    def visit_block_realize_(self, s: BlockRealize) -> None:
        self.block(s.block, s.iter_values, s.predicate)

    def visit_block_(self, s: Block) -> None:
        self.block(s, (), IntImm("bool", 1))

    def block(self, block: Block, values: Sequence[PrimExpr], predicate: PrimExpr) -> None:
        if block.name_hint != "root":
            self.emit(f"# block {block.name_hint}")
        with contextlib.ExitStack() as scopes:
            for iv, value in zip(block.iter_vars, values):
                code = self.expr(value)
                name = self.define(iv.var, "np" if code.kind == "np" else "py")
                self.emit(f"{name} = {code.text}")
                interval = self.bound(value) if _dt.is_int(value.dtype) else None
                scopes.enter_context(self.analyzer.interval_scope(iv.var, interval))
            guarded = not (isinstance(predicate, IntImm) and predicate.value)
            if guarded:
                self.emit(f"if {self.expr(predicate).text}:")
                self.depth += 1
            for buffer in block.alloc_buffers:
                self.allocate(buffer)
            for match in block.match_buffers:
                self.views.add(MatchedView(match.buffer, match.source))
                self.keep.append(match.buffer)
            if block.init is not None:
                condition = init_condition(block)
                if condition is None:
                    self.stmt(block.init)
                else:
                    self.emit(f"if {self.expr(condition).text}:  # first reduction step: init")
                    self.body(block.init)
            self.stmt(block.body)
            if guarded:
                if self.lines[-1].strip().endswith(":"):
                    self.emit("pass")
                self.depth -= 1

    # -- the function ---------------------------------------------------------------------------
    def function(self) -> tuple[str, str, list[Var]]:
        """Source text, function name, and the symbolic shape variables it takes last."""
        func = self.func
        name = self.fresh(func.attrs.get("global_symbol") or "main")
        params: list[str] = []
        header: list[str] = []
        for param in func.params:
            buffer = func.buffer_map.get(param)
            if buffer is None:
                if param.dtype == "handle":
                    raise ValueError(f"parameter {param.name} is a handle without a buffer")
                params.append(self.define(param, "np" if _dt.is_float(param.dtype) else "py"))
                continue
            array = self.fresh(buffer.name)
            self.arrays[id(buffer.data)] = array
            self.array_dtypes[id(buffer.data)] = buffer.dtype
            self.keep.append(buffer)
            params.append(array)
            shape = ", ".join(str(s.value) if isinstance(s, IntImm) else getattr(s, "name", "?")
                              for s in buffer.shape)
            header.append(f"# {array}: {buffer.dtype}[{shape}], flat")
        shape_vars = symbolic_shape_vars(func)
        for var in shape_vars:
            params.append(self.define(var, "py"))
        if self.trace:
            params.append("_trace")
        for line in header:
            self.emit(line)
        self.stmt(func.body)
        if not self.lines or all(line.strip().startswith("#") for line in self.lines):
            self.emit("pass")
        source = f"def {name}({', '.join(params)}):\n" + "\n".join(self.lines) + "\n"
        return source, name, shape_vars


def symbolic_shape_vars(func: PrimFunc) -> list[Var]:
    """Shape variables of parameter buffers that are not parameters themselves, in order."""
    params = {id(p) for p in func.params}
    found: dict[int, Var] = {}
    for param in func.params:
        buffer = func.buffer_map.get(param)
        if buffer is None:
            continue
        for extent in buffer.shape:
            if isinstance(extent, Var) and id(extent) not in params:
                found.setdefault(id(extent), extent)
    return list(found.values())


# -- compiling and running ------------------------------------------------------------------------


@dataclass
class CompiledFunc:
    """A PrimFunc translated to Python: the callable, its source and how to call it."""

    fn: Callable[..., None]
    source: str
    shape_vars: list[Var]
    signature: FunctionSignature | None = None  # the argument check, made on the first call


_CACHE: "weakref.WeakKeyDictionary[PrimFunc, dict[bool, CompiledFunc]]" = weakref.WeakKeyDictionary()


@deep
def compile_prim_func(func: PrimFunc, trace: bool = False) -> CompiledFunc:
    """Translate ``func`` to Python once (cached per function and trace mode)."""
    if not isinstance(func, PrimFunc):
        raise TypeError(f"expected a PrimFunc, got {type(func).__name__}")
    per_func = _CACHE.setdefault(func, {})
    compiled = per_func.get(trace)
    if compiled is None:
        source, name, shape_vars = _PythonCodegen(func, trace).function()
        namespace = dict(_NAMESPACE)
        exec(compile(source, f"<minitvm interpreter: {name}>", "exec"), namespace)
        compiled = per_func[trace] = CompiledFunc(namespace[name], source, shape_vars)
    return compiled


@deep
def python_source(func: PrimFunc, trace: bool = False) -> str:
    """The Python code the interpreter runs for ``func`` (for reading, not for editing)."""
    return compile_prim_func(func, trace).source


def _scalar_argument(param: Var, value: Any) -> Any:
    dtype = param.dtype
    if _dt.is_float(dtype):
        return np.dtype(dtype).type(value)
    if dtype == "bool":
        return bool(value)
    return int(np.array(value).astype(dtype))  # wrapped into the dtype, as a C argument would be


def _shape_values(func: PrimFunc, values: list[Any]) -> dict[int, int]:
    """The value of each symbolic dimension, read off the (already checked) arrays."""
    found: dict[int, int] = {}
    for param, value in zip(func.params, values):
        buffer = func.buffer_map.get(param)
        if buffer is not None:
            for extent, actual in zip(buffer.shape, value.shape):
                if isinstance(extent, Var):
                    found.setdefault(id(extent), int(actual))
    return found


@deep
def run_prim_func(func: PrimFunc, args: Sequence[Any], *, trace: TraceFn | None = None,
                  signature: FunctionSignature | None = None) -> None:
    """Run ``func`` on ``args`` (arrays for buffers, numbers for scalars) in place.

    The arguments are checked by the same :class:`~minitvm.target.signature.FunctionSignature`
    as native code's, so the interpreter refuses what compiled code refuses, in the same words.
    ``trace(kind, buffer_name, index)``, if given, sees every load ("read") and store
    ("write") in execution order, with the index as written (a tuple for N-D accesses).
    ``signature`` is the caller's own check of ``func`` (its name is the one errors use); by
    default one named after the global_symbol, made on the first call.
    """
    compiled = compile_prim_func(func, trace is not None)
    if signature is None:
        if compiled.signature is None:
            name = (func.attrs.get("global_symbol") if func.attrs else None) or "PrimFunc"
            compiled.signature = FunctionSignature.from_prim_func(str(name), func)
        signature = compiled.signature
    values, _ = signature.bind(tuple(args))
    call_args = [value.reshape(-1) if param in func.buffer_map else _scalar_argument(param, value)
                 for param, value in zip(func.params, values)]
    shape_values = _shape_values(func, values)
    call_args += [shape_values[id(var)] for var in compiled.shape_vars]
    if trace is not None:
        call_args.append(_plain_index_trace(trace))
    with np.errstate(all="ignore"):  # overflow wraps and x/0 is inf, silently, as in C
        compiled.fn(*call_args)


def _plain_index_trace(trace: TraceFn) -> TraceFn:
    """Report indices as Python ints, whichever representation the code computed them in."""

    def report(kind: str, name: str, index: Any) -> None:
        if isinstance(index, tuple):
            trace(kind, name, tuple(int(i) for i in index))
        else:
            trace(kind, name, int(index))

    return report
