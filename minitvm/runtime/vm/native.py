"""Native entries: a VM function's whole instruction sequence as one machine-code function.

TVM's ``relax.build(..., exec_mode="compiled")`` idea.  When a bytecode function is a straight
line of shape bookkeeping, allocations and kernel calls over tensors, nothing in it needs
Python between the kernels.  The planner here reads the bytecode (data, as verified by the
Executable) and the kernels' parameter lists, and produces an :class:`EntryPlan`:

* every storage the function allocates gets a place: the ones the result lives in are
  *outputs*, allocated fresh for each call (the caller keeps them); the others are carved from
  one *arena*, allocated once per VirtualMachine (and grown when a call needs more);
* every tensor is a (base, byte offset, shape, dtype): a parameter, a constant, the arena or
  an output storage;
* every kernel call lists its arguments as such tensors or as scalars, checked against the
  kernel's parameters (dtype, shape) here, once -- so the generated code checks only what
  depends on the sizes of a call, and the call from Python checks the arguments once (the
  VM's own check).

Symbolic shapes.  A dimension that is only known per call (``n``) is a :class:`Sym`: a slot
of the call's *size table*, an array of int64.  Python fills the *input* slots from the
arguments' shapes (``plan.inputs``: parameter, axis); the entry computes every other size from
them at its start (``plan.steps``: ``set`` a slot to ``a op b`` with the shape heap's
arithmetic, floor division included, and ``check`` what the bytecode would check -- a
``match_shape`` against an intermediate, a tensor fitting its storage), before any kernel
runs.  Intermediate sizes, arena offsets, the arena's size and the outputs' sizes are such
slots; the entry writes them into the table, so Python reads the results' shapes there.
After the plan's slots the table holds the capacities Python provides: the arena's, then each
output storage's.  When one is too small the entry returns :data:`NEEDS_MEMORY` before running
anything; Python grows what is short and calls again.

The code generator (``minitvm.target.codegen.native_entry``) turns the plan into one LLVM
function in the same module as the kernels::

    i64 __minitvm_entry_<name>_<digest>(ptr params, ptr consts, ptr arena, ptr outputs)
    i64 __minitvm_entry_<name>_<digest>(ptr params, ptr consts, ptr arena, ptr outputs, ptr sizes)

(the second when the plan has symbolic sizes; arrays of data pointers; 0 on success,
``(k + 1) << 32 | code`` when kernel call ``k`` failed with error code ``code``,
:data:`NEEDS_MEMORY`, or ``-(2 + i)`` when the check ``plan.steps[i]`` failed).  The symbol
carries a digest of the plan, so the VM, which plans again from the bytecode when it loads an
executable, only ever calls the function that was generated for exactly this plan.
:class:`NativeEntry` calls it from Python: one ctypes call (the GIL released) per model call.

What is not covered keeps the bytecode (the reason is recorded and printed): control flow
(``if``), calls of other VM functions or of Python functions (``R.print``, registered
functions, ``R.call_packed`` ...), parameters that are not tensors (objects, shapes, tuples),
a result that is a parameter or a constant itself.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import math
import re
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..arguments import ShapeMismatchError
from ..ndarray import ALLOC_ALIGNMENT, NDArray
from .builtins import (
    EXPR_CODES,
    MAKE_IMM,
    MAKE_LOAD,
    MATCH_ANY,
    MATCH_HEAP,
    MATCH_IMM,
    MATCH_STORE,
    ShapeTuple,
    Storage,
    check_dtype,
)
from .bytecode import Call, Const, Imm, Reg, Ret, VMFunction

__all__ = ["KernelParam", "KernelInfo", "Sym", "TensorRef", "ScalarRef", "EntryPlan", "plan_entry", "NativeEntry",
           "ENTRY_PREFIX", "TIMED_SUFFIX", "NEEDS_MEMORY"]

#: every native entry's symbol starts with this
ENTRY_PREFIX = "__minitvm_entry_"
#: the timed twin of an entry: the same calls, the clock written before the first kernel and after
#: each one into one more argument (``VirtualMachine.profile`` reads it)
TIMED_SUFFIX = "_timed"

#: what an entry with symbolic sizes returns when the arena or an output storage is too small
#: for this call (nothing has run; the sizes it needs are in the size table)
NEEDS_MEMORY = -1

#: the shape heap's arithmetic (``vm.builtin.eval_shape_expr``): code -> (printed, Python)
_ADD, _SUB, _MUL, _FDIV, _FMOD, _MIN, _MAX = (EXPR_CODES[k] for k in ("Add", "Sub", "Mul", "FloorDiv", "FloorMod",
                                                                       "Min", "Max"))
_OPS: dict[int, tuple[str, Callable[[int, int], int]]] = {
    _ADD: ("+", lambda a, b: a + b), _SUB: ("-", lambda a, b: a - b), _MUL: ("*", lambda a, b: a * b),
    _FDIV: ("//", lambda a, b: a // b), _FMOD: ("%", lambda a, b: a % b), _MIN: ("min", min), _MAX: ("max", max)}
_COMMUTATIVE = (_ADD, _MUL, _MIN, _MAX)
#: comparisons of a ``check`` step: name -> (printed, Python)
CHECKS: dict[str, tuple[str, Callable[[int, int], bool]]] = {
    "eq": ("==", lambda a, b: a == b), "ne": ("!=", lambda a, b: a != b),
    "le": ("<=", lambda a, b: a <= b), "ge": (">=", lambda a, b: a >= b)}


@dataclass(frozen=True)
class Sym:
    """A size known only when the entry is called: slot ``slot`` of its size table."""

    slot: int


def _enc(v: Any) -> Any:
    """A size (int or Sym) or scalar as JSON: a Sym is ``["$", slot]``."""
    return ["$", v.slot] if isinstance(v, Sym) else v


def _dec(v: Any) -> Any:
    if isinstance(v, list):
        if len(v) != 2 or v[0] != "$":
            raise ValueError(f"not a size: {v!r}")
        return Sym(int(v[1]))
    return v


def _dec_int(v: Any) -> Any:
    v = _dec(v)
    return v if isinstance(v, Sym) else int(v)


@dataclass(frozen=True)
class KernelParam:
    """One kernel parameter as the planner needs it: a buffer (dtype, dims: ints, ``("v", k)``
    for the kernel's k-th size variable, ``("p", k)`` for its k-th parameter (a scalar),
    ``("e", code, a, b)`` for an expression of them in the shape heap's codes, None for another
    expression) or a scalar (dtype)."""

    is_buffer: bool
    dtype: str
    dims: tuple = ()
    written: bool = False


@dataclass(frozen=True)
class KernelInfo:
    """A kernel's parameters and how many size variables follow them in its calling convention."""

    params: tuple[KernelParam, ...]
    num_shape_vars: int = 0


