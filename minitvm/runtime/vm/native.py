"""Native entries: a VM function's whole instruction sequence as one machine-code function.

TVM's ``relax.build(..., exec_mode="compiled")`` idea.  When a bytecode function is a straight
line of allocations and kernel calls over tensors of static shapes, nothing in it needs Python
between the kernels.  The planner here reads the bytecode (data, as verified by the
Executable) and the kernels' parameter lists, and produces an :class:`EntryPlan`:

* every storage the function allocates gets a place at compile time: the ones the result
  lives in are *outputs*, allocated fresh for each call (the caller keeps them); the others
  are carved from one *arena* of ``arena_size`` bytes, allocated once per VirtualMachine;
* every tensor is a (base, byte offset, shape, dtype): a parameter, a constant, the arena or
  an output storage;
* every kernel call lists its arguments as such tensors or as immediate scalars, checked
  against the kernel's parameters (dtype, static shape) here, once -- so the generated code
  checks nothing, and the call from Python checks the arguments once (the VM's own check).

The code generator (``minitvm.target.codegen.native_entry``) turns the plan into one LLVM
function in the same module as the kernels::

    i64 __minitvm_entry_<name>_<digest>(ptr params, ptr consts, ptr arena, ptr outputs)

(arrays of data pointers; 0 on success, else ``(k + 1) << 32 | code`` when kernel call ``k``
failed with error code ``code``).  The symbol carries a digest of the plan, so the VM, which
plans again from the bytecode when it loads an executable, only ever calls the function that
was generated for exactly this plan.  :class:`NativeEntry` calls it from Python: one ctypes
call (the GIL released) per model call.

What is not covered keeps the bytecode (the reason is recorded and printed): symbolic shapes
(``n``: the shape heap and its checks), control flow (``if``), calls of other VM functions or
of Python functions (``R.print``, registered functions, ``vm.builtin.reshape`` ...), a result
that is a parameter or a constant itself.
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

from ..ndarray import ALLOC_ALIGNMENT, NDArray
from .builtins import ShapeTuple, Storage, check_dtype
from .bytecode import Call, Const, Imm, Reg, Ret, VMFunction

__all__ = ["KernelParam", "KernelInfo", "TensorRef", "ScalarRef", "EntryPlan", "plan_entry", "NativeEntry",
           "ENTRY_PREFIX"]

#: every native entry's symbol starts with this
ENTRY_PREFIX = "__minitvm_entry_"


@dataclass(frozen=True)
class KernelParam:
    """One kernel parameter as the planner needs it: a buffer (dtype, dims: ints, ``("v", k)``
    for the kernel's k-th size variable, None for an expression) or a scalar (dtype)."""

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
    "arena" (index 0) or "out" (output storage index); ``offset`` in bytes."""

    base: str
    index: int
    offset: int
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * check_dtype(self.dtype, "native entry").itemsize

    def text(self, params: list[str], consts: list[int]) -> str:
        where = {"param": lambda: params[self.index], "const": lambda: f"c[{consts[self.index]}]",
                 "arena": lambda: f"arena+{self.offset}", "out": lambda: f"out{self.index}+{self.offset}"}
        return where[self.base]()


@dataclass(frozen=True)
class ScalarRef:
    """An immediate scalar argument of a kernel call."""

    dtype: str
    value: Any


@dataclass
class EntryPlan:
    """Everything the native entry of one VM function does, decided at compile time."""

    func_name: str
    params: list[str]
    param_types: list[tuple[tuple[int, ...], str]]
    consts: list[int] = field(default_factory=list)  # constant-pool index of each constant slot
    arena_size: int = 0
    arena_storages: int = 0
    out_sizes: list[int] = field(default_factory=list)
    calls: list[tuple[str, tuple]] = field(default_factory=list)
    result: list[TensorRef] = field(default_factory=list)
    result_is_tuple: bool = False

    def to_json(self) -> dict:
        def ref(r: Any) -> Any:
            if isinstance(r, TensorRef):
                return ["t", r.base, r.index, r.offset, list(r.shape), r.dtype]
            return ["s", r.dtype, r.value]

        return {"func": self.func_name, "params": self.params,
                "param_types": [[list(s), d] for s, d in self.param_types],
                "consts": self.consts, "arena": self.arena_size, "outs": self.out_sizes,
                "calls": [[k, [ref(a) for a in args]] for k, args in self.calls],
                "result": [ref(r) for r in self.result], "tuple": self.result_is_tuple,
                "arena_storages": self.arena_storages}

    @staticmethod
    def from_json(d: dict) -> "EntryPlan":
        """A plan saved by :meth:`to_json` (for printing a loaded executable; the VM never runs a
        saved plan, it plans again from the bytecode)."""
        def ref(r: list) -> Any:
            if r[0] == "t":
                return TensorRef(str(r[1]), int(r[2]), int(r[3]), tuple(int(x) for x in r[4]), str(r[5]))
            return ScalarRef(str(r[1]), r[2])

        try:
            plan = EntryPlan(str(d["func"]), [str(p) for p in d["params"]],
                             [(tuple(int(x) for x in s), str(t)) for s, t in d["param_types"]])
            plan.consts = [int(k) for k in d["consts"]]
            plan.arena_size = int(d["arena"])
            plan.arena_storages = int(d.get("arena_storages", 0))
            plan.out_sizes = [int(n) for n in d["outs"]]
            plan.calls = [(str(k), tuple(ref(a) for a in args)) for k, args in d["calls"]]
            plan.result = [ref(r) for r in d["result"]]
            plan.result_is_tuple = bool(d["tuple"])
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

    def as_text(self) -> str:
        """The plan as a listing (what the generated function does, in order)."""
        lines = [f"native entry of @{self.func_name}: {self.symbol} (one LLVM function beside the kernels)",
                 f"  # arena: {self.arena_storages} storage{'s' if self.arena_storages != 1 else ''} in "
                 f"{self.arena_size} bytes, planned at compile time; outputs: "
                 + (", ".join(f"out{j} ({n} bytes, fresh per call)" for j, n in enumerate(self.out_sizes)) or "none")]
        for name, (shape, dtype) in zip(self.params, self.param_types):
            lines.append(f"  check {name}: {tuple(shape)} {dtype}  (once, when Python calls)")
        for kernel, args in self.calls:
            shown = [a.text(self.params, self.consts) if isinstance(a, TensorRef) else f"{a.dtype}({a.value})"
                     for a in args]
            lines.append(f"  call  {kernel}({', '.join(shown)})")
        out = [r.text(self.params, self.consts) for r in self.result]
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


class _Planner:
    def __init__(self, func: VMFunction, func_names: list[str], constants: list[Any],
                 kernel_info: Callable[[str], KernelInfo | None]):
        self.func, self.names, self.constants, self.kernel_info = func, func_names, constants, kernel_info
        self.storages: list[int] = []  # bytes of each storage, by storage id
        self.regs: dict[int, Any] = {}
        self.const_slots: dict[int, int] = {}

    def run(self) -> EntryPlan:
        func = self.func
        infos = func.param_info or [None] * len(func.params)
        types = []
        for i, (name, info) in enumerate(zip(func.params, infos)):
            if info is None or info.kind != "tensor" or not info.dtype or info.shape is None or not all(
                    isinstance(d, int) for d in info.shape):
                what = "no static shape and dtype" if info is None or info.kind == "tensor" else f"a {info.kind}"
                raise _NotCovered(f"parameter {name!r} has {what} ({info}); the native entry needs tensors of "
                                  "static shapes")
            types.append((tuple(info.shape), info.dtype))
            self.regs[i] = TensorRef("param", i, 0, tuple(info.shape), info.dtype)
        calls: list[tuple[str, tuple]] = []
        result: Any = None
        for pc, ins in enumerate(func.instructions):
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
        place: dict[int, tuple[str, int, int]] = {}
        arena = 0
        for sid, nbytes in enumerate(self.storages):
            if sid in out_ids:
                place[sid] = ("out", out_ids.index(sid), 0)
            else:
                place[sid] = ("arena", 0, arena)
                arena += -(-max(nbytes, 1) // ALLOC_ALIGNMENT) * ALLOC_ALIGNMENT

        def resolve(r: Any) -> Any:
            if isinstance(r, TensorRef) and r.base == "storage":
                base, index, start = place[r.index]
                return TensorRef(base, index, start + r.offset, r.shape, r.dtype)
            return r

        plan = EntryPlan(func.name, list(func.params), types)
        plan.consts = [k for k, _ in sorted(self.const_slots.items(), key=lambda kv: kv[1])]
        plan.arena_size = arena
        plan.arena_storages = len(self.storages) - len(out_ids)
        plan.out_sizes = [self.storages[sid] for sid in out_ids]
        plan.calls = [(k, tuple(resolve(a) for a in args)) for k, args in calls]
        plan.result = [resolve(t) for t in outputs]
        plan.result_is_tuple = isinstance(result, tuple)
        return plan

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
        if name == "vm.builtin.alloc_storage":
            size = args[0]
            dims = (size,) if isinstance(size, int) else tuple(size) if isinstance(size, ShapeTuple) else None
            if dims is None or len(args) > 2 or (len(args) == 2 and not isinstance(args[1], str)):
                raise _NotCovered(f"instruction {pc}: alloc_storage of a size known only at run time")
            self.storages.append(math.prod(dims) * check_dtype(args[1] if len(args) == 2 else "uint8",
                                                               "alloc_storage").itemsize)
            return ("storage", len(self.storages) - 1)
        if name == "vm.builtin.alloc_tensor":
            storage, offset, shape, dtype = (args + [None] * 4)[:4]
            if not (isinstance(storage, tuple) and storage[:1] == ("storage",) and isinstance(offset, int)
                    and isinstance(shape, ShapeTuple) and isinstance(dtype, str)):
                raise _NotCovered(f"instruction {pc}: alloc_tensor with operands known only at run time")
            ref = TensorRef("storage", storage[1], offset, tuple(shape), dtype)
            if offset < 0 or offset % check_dtype(dtype, "alloc_tensor").itemsize or \
                    offset + ref.nbytes > self.storages[storage[1]]:
                raise _NotCovered(f"instruction {pc}: the tensor does not fit its storage (the VM raises the error)")
            return ref
        if name == "vm.builtin.make_tuple":
            return tuple(args)
        if name == "vm.builtin.tuple_getitem" and isinstance(args[0], tuple) and not isinstance(args[0], ShapeTuple) \
                and isinstance(args[1], int) and -len(args[0]) <= args[1] < len(args[0]):
            return args[0][args[1]]
        if name == "vm.builtin.null_value":
            return None
        info = self.kernel_info(name)
        if info is None:
            raise _NotCovered(f"instruction {pc} calls {name}, which is not a kernel of the library "
                              "(a Python function the native entry cannot call)")
        calls.append((name, self.kernel_args(pc, name, info, args)))
        return None

    def kernel_args(self, pc: int, name: str, info: KernelInfo, args: list) -> tuple:
        where = f"instruction {pc} ({name})"
        if len(args) != len(info.params):
            raise _NotCovered(f"{where}: {len(args)} arguments for {len(info.params)} parameters")
        sizes: dict[int, int] = {}
        out: list[Any] = []
        for k, (p, a) in enumerate(zip(info.params, args)):
            if p.is_buffer:
                if not isinstance(a, TensorRef) or a.dtype != p.dtype or len(a.shape) != len(p.dims):
                    raise _NotCovered(f"{where}: argument {k} is not a {p.dtype} tensor of {len(p.dims)} dimensions")
                if p.written and a.base == "const":
                    raise _NotCovered(f"{where}: writes constant c[{self.func_const(a)}]")
                for d, got in zip(p.dims, a.shape):
                    if isinstance(d, tuple):
                        if sizes.setdefault(d[1], got) != got:
                            raise _NotCovered(f"{where}: size variable {d[1]} bound twice differently")
                    elif d is None or d != got:
                        raise _NotCovered(f"{where}: argument {k} has shape {a.shape}, the kernel wants another")
                out.append(a)
            else:
                if isinstance(a, bool) or not isinstance(a, (int, float)):
                    raise _NotCovered(f"{where}: scalar argument {k} is not a number known at compile time")
                out.append(ScalarRef(p.dtype, bool(a) if p.dtype == "bool" else
                                     float(a) if p.dtype.startswith("float") else int(a)))
        if any(v not in sizes for v in range(info.num_shape_vars)):
            raise _NotCovered(f"{where}: a size variable of the kernel is not a whole dimension of an argument")
        out += [ScalarRef("int64", sizes[v]) for v in range(info.num_shape_vars)]
        return tuple(out)

    def func_const(self, ref: TensorRef) -> int:
        return next(k for k, slot in self.const_slots.items() if slot == ref.index)

    def result_tensors(self, result: Any) -> list[TensorRef]:
        values = list(result) if isinstance(result, tuple) and not isinstance(result, ShapeTuple) else [result]
        out = []
        for v in values:
            if not isinstance(v, TensorRef):
                raise _NotCovered(f"the result is not a tensor or a tuple of tensors ({type(v).__name__})")
            if v.base != "storage":
                raise _NotCovered(f"the result is a {v.base}ameter or constant itself" if v.base == "param"
                                  else "the result is a constant itself")
            out.append(v)
        return out


# -- calling from Python -------------------------------------------------------------------------------


def _unused_counts(storages: list[Storage], results: list[NDArray]) -> list[int]:
    """Reference counts of output storages' memory and result tensors, held only by the entry."""
    return [sys.getrefcount(st.raw) for st in storages] + [sys.getrefcount(r) for r in results]


class NativeEntry:
    """The native entry of one VM function, called with checked arguments: ``run(values)``.

    The arena is allocated once and reused; a call that finds it busy (another thread is in
    the same function) gets an arena of its own.  Outputs are reused only when nothing holds the
    previous call's results any more (so a result the caller keeps is never overwritten).
    """

    def __init__(self, plan: EntryPlan, address: int, constants: list[Any],
                 raise_kernel_error: Callable[[str, int], None], library: Any = None):
        self.plan = plan
        # the machine code at ``address`` is freed with its library: the entry keeps it alive
        self._library = library
        self._cfunc = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_void_p)(address)
        self._param_type = ctypes.c_void_p * max(1, len(plan.params))
        self._out_type = ctypes.c_void_p * max(1, len(plan.out_sizes))
        # the constants stay alive as long as the entry: their pointers are in the table
        self._const_values = [constants[k] for k in plan.consts]
        self._consts = (ctypes.c_void_p * max(1, len(plan.consts)))(
            *[int(c.ctypes.data) if isinstance(c, np.ndarray) else c._ptr for c in self._const_values])
        self._consts_addr = ctypes.addressof(self._consts)
        self._arena = Storage(plan.arena_size)
        # the tables of the uncontended call, reused (a busy entry makes its own, see run)
        self._params, self._outs = self._param_type(), self._out_type()
        self._params_addr, self._outs_addr = ctypes.addressof(self._params), ctypes.addressof(self._outs)
        self._lock = threading.Lock()
        self._raise = raise_kernel_error
        self._views = [(r.index, r.offset, r.offset + r.nbytes, check_dtype(r.dtype, "result"), r.shape)
                       for r in plan.result]
        self._last: tuple | None = None  # (storages, results, their reference counts when unused)
        self.calls = 0

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

    def run(self, values: list | tuple) -> Any:
        """Run the entry on checked arguments (NDArrays); the result as the VM returns it."""
        if self._lock.acquire(blocking=False):
            try:
                results, addresses = self._outputs()
                params, outs = self._params, self._outs
                for i, v in enumerate(values):
                    params[i] = v._ptr
                for j, address in enumerate(addresses):
                    outs[j] = address
                rc = self._cfunc(self._params_addr, self._consts_addr, self._arena.address, self._outs_addr)
            finally:
                self._lock.release()
        else:  # another thread is in this entry: tables, outputs and an arena of this call's own
            _, results, addresses = self._new_outputs()
            arena = Storage(self.plan.arena_size)
            rc = self._cfunc(self._param_type(*[v._ptr for v in values]), self._consts_addr, arena.address,
                             self._out_type(*addresses))
        self.calls += 1
        if rc:
            self._fail(rc)
        return tuple(results) if self.plan.result_is_tuple else results[0]

    def _fail(self, rc: int) -> None:
        index, code = (rc >> 32) - 1, rc & 0xFFFFFFFF
        kernel = self.plan.calls[index][0] if 0 <= index < len(self.plan.calls) else "?"
        try:
            self._raise(kernel, code)
        except Exception as err:
            err.add_note(f"  in the native entry of @{self.plan.func_name}, kernel call {index} ({kernel})")
            raise
        raise RuntimeError(f"native entry of @{self.plan.func_name}: kernel call {index} ({kernel}) failed "
                           f"with code {code}")