@dataclass(frozen=True)
class TensorRef:
    """A tensor of the plan: ``base`` is "param" (index), "const" (slot in the constant table),
    "arena" (index 0) or "out" (output storage index); ``offset`` in bytes.  The offset and the
    dimensions are ints or :class:`Sym` s."""

    base: str
    index: int
    offset: Any
    shape: tuple
    dtype: str

    @property
    def nbytes(self) -> int:
        """Bytes of a tensor of static shape."""
        return math.prod(self.shape) * check_dtype(self.dtype, "native entry").itemsize

    def text(self, params: list[str], consts: list[int], name: Callable[[Any], str] = str) -> str:
        offset = name(self.offset)
        where = {"param": lambda: params[self.index], "const": lambda: f"c[{consts[self.index]}]",
                 "arena": lambda: f"arena+{offset}", "out": lambda: f"out{self.index}+{offset}"}
        return where[self.base]()


@dataclass(frozen=True)
class ScalarRef:
    """A scalar argument of a kernel call: an immediate, or a :class:`Sym` (a size of the call)."""

    dtype: str
    value: Any


@dataclass
class EntryPlan:
    """Everything the native entry of one VM function does, decided at compile time.

    ``inputs``: per input slot of the size table, the (parameter, axis) Python reads it from;
    ``steps``: ``("set", slot, code, a, b)`` and ``("check", cmp, a, b, message)`` run at entry;
    ``slot_names``: a name per slot (for printing).  All empty when every shape is static."""

    func_name: str
    params: list[str]
    param_types: list[tuple[tuple, str]]
    consts: list[int] = field(default_factory=list)  # constant-pool index of each constant slot
    arena_size: Any = 0
    arena_storages: int = 0
    out_sizes: list = field(default_factory=list)
    calls: list[tuple[str, tuple]] = field(default_factory=list)
    result: list[TensorRef] = field(default_factory=list)
    result_is_tuple: bool = False
    inputs: list[tuple[int, int]] = field(default_factory=list)
    steps: list[tuple] = field(default_factory=list)
    slot_names: list[str] = field(default_factory=list)

    @property
    def symbolic(self) -> bool:
        """Whether sizes are computed per call (the entry then takes the size table)."""
        return bool(self.slot_names)

    @property
    def table_size(self) -> int:
        """Entries of the size table: the slots, the arena's capacity, each output's capacity."""
        return len(self.slot_names) + 1 + len(self.out_sizes)

    def to_json(self) -> dict:
        def ref(r: Any) -> Any:
            if isinstance(r, TensorRef):
                return ["t", r.base, r.index, _enc(r.offset), [_enc(d) for d in r.shape], r.dtype]
            return ["s", r.dtype, _enc(r.value)]

        d = {"func": self.func_name, "params": self.params,
             "param_types": [[list(s), d] for s, d in self.param_types],
             "consts": self.consts, "arena": _enc(self.arena_size), "outs": [_enc(n) for n in self.out_sizes],
             "calls": [[k, [ref(a) for a in args]] for k, args in self.calls],
             "result": [ref(r) for r in self.result], "tuple": self.result_is_tuple,
             "arena_storages": self.arena_storages}
        if self.symbolic:  # absent for static plans, whose symbols (digests) stay as they were
            d["sizes"] = {"inputs": [list(p) for p in self.inputs], "names": self.slot_names,
                          "steps": [[s[0], s[1], *(_enc(v) for v in s[2:4]), s[4]] if s[0] == "check" else
                                    [s[0], s[1], s[2], _enc(s[3]), _enc(s[4])] for s in self.steps]}
        return d

    @staticmethod
    def from_json(d: dict) -> "EntryPlan":
        """A plan saved by :meth:`to_json` (for printing a loaded executable; the VM never runs a
        saved plan, it plans again from the bytecode)."""
        def ref(r: list) -> Any:
            if r[0] == "t":
                return TensorRef(str(r[1]), int(r[2]), _dec_int(r[3]), tuple(_dec_int(x) for x in r[4]), str(r[5]))
            return ScalarRef(str(r[1]), _dec(r[2]))

        def dim(x: Any) -> Any:
            return x if x is None or isinstance(x, str) else int(x)

        try:
            plan = EntryPlan(str(d["func"]), [str(p) for p in d["params"]],
                             [(tuple(dim(x) for x in s), str(t)) for s, t in d["param_types"]])
            plan.consts = [int(k) for k in d["consts"]]
            plan.arena_size = _dec_int(d["arena"])
            plan.arena_storages = int(d.get("arena_storages", 0))
            plan.out_sizes = [_dec_int(n) for n in d["outs"]]
            plan.calls = [(str(k), tuple(ref(a) for a in args)) for k, args in d["calls"]]
            plan.result = [ref(r) for r in d["result"]]
            plan.result_is_tuple = bool(d["tuple"])
            sizes = d.get("sizes") or {}
            plan.inputs = [(int(p), int(a)) for p, a in sizes.get("inputs", [])]
            plan.slot_names = [str(n) for n in sizes.get("names", [])]
            plan.steps = [("check", str(s[1]), _dec_int(s[2]), _dec_int(s[3]), str(s[4])) if s[0] == "check" else
                          ("set", int(s[1]), int(s[2]), _dec_int(s[3]), _dec_int(s[4])) for s in sizes.get("steps", [])]
        except (KeyError, IndexError, TypeError, ValueError) as err:
            raise ValueError(f"corrupted native entry plan ({type(err).__name__}: {err})") from err
        return plan

    @property
    def digest(self) -> str:
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @property
    def symbol(self) -> str:
        """The generated function's name: the VM function's name and the plan's digest."""
        return f"{ENTRY_PREFIX}{re.sub(r'[^A-Za-z0-9_]', '_', self.func_name)}_{self.digest}"

    def name(self, v: Any) -> str:
        """A size as printed: a number or its slot's name."""
        return self.slot_names[v.slot] if isinstance(v, Sym) else str(v)

    def failed_check(self, index: int, sizes: Any) -> str:
        """The message of check step ``index``, with the values it saw in the size table ``sizes``."""
        _, _, a, b, message = self.steps[index]
        value = (lambda v: sizes[v.slot] if isinstance(v, Sym) else v)
        return message.replace("{a}", str(value(a))).replace("{b}", str(value(b)))

    def as_text(self) -> str:
        """The plan as a listing (what the generated function does, in order)."""
        name = self.name
        arena = ("planned at compile time" if not self.symbolic else
                 "sized at entry, grown when a call needs more")
        lines = [f"native entry of @{self.func_name}: {self.symbol} (one LLVM function beside the kernels)",
                 f"  # arena: {self.arena_storages} storage{'s' if self.arena_storages != 1 else ''} in "
                 f"{name(self.arena_size)} bytes, {arena}; outputs: "
                 + (", ".join(f"out{j} ({name(n)} bytes, fresh per call)" for j, n in enumerate(self.out_sizes))
                    or "none")]
        for pname, (shape, dtype) in zip(self.params, self.param_types):
            dims = ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "")
            lines.append(f"  check {pname}: ({dims}) {dtype}  (once, when Python calls)")
        for slot, (param, axis) in enumerate(self.inputs):
            lines.append(f"  size  {self.slot_names[slot]} = {self.params[param]}.shape[{axis}]  (read by Python)")
        for step in self.steps:
            if step[0] == "set":
                op = _OPS[step[2]][0]
                text = f"{op}({name(step[3])}, {name(step[4])})" if op.isalpha() else \
                    f"{name(step[3])} {op} {name(step[4])}"
                lines.append(f"  size  {self.slot_names[step[1]]} = {text}")
            else:
                lines.append(f"  check {name(step[2])} {CHECKS[step[1]][0]} {name(step[3])}")
        for kernel, args in self.calls:
            shown = [a.text(self.params, self.consts, name) if isinstance(a, TensorRef) else
                     f"{a.dtype}({name(a.value)})" for a in args]
            lines.append(f"  call  {kernel}({', '.join(shown)})")
        out = [r.text(self.params, self.consts, name) for r in self.result]
        lines.append(f"  ret   {'(' + ', '.join(out) + ')' if self.result_is_tuple else out[0]}")
        return "\n".join(lines)


class _NotCovered(Exception):
    """The function has something the native entry does not do (the message says what)."""


def plan_entry(func: VMFunction, func_names: list[str], constants: list[Any],
               kernel_info: Callable[[str], KernelInfo | None]) -> EntryPlan | str:
    """The plan of ``func``'s native entry, or the reason (a sentence) why it has none.

    ``kernel_info(name)`` describes a kernel of the library (None: not a kernel)."""
    try:
        return _Planner(func, func_names, constants, kernel_info).run()
    except _NotCovered as why:
        return str(why)


class _Shape(tuple):
    """A shape value of the bytecode with some dimensions known only per call (Sym)."""

    __slots__ = ()


@dataclass(frozen=True)
class _StorageValue:
    """What an ``alloc_storage`` register holds while planning: the storage's id."""

    sid: int


#: what the register of ``vm.builtin.alloc_shape_heap`` holds while planning
_HEAP = object()


def _shape_value(v: Any) -> bool:
    return isinstance(v, (ShapeTuple, _Shape))


def _as_shape(dims: Any) -> tuple:
    """A shape value: a ShapeTuple when every dimension is known at compile time."""
    return ShapeTuple(dims) if all(isinstance(d, int) for d in dims) else _Shape(dims)


def _order(v: Any) -> tuple:
    return (1, v.slot) if isinstance(v, Sym) else (0, v)


class _Sizes:
    """The size table of a plan being made: input slots, computed slots and checks, folded
    where the values are known at compile time and shared where two are the same expression."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.inputs: list[tuple[int, int]] = []
        self.steps: list[tuple] = []
        self._defs: dict[tuple, Sym] = {}  # (code, a, b) -> the slot computing it
        self._slot_def: dict[int, tuple] = {}
        self._checks: set[tuple] = set()
        self._nonneg: set[int] = set()  # slots that cannot be negative (shapes, and sums and products of them)

    def nonneg(self, v: Any) -> bool:
        return v.slot in self._nonneg if isinstance(v, Sym) else v >= 0

    def input(self, name: str, param: int, axis: int) -> Sym:
        assert len(self.inputs) == len(self.names), "input slots come first"
        self.inputs.append((param, axis))
        self.names.append(name)
        self._nonneg.add(len(self.names) - 1)  # an array's dimension
        return Sym(len(self.names) - 1)

    def expr(self, code: int, a: Any, b: Any) -> Any:
        """``a op b`` (ints or Syms): an int when both are, else the slot that computes it."""
        if isinstance(a, int) and isinstance(b, int):
            if code in (_FDIV, _FMOD) and b == 0:
                raise _NotCovered("a shape divides by zero")
            return _OPS[code][1](a, b)
        if code in _COMMUTATIVE and isinstance(a, int):
            a, b = b, a  # the constant second
        if (code in (_ADD, _SUB) and b == 0) or (code in (_MUL, _FDIV) and b == 1):
            return a
        if code == _MUL and b == 0:
            return 0
        if code in (_ADD, _MUL) and isinstance(b, int):  # (x * 32) * 4 -> x * 128: one slot, not two
            d = self._slot_def.get(a.slot)
            if d is not None and d[0] == code and isinstance(d[2], int):
                return self.expr(code, d[1], _OPS[code][1](d[2], b))
        if code in _COMMUTATIVE and isinstance(b, Sym) and b.slot < a.slot:
            a, b = b, a
        known = self._defs.get((code, a, b))
        if known is not None:
            return known
        if code in (_FDIV, _FMOD) and isinstance(b, Sym):
            self.check("ne", b, 0, f"a shape divides by {self.names[b.slot]} = {{a}}")
        sym = Sym(len(self.names))
        self.names.append(f"s{sym.slot}")
        self.steps.append(("set", sym.slot, code, a, b))
        self._defs[(code, a, b)] = sym
        self._slot_def[sym.slot] = (code, a, b)
        both, either = self.nonneg(a) and self.nonneg(b), self.nonneg(a) or self.nonneg(b)
        if (both and code != _SUB) or (either and code == _MAX):
            self._nonneg.add(sym.slot)
        return sym

    def prod(self, dims: Any) -> Any:
        out: Any = 1
        for d in dims:
            out = self.expr(_MUL, out, d)
        return out

    def align(self, nbytes: Any) -> Any:
        """``nbytes`` (at least 1) rounded up to a whole number of ``ALLOC_ALIGNMENT`` blocks."""
        blocks = self.expr(_FDIV, self.expr(_ADD, self.expr(_MAX, nbytes, 1), ALLOC_ALIGNMENT - 1), ALLOC_ALIGNMENT)
        return self.expr(_MUL, blocks, ALLOC_ALIGNMENT)

    def check(self, cmp: str, a: Any, b: Any, message: str) -> None:
        """Check ``a cmp b`` at entry (``message`` with ``{a}``/``{b}`` for the values when it
        fails); one that fails at compile time means the bytecode raises: no native entry."""
        if isinstance(a, int) and isinstance(b, int):
            if not CHECKS[cmp][1](a, b):
                text = message.replace("{a}", str(a)).replace("{b}", str(b))
                raise _NotCovered(f"{text} (the VM raises the error)")
            return
        if (a == b and cmp != "ne") or (cmp == "ge" and b == 0 and self.nonneg(a)):
            return
        key = (cmp, *sorted((a, b), key=_order)) if cmp in ("eq", "ne") else (cmp, a, b)
        if key not in self._checks:  # the first message stays (its {a} and {b} in its order)
            self._checks.add(key)
            self.steps.append(("check", cmp, a, b, message))


class _Planner:
    def __init__(self, func: VMFunction, func_names: list[str], constants: list[Any],
                 kernel_info: Callable[[str], KernelInfo | None]):
        self.func, self.names, self.constants, self.kernel_info = func, func_names, constants, kernel_info
        self.storages: list[Any] = []  # bytes of each storage (int or Sym), by storage id
        self.regs: dict[int, Any] = {}
        self.const_slots: dict[int, int] = {}
        self.sizes = _Sizes()
        self.heap: dict[int, Any] = {}  # the bytecode's shape-heap slot -> its value (int or Sym)

    def run(self) -> EntryPlan:
        types = self.bind_params()
        calls: list[tuple[str, tuple]] = []
        result: Any = None
        for pc, ins in enumerate(self.func.instructions):
            if isinstance(ins, Ret):
                result = self.regs.get(ins.src)
                break
            if not isinstance(ins, Call):
                raise _NotCovered(f"instruction {pc} is {type(ins).__name__.lower()} (control flow)")
            name = self.names[ins.func_index]
            value = self.call(pc, name, ins, calls)
            if ins.dst is not None:
                self.regs[ins.dst] = value
        outputs = self.result_tensors(result)
        out_ids = list(dict.fromkeys(t.index for t in outputs))
        # arena offsets, in storage order, each aligned as the VM aligns a storage
        place: dict[int, tuple[str, int, Any]] = {}
        arena: Any = 0
        for sid, nbytes in enumerate(self.storages):
            if sid in out_ids:
                place[sid] = ("out", out_ids.index(sid), 0)
            else:
                place[sid] = ("arena", 0, arena)
                arena = self.sizes.expr(_ADD, arena, self.sizes.align(nbytes))

        def resolve(r: Any) -> Any:
            if isinstance(r, TensorRef) and r.base == "storage":
                base, index, start = place[r.index]
                return TensorRef(base, index, self.sizes.expr(_ADD, start, r.offset), r.shape, r.dtype)
            return r

        plan = EntryPlan(self.func.name, list(self.func.params), types)
        plan.consts = [k for k, _ in sorted(self.const_slots.items(), key=lambda kv: kv[1])]
        plan.arena_size = arena
        plan.arena_storages = len(self.storages) - len(out_ids)
        plan.out_sizes = [self.storages[sid] for sid in out_ids]
        plan.calls = [(k, tuple(resolve(a) for a in args)) for k, args in calls]
        plan.result = [resolve(t) for t in outputs]
        plan.result_is_tuple = isinstance(result, tuple) and not _shape_value(result)
        plan.inputs, plan.steps, plan.slot_names = self.sizes.inputs, _live_steps(plan, self.sizes.steps), \
            self.sizes.names
        return plan

    def bind_params(self) -> list[tuple[tuple, str]]:
        """The parameters as tensors; each dimension not fixed at compile time is an input slot
        (one per name: the VM's argument check makes every ``n`` of a call agree)."""
        infos = self.func.param_info or [None] * len(self.func.params)
        named: dict[str, Sym] = {}
        types = []
        for i, (name, info) in enumerate(zip(self.func.params, infos)):
            if info is None or info.kind != "tensor" or not info.dtype or (info.shape is None and info.ndim < 0):
                what = ("a tensor of unknown dtype or rank" if info is None or info.kind == "tensor" else
                        "an object" if info.kind == "any" else f"a {info.kind}")
                raise _NotCovered(f"parameter {name!r} is {what} ({info}); the native entry takes tensors of "
                                  "known dtype and rank")
            shape = info.shape if info.shape is not None else (None,) * info.ndim
            dims = []
            for axis, d in enumerate(shape):
                if isinstance(d, int):
                    dims.append(d)
                elif isinstance(d, str) and d in named:
                    dims.append(named[d])
                else:
                    sym = self.sizes.input(d if isinstance(d, str) else f"{name}.shape[{axis}]", i, axis)
                    if isinstance(d, str):
                        named[d] = sym
                    dims.append(sym)
            types.append((tuple(shape), info.dtype))
            self.regs[i] = TensorRef("param", i, 0, tuple(dims), info.dtype)
        return types

    # -- instructions ------------------------------------------------------------------------------
    def arg(self, a: Any) -> Any:
        if isinstance(a, Reg):
            if a.index not in self.regs:
                raise _NotCovered(f"register %{a.index} holds a value the native entry does not track")
            return self.regs[a.index]
        if isinstance(a, Imm):
            return a.value
        assert isinstance(a, Const)
        c = self.constants[a.index]
        if isinstance(c, np.ndarray):
            slot = self.const_slots.setdefault(a.index, len(self.const_slots))
            return TensorRef("const", slot, 0, tuple(c.shape), c.dtype.name)
        return c

    def call(self, pc: int, name: str, ins: Call, calls: list) -> Any:
        args = [self.arg(a) for a in ins.args]
        builtin = _BUILTINS.get(name)
        if builtin is not None:
            return builtin(self, pc, args)
        if name == "vm.builtin.tuple_getitem" and isinstance(args[0], tuple) and isinstance(args[1], int) \
                and -len(args[0]) <= args[1] < len(args[0]):
            return args[0][args[1]]  # a field of a tuple, or one dimension of a shape
        info = self.kernel_info(name)
        if info is None:
            raise _NotCovered(f"instruction {pc} calls {name}, which is not a kernel of the library "
                              "(a Python function the native entry cannot call)")
        calls.append((name, self.kernel_args(pc, name, info, args)))
        return None

    def alloc_storage(self, pc: int, args: list) -> _StorageValue:
        size = args[0]
        dims = (size,) if isinstance(size, (int, Sym)) else tuple(size) if _shape_value(size) else None
        if dims is None or len(args) > 2 or (len(args) == 2 and not isinstance(args[1], str)):
            raise _NotCovered(f"instruction {pc}: alloc_storage of a size the native entry does not track")
        itemsize = check_dtype(args[1] if len(args) == 2 else "uint8", "alloc_storage").itemsize
        nbytes = self.sizes.expr(_MUL, self.sizes.prod(dims), itemsize)
        self.sizes.check("ge", nbytes, 0, f"instruction {pc}: alloc_storage: negative size {{a}}")
        self.storages.append(nbytes)
        return _StorageValue(len(self.storages) - 1)

    def alloc_tensor(self, pc: int, args: list) -> TensorRef:
        storage, offset, shape, dtype = (args + [None] * 4)[:4]
        if not (isinstance(storage, _StorageValue) and isinstance(offset, int) and _shape_value(shape)
                and isinstance(dtype, str)):
            raise _NotCovered(f"instruction {pc}: alloc_tensor with operands the native entry does not track")
        itemsize = check_dtype(dtype, "alloc_tensor").itemsize
        if offset < 0 or offset % itemsize:
            raise _NotCovered(f"instruction {pc}: alloc_tensor at a bad offset {offset} (the VM raises the error)")
        for d in shape:
            self.sizes.check("ge", d, 0, f"instruction {pc}: alloc_tensor: a dimension is negative ({{a}})")
        end = self.sizes.expr(_ADD, offset, self.sizes.expr(_MUL, self.sizes.prod(shape), itemsize))
        self.sizes.check("le", end, self.storages[storage.sid],
                         f"instruction {pc}: alloc_tensor: a {dtype} tensor ending at byte {{a}} does not fit "
                         "in a storage of {b} bytes")
        return TensorRef("storage", storage.sid, offset, tuple(shape), dtype)

    def shape_of(self, value: Any, pc: int, what: str) -> tuple:
        if isinstance(value, TensorRef):
            return value.shape
        if _shape_value(value):
            return tuple(value)
        raise _NotCovered(f"instruction {pc}: {what} of a value the native entry does not track")

    def match_shape(self, pc: int, args: list) -> None:
        """Read dimensions into the shape heap, or check them (at entry when known per call)."""
        value, heap, ndim, rest = args[0], args[1], args[2], args[3:]
        dims = self.shape_of(value, pc, "match_shape")
        if heap is not _HEAP or not isinstance(ndim, int) or len(rest) not in (2 * ndim, 2 * ndim + 1) \
                or len(dims) != ndim:
            raise _NotCovered(f"instruction {pc}: a match_shape the native entry does not follow")
        where = rest[-1] if len(rest) == 2 * ndim + 1 and isinstance(rest[-1], str) and rest[-1] else "match_shape"
        for axis in range(ndim):
            code, k = rest[2 * axis], rest[2 * axis + 1]
            if code == MATCH_STORE:
                self.heap[k] = dims[axis]
            elif code == MATCH_IMM:
                self.sizes.check("eq", dims[axis], k, f"{where}: dimension {axis} is {{a}}, expected {{b}}")
            elif code == MATCH_HEAP and k in self.heap:
                self.sizes.check("eq", dims[axis], self.heap[k], f"{where}: dimension {axis} is {{a}}, but the same "
                                 "symbolic dimension was {b} earlier")
            elif code != MATCH_ANY:
                raise _NotCovered(f"instruction {pc}: a match_shape the native entry does not follow")

    def eval_shape_expr(self, pc: int, args: list) -> None:
        heap, slot, program = args[0], args[1], args[2:]
        stack: list[Any] = []
        for i in range(0, len(program) - 1, 2):
            code, k = program[i], program[i + 1]
            if code == 0:  # EXPR_IMM
                stack.append(k)
            elif code == 1 and k in self.heap:  # EXPR_LOAD
                stack.append(self.heap[k])
            elif code in _OPS and len(stack) >= 2:
                b = stack.pop()
                stack.append(self.sizes.expr(code, stack.pop(), b))
            else:
                stack = []
                break
        if heap is not _HEAP or len(stack) != 1 or len(program) % 2:
            raise _NotCovered(f"instruction {pc}: a shape expression the native entry does not follow")
        self.heap[slot] = stack[0]

    def make_shape(self, pc: int, args: list) -> Any:
        heap, ndim, pattern = args[0], args[1], args[2:]
        if not isinstance(ndim, int) or len(pattern) != 2 * ndim:
            raise _NotCovered(f"instruction {pc}: a make_shape the native entry does not follow")
        dims = []
        for axis in range(ndim):
            code, k = pattern[2 * axis], pattern[2 * axis + 1]
            if code == MAKE_IMM and isinstance(k, int):
                dims.append(k)
            elif code == MAKE_LOAD and heap is _HEAP and k in self.heap:
                dims.append(self.heap[k])
            else:
                raise _NotCovered(f"instruction {pc}: a make_shape the native entry does not follow")
        return _as_shape(dims)

    def check_info(self, pc: int, args: list, kind: str) -> None:
        """``check_tensor_info`` / ``check_shape_info`` / ``check_tuple_info`` of a value planned
        here: decided now (the VM's argument check already did those of the parameters)."""
        value, size, dtype = (args + [None, -1, ""][len(args):])[:3]
        if not isinstance(size, int):
            ok = False
        elif kind == "tensor":
            ok = isinstance(value, TensorRef) and (size < 0 or len(value.shape) == size) and \
                (not dtype or dtype == value.dtype)
        elif kind == "shape":
            ok = _shape_value(value) and (size < 0 or len(value) == size)
        else:
            ok = isinstance(value, tuple) and not _shape_value(value) and (size < 0 or len(value) == size)
        if not ok:
            raise _NotCovered(f"instruction {pc}: check_{kind}_info fails or is not known at compile time "
                              "(the VM raises the error)")

    def reshape(self, pc: int, args: list) -> TensorRef:
        """``vm.builtin.reshape``: the same memory seen with another shape of as many elements."""
        value, shape = args[0], args[1] if len(args) > 1 else None
        if not isinstance(value, TensorRef) or not _shape_value(shape):
            raise _NotCovered(f"instruction {pc}: a reshape the native entry does not follow")
        self.sizes.check("eq", self.sizes.prod(shape), self.sizes.prod(value.shape),
                         f"instruction {pc}: reshape: cannot view {{b}} elements as a shape of {{a}}")
        return TensorRef(value.base, value.index, value.offset, tuple(shape), value.dtype)

    def kernel_args(self, pc: int, name: str, info: KernelInfo, args: list) -> tuple:
        where = f"instruction {pc} ({name})"
        if len(args) != len(info.params):
            raise _NotCovered(f"{where}: {len(args)} arguments for {len(info.params)} parameters")
        sizes: dict[int, Any] = {}
        out: list[Any] = []
        for k, (p, a) in enumerate(zip(info.params, args)):
            if p.is_buffer:
                if not isinstance(a, TensorRef) or a.dtype != p.dtype or len(a.shape) != len(p.dims):
                    raise _NotCovered(f"{where}: argument {k} is not a {p.dtype} tensor of {len(p.dims)} dimensions")
                if p.written and a.base == "const":
                    raise _NotCovered(f"{where}: writes constant c[{self.func_const(a)}]")
                for axis, (d, got) in enumerate(zip(p.dims, a.shape)):
                    if isinstance(d, tuple) and d[0] == "v":  # a size variable: bound by its first sight
                        self.same(sizes.setdefault(d[1], got), got, f"{where}: size variable {d[1]} is {{a}} "
                                  f"and {{b}} (argument {k}, dimension {axis})")
                out.append(a)
            elif isinstance(a, Sym) and p.dtype.startswith(("int", "uint")):
                out.append(ScalarRef(p.dtype, a))
            else:
                if isinstance(a, bool) or not isinstance(a, (int, float)):
                    raise _NotCovered(f"{where}: scalar argument {k} is not a number the native entry knows")
                out.append(ScalarRef(p.dtype, bool(a) if p.dtype == "bool" else
                                     float(a) if p.dtype.startswith("float") else int(a)))
        if any(v not in sizes for v in range(info.num_shape_vars)):
            raise _NotCovered(f"{where}: a size variable of the kernel is not a whole dimension of an argument")
        for k, (p, a) in enumerate(zip(info.params, args)):  # the other dimensions, once all variables are known
            for axis, (d, got) in enumerate(zip(p.dims, a.shape) if p.is_buffer else ()):
                if not (isinstance(d, tuple) and d[0] == "v"):
                    self.same(self.kernel_dim(d, sizes, args, where), got, f"{where}: argument {k} has {{b}} in "
                              f"dimension {axis}, the kernel wants {{a}}")
        out += [ScalarRef("int64", sizes[v]) for v in range(info.num_shape_vars)]
        return tuple(out)

    def same(self, want: Any, got: Any, message: str) -> None:
        self.sizes.check("eq", want, got, message)

    def kernel_dim(self, d: Any, sizes: dict, args: list, where: str) -> Any:
        """A kernel's dimension from its size variables' and scalar arguments' values
        (``("e", code, a, b)`` computed)."""
        if isinstance(d, int):
            return d
        if isinstance(d, tuple) and d[0] == "v":
            return sizes[d[1]]
        if isinstance(d, tuple) and d[0] == "p" and isinstance(args[d[1]], (int, Sym)) \
                and not isinstance(args[d[1]], bool):
            return args[d[1]]
        if isinstance(d, tuple) and d[0] == "e" and d[1] in _OPS:
            return self.sizes.expr(d[1], self.kernel_dim(d[2], sizes, args, where),
                                   self.kernel_dim(d[3], sizes, args, where))
        raise _NotCovered(f"{where}: a dimension of the kernel is an expression the native entry does not follow")

    def func_const(self, ref: TensorRef) -> int:
        return next(k for k, slot in self.const_slots.items() if slot == ref.index)

    def result_tensors(self, result: Any) -> list[TensorRef]:
        values = list(result) if isinstance(result, tuple) and not _shape_value(result) else [result]
        out = []
        for v in values:
            if not isinstance(v, TensorRef):
                raise _NotCovered(f"the result is not a tensor or a tuple of tensors ({type(v).__name__})")
            if v.base != "storage":
                raise _NotCovered(f"the result is a {v.base}ameter or constant itself" if v.base == "param"
                                  else "the result is a constant itself")
            out.append(v)
        return out


def _live_steps(plan: EntryPlan, steps: list[tuple]) -> list[tuple]:
    """``steps`` without the sizes nothing uses (one a check needed while planning, say)."""
    used = {v.slot for v in [plan.arena_size, *plan.out_sizes] if isinstance(v, Sym)}
    refs = [a for _, args in plan.calls for a in args] + list(plan.result)
    for r in refs:
        values = [r.offset, *r.shape] if isinstance(r, TensorRef) else [r.value]
        used.update(v.slot for v in values if isinstance(v, Sym))
    live = []
    for step in reversed(steps):  # a step only uses slots set before it
        if step[0] == "check" or step[1] in used:
            live.append(step)
            used.update(v.slot for v in (step[2:4] if step[0] == "check" else step[3:5]) if isinstance(v, Sym))
    return live[::-1]


#: the VM builtins the planner follows: name -> ``fn(planner, pc, args)``, the value the register gets
_BUILTINS: dict[str, Callable[[_Planner, int, list], Any]] = {
    "vm.builtin.alloc_storage": _Planner.alloc_storage,
    "vm.builtin.alloc_tensor": _Planner.alloc_tensor,
    "vm.builtin.alloc_shape_heap": lambda p, pc, args: _HEAP,
    "vm.builtin.match_shape": _Planner.match_shape,
    "vm.builtin.eval_shape_expr": _Planner.eval_shape_expr,
    "vm.builtin.make_shape": _Planner.make_shape,
    "vm.builtin.shape_of": lambda p, pc, args: _as_shape(p.shape_of(args[0] if args else None, pc, "shape_of")),
    "vm.builtin.check_tensor_info": lambda p, pc, args: p.check_info(pc, args, "tensor"),
    "vm.builtin.check_shape_info": lambda p, pc, args: p.check_info(pc, args, "shape"),
    "vm.builtin.check_tuple_info": lambda p, pc, args: p.check_info(pc, args, "tuple"),
    "vm.builtin.reshape": _Planner.reshape,
    "vm.builtin.make_tuple": lambda p, pc, args: tuple(args),
    "vm.builtin.null_value": lambda p, pc, args: None,
}

# -- calling from Python -------------------------------------------------------------------------------


def _unused_counts(storages: list[Storage], results: list[NDArray]) -> list[int]:
    """Reference counts of output storages' memory and result tensors, held only by the entry."""
    return [sys.getrefcount(st.raw) for st in storages] + [sys.getrefcount(r) for r in results]


class NativeEntry:
    """The native entry of one VM function, called with checked arguments: ``run(values)``.

    The arena is allocated once and reused (with symbolic sizes: grown by half again or to what
    a call needs, whichever is more); a call that finds it busy (another thread is in the same
    function) gets an arena of its own.  Outputs are reused only when nothing holds the previous
    call's results any more (so a result the caller keeps is never overwritten).
    """

    def __init__(self, plan: EntryPlan, address: int, constants: list[Any],
                 raise_kernel_error: Callable[[str, int], None], library: Any = None, timed_address: int = 0):
        self.plan = plan
        # the machine code at ``address`` is freed with its library: the entry keeps it alive
        self._library = library
        self._symbolic = plan.symbolic
        tables = 5 if plan.symbolic else 4
        self._cfunc = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_void_p] * tables)(address)
        # the timed twin (None: a library saved without one)
        self._timed = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_void_p] * (tables + 1))(timed_address) \
            if timed_address else None
        self._param_type = ctypes.c_void_p * max(1, len(plan.params))
        self._out_type = ctypes.c_void_p * max(1, len(plan.out_sizes))
        # the constants stay alive as long as the entry: their pointers are in the table
        self._const_values = [constants[k] for k in plan.consts]
        self._consts = (ctypes.c_void_p * max(1, len(plan.consts)))(
            *[int(c.ctypes.data) if isinstance(c, np.ndarray) else c._ptr for c in self._const_values])
        self._consts_addr = ctypes.addressof(self._consts)
        # the tables of the uncontended call, reused (a busy entry makes its own, see run)
        self._params, self._outs = self._param_type(), self._out_type()
        self._params_addr, self._outs_addr = ctypes.addressof(self._params), ctypes.addressof(self._outs)
        self._lock = threading.Lock()
        self._raise = raise_kernel_error
        self._last: tuple | None = None  # (storages, results, their reference counts when unused[, shapes])
        self.calls = 0
        if self._symbolic:
            self._arena = Storage(0)  # sized by the first call
            self._table_type = ctypes.c_int64 * plan.table_size
            self._table = self._table_type()
            self._table_addr = ctypes.addressof(self._table)
            self._cap = len(plan.slot_names)  # the arena's capacity; the outputs' follow
            self._inputs = list(plan.inputs)
            self._out_guess = [n if isinstance(n, int) else 0 for n in plan.out_sizes]  # what the last call needed
            self._sized_outs = any(isinstance(n, Sym) for n in plan.out_sizes)
            self._sym_views = [(r.index, r.offset, check_dtype(r.dtype, "result"), r.shape) for r in plan.result]
        else:
            self._arena = Storage(plan.arena_size)
            self._views = [(r.index, r.offset, r.offset + r.nbytes, check_dtype(r.dtype, "result"), r.shape)
                           for r in plan.result]

    def _new_outputs(self) -> tuple[list[Storage], list[NDArray], list[int]]:
        storages = [Storage(n) for n in self.plan.out_sizes]
        results = [NDArray(storages[j].buffer[start:end].view(dt).reshape(shape), _address=storages[j].address + start)
                   for j, start, end, dt, shape in self._views]
        return storages, results, [st.address for st in storages]

    def _outputs(self) -> tuple[list[NDArray], list[int]]:
        """The result tensors and output storage addresses of an uncontended call: those of the
        last call again when nothing holds them any more (the VM's storages are reused the same
        way, decided by Python's reference counts), else new ones."""
        last = self._last
        if last is not None and _unused_counts(last[0], last[1]) == last[3]:
            return last[1], last[2]
        storages, results, addresses = self._new_outputs()
        self._last = (storages, results, addresses, None)
        self._last = (storages, results, addresses, _unused_counts(storages, results))
        return results, addresses

    @property
    def can_time(self) -> bool:
        """Whether :meth:`run_timed` can time the kernels (the library has the timed twin)."""
        return self._timed is not None

    def run_timed(self, values: list | tuple) -> tuple[Any, list[float]]:
        """:meth:`run`, through the timed twin: (the result, the seconds of each kernel call of
        ``plan.calls``, in order).  The uncontended path only: the entry's own arena and tables,
        as a plain call uses them; the call holds the entry's lock (another thread's call waits)."""
        if self._timed is None:
            raise RuntimeError(f"native entry of @{self.plan.func_name}: the library has no timed entry "
                               "(saved by an older minitvm); profile through the bytecode")
        stamps = (ctypes.c_int64 * (len(self.plan.calls) + 1))()
        timed, address = self._timed, ctypes.addressof(stamps)
        with self._lock:
            result = self._run_locked(values, lambda *tables: timed(*tables, address))
        return result, [(stamps[k + 1] - stamps[k]) * 1e-9 for k in range(len(self.plan.calls))]

    def run(self, values: list | tuple) -> Any:
        """Run the entry on checked arguments (NDArrays); the result as the VM returns it."""
        if self._lock.acquire(blocking=False):
            try:
                return self._run_locked(values, self._cfunc)
            finally:
                self._lock.release()
        # another thread is in this entry: tables, outputs and an arena of this call's own
        if self._symbolic:
            dims = [values[i]._array.shape[axis] for i, axis in self._inputs]
            table = self._table_type()
            rc, _, storages = self._call_sized(self._cfunc, values, dims, table, self._param_type(), self._out_type(),
                                               Storage(0), [Storage(n) for n in self._out_guess])
            self.calls += 1
            if rc:
                self._fail(rc, table)
            results = self._views_of(storages, table)
        else:
            _, results, addresses = self._new_outputs()
            arena = Storage(self.plan.arena_size)
            rc = self._cfunc(self._param_type(*[v._ptr for v in values]), self._consts_addr, arena.address,
                             self._out_type(*addresses))
            self.calls += 1
            if rc:
                self._fail(rc)
        return tuple(results) if self.plan.result_is_tuple else results[0]

    def _run_locked(self, values: list | tuple, cfunc: Callable[..., int]) -> Any:
        """The uncontended call (the caller holds the lock) of ``cfunc`` (the entry or its timed
        twin): the entry's own tables, arena and outputs (the last call's again when nothing
        holds them)."""
        if self._symbolic:
            return self._run_sized(values, cfunc)
        results, addresses = self._outputs()
        params, outs = self._params, self._outs
        for i, v in enumerate(values):
            params[i] = v._ptr
        for j, address in enumerate(addresses):
            outs[j] = address
        rc = cfunc(self._params_addr, self._consts_addr, self._arena.address, self._outs_addr)
        self.calls += 1
        if rc:
            self._fail(rc)
        return tuple(results) if self.plan.result_is_tuple else results[0]

    # -- symbolic sizes ---------------------------------------------------------------------------
    def _run_sized(self, values: list | tuple, cfunc: Callable[..., int]) -> Any:
        """The uncontended call of an entry with symbolic sizes: the input slots from the
        arguments' shapes, then the entry, which sizes everything; again with more memory if it
        asked for it."""
        dims = [values[i]._array.shape[axis] for i, axis in self._inputs]
        last = self._last  # (storages, results, their reference counts when unused, input sizes)
        unused = last is not None and _unused_counts(last[0], last[1]) == last[2]
        storages = last[0] if unused else [Storage(n) for n in self._out_guess]
        rc, self._arena, storages = self._call_sized(cfunc, values, dims, self._table, self._params, self._outs,
                                                     self._arena, storages)
        self.calls += 1
        if rc:
            self._fail(rc, self._table)
        # the same input sizes give the same shapes: the last results again, if unused
        results = last[1] if unused and storages is last[0] and last[3] == dims else \
            self._remember(storages, dims)
        return tuple(results) if self.plan.result_is_tuple else results[0]

    def _call_sized(self, cfunc: Callable[..., int], values: list | tuple, dims: list[int], table: Any, params: Any,
                    outs: Any, arena: Storage, storages: list[Storage]) -> tuple[int, Storage, list[Storage]]:
        table[:len(dims)] = dims
        for i, v in enumerate(values):
            params[i] = v._ptr
        cap, plan = self._cap, self.plan
        for attempt in range(2):
            table[cap] = arena.nbytes
            for j, st in enumerate(storages):
                outs[j] = st.address
                table[cap + 1 + j] = st.nbytes
            rc = cfunc(ctypes.addressof(params), self._consts_addr, arena.address, ctypes.addressof(outs),
                       ctypes.addressof(table))
            if rc != NEEDS_MEMORY:
                if rc == 0 and self._sized_outs:
                    self._out_guess = [table[n.slot] if isinstance(n, Sym) else n for n in plan.out_sizes]
                return rc, arena, storages
            if attempt:
                break
            need = table[plan.arena_size.slot] if isinstance(plan.arena_size, Sym) else plan.arena_size
            if need > arena.nbytes:  # grown by half again at least: a growing n reallocates rarely
                arena = Storage(max(need, arena.nbytes + arena.nbytes // 2))
            for j, n in enumerate(plan.out_sizes):
                need = table[n.slot] if isinstance(n, Sym) else n
                if need > storages[j].nbytes:
                    storages = storages[:j] + [Storage(need)] + storages[j + 1:]
        raise RuntimeError(f"native entry of @{plan.func_name}: still short of memory after growing")

    def _views_of(self, storages: list[Storage], table: Any) -> list[NDArray]:
        """The result tensors of a call, with the shapes it computed, in its output storages."""
        results = []
        for j, offset, dt, shape in self._sym_views:
            dims = tuple(table[d.slot] if isinstance(d, Sym) else d for d in shape)
            start = table[offset.slot] if isinstance(offset, Sym) else offset
            end = start + math.prod(dims) * dt.itemsize
            results.append(NDArray(storages[j].buffer[start:end].view(dt).reshape(dims),
                                   _address=storages[j].address + start))
        return results

    def _remember(self, storages: list[Storage], dims: list[int]) -> list[NDArray]:
        """New result tensors of the uncontended call, remembered with their reference counts
        (when they are unused again, the next call of the same input sizes returns them)."""
        self._last = None
        results = self._views_of(storages, self._table)
        self._last = (storages, results, None, dims)
        self._last = (storages, results, _unused_counts(storages, results), dims)
        return results

    def _fail(self, rc: int, table: Any = None) -> None:
        if rc < 0:  # a check of the sizes, before anything ran
            err = ShapeMismatchError(self.plan.failed_check(-rc - 2, table))
            err.add_note(f"  in the native entry of @{self.plan.func_name}, before any kernel ran")
            raise err
        index, code = (rc >> 32) - 1, rc & 0xFFFFFFFF
        kernel = self.plan.calls[index][0] if 0 <= index < len(self.plan.calls) else "?"
        try:
            self._raise(kernel, code)
        except Exception as err:
            err.add_note(f"  in the native entry of @{self.plan.func_name}, kernel call {index} ({kernel})")
            raise
        raise RuntimeError(f"native entry of @{self.plan.func_name}: kernel call {index} ({kernel}) failed "
                           f"with code {code}")
