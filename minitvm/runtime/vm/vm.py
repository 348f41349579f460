"""VirtualMachine: runs an Executable's bytecode, one Python frame per VM function call.

Construction does all the looking up once: every function-table entry becomes a Python
callable (a kernel from the library, a registered global function, or another bytecode
function), every constant becomes its runtime value, and every instruction becomes a
tuple whose arguments are already resolved.  The interpreter loop then only moves values
between registers and calls.
"""

from __future__ import annotations

import html
import time
from enum import IntEnum
from typing import Any, Callable

import numpy as np

from ..arguments import ArgSpec, ArgumentCheck
from ..device import Device, cpu
from ..device import device as _device
from ..module import BenchmarkResult, Module, make_time_evaluator
from ..ndarray import NDArray
from ..object import Object
from ..registry import PackedFunc, get_global_func
from .builtins import SPECIALIZERS, ShapeTuple
from .bytecode import Call, Const, FuncRef, Goto, If, Imm, ParamInfo, Reg, Ret, VMFunction
from .executable import Executable
from .native import EntryPlan, NativeEntry

__all__ = ["VirtualMachine", "ProfileReport", "VMInstrumentReturnKind"]

# opcodes of the resolved instructions (tuples) that the loop runs
_CALL_REGS = 0  # (op, dst, fn, (reg, ...),           None,              callee name)
_CALL = 1       # (op, dst, fn, [arg template ...],   ((pos, reg), ...), callee name)
_RET = 2        # (op, src)
_GOTO = 3       # (op, offset)
_IF = 4         # (op, cond, false_offset)

#: signature of an instrument, as TVM's: (func, func_symbol, before_run, ret_value, *args) -> int | None
Instrument = Callable[..., Any]


class VMInstrumentReturnKind(IntEnum):
    """What an instrument returns to steer the call it was shown (TVM's enum)."""

    NO_OP = 0
    SKIP_RUN = 1  # skip the call (only meaningful when returned before it runs)


class _Program:
    """A bytecode function with its calls resolved, ready for the loop."""

    __slots__ = ("name", "num_params", "num_registers", "code", "straight")

    def __init__(self, name: str, num_params: int, num_registers: int, code: list[tuple]):
        self.name = name
        self.num_params = num_params
        self.num_registers = num_registers
        self.code = code
        self.straight = _straight_line(self)


def _instruction_note(prog: _Program, pc: int) -> str:
    """Where an error happened, for the traceback: ``in VM function @main, instruction 3 (call add)``."""
    ins = prog.code[pc]
    what = f"call {ins[5]}" if ins[0] in (_CALL, _CALL_REGS) else "if" if ins[0] == _IF else "ret"
    return f"  in VM function @{prog.name}, instruction {pc} ({what})"


def _straight_line(prog: _Program) -> Callable[..., Any] | None:
    """A function without jumps as one Python function: registers become local variables and
    each instruction one line (``r6 = f2(r0, r1, r5)``), so a call skips the loop's
    decoding.  The text is made only of register and instruction numbers -- nothing read
    from an executable file reaches it as code -- and the callables and constants are
    passed in.  Functions with ``goto``/``if`` keep the interpreter loop."""
    if any(ins[0] in (_GOTO, _IF) for ins in prog.code) or not prog.code or prog.code[-1][0] != _RET:
        return None
    params = [f"r{i}" for i in range(prog.num_params)]
    others = [f"r{i}" for i in range(prog.num_params, prog.num_registers)]
    env: dict[str, Any] = {"_note": lambda err, pc: err.add_note(_instruction_note(prog, pc))}
    body = [f"{' = '.join(others)} = None"] if others else []
    for pc, ins in enumerate(prog.code):
        if ins[0] == _RET:
            body.append(f"return r{ins[1]}")
            continue
        env[f"f{pc}"] = ins[2]
        if ins[0] == _CALL_REGS:
            args = [f"r{r}" for r in ins[3]]
        else:
            slots = dict(ins[4])
            args = []
            for pos, value in enumerate(ins[3]):
                if pos in slots:
                    args.append(f"r{slots[pos]}")
                else:
                    env[f"c{pc}_{pos}"] = value
                    args.append(f"c{pc}_{pos}")
        dst = f"r{ins[1]} = " if ins[1] >= 0 else ""
        body += [f"pc = {pc}", f"{dst}f{pc}({', '.join(args)})"]
    lines = [f"def run({', '.join(params)}):", "    pc = 0", "    try:"]
    lines += [f"        {line}" for line in body]
    lines += ["    except Exception as err:", "        _note(err, pc)", "        raise"]
    exec(compile("\n".join(lines), f"<VM function @{prog.name}>", "exec"), env)  # noqa: S102
    return env["run"]


_MISSING = object()  # an argument not given (save_function / set_input by name)


class VirtualMachine:
    """Runs the functions of an :class:`Executable`: ``vm["forward"](x)`` or ``vm.invoke(...)``."""

    def __init__(self, exe: Executable, device: Device | str | None = None, memory_cfg: str | None = None,
                 profile: bool = False):
        # memory_cfg and profile are TVM's: one allocator here, and every VM can profile()
        del memory_cfg, profile
        if not isinstance(exe, Executable):
            raise TypeError(f"VirtualMachine needs an Executable, got {type(exe).__name__}")
        exe.verify()
        self.exe = exe
        self.device = cpu(0) if device is None else _device(device)
        self._instrument: Instrument | None = None
        self._timings: list | None = None  # set while profiling
        self._hook: Callable[..., Any] | None = None
        self._inputs: dict[str, list] = {}
        self._outputs: dict[str, Any] = {}
        self._constants = [_constant_value(c) for c in exe.constants]
        self._func_index = {e.name: i for i, e in enumerate(exe.func_table) if isinstance(e, VMFunction)}
        self._callables = self._resolve_functions()
        if any(isinstance(c, FuncRef) for c in exe.constants):  # functions used as values
            self._constants = [self._function_value(c) for c in self._constants]
        self._programs: dict[int, _Program] = {i: self._compile(e) for i, e in enumerate(exe.func_table)
                                               if isinstance(e, VMFunction)}
        self._checks = {e.name: _entry_check(e) for e in exe.func_table if isinstance(e, VMFunction)}
        #: VM function name -> its native entry (exec_mode "compiled"), used when nothing watches the VM
        self.native_entries: dict[str, NativeEntry] = {}
        # a library compiled for a CPU this one is not runs nothing: its kernels raise when the
        # bytecode calls them (an entry would run their instructions directly)
        runnable = not getattr(exe.lib, "cpu_mismatch", "")
        for name, plan in exe.native_plans().items():
            if isinstance(plan, EntryPlan) and runnable:
                lib = exe.lib
                timed = getattr(lib, "timed_entries", {}).get(plan.symbol, 0)
                self.native_entries[name] = NativeEntry(plan, lib.native_entries[plan.symbol], exe.constants,
                                                        lib.raise_kernel_error, library=lib, timed_address=timed)
        self._bound: dict[str, PackedFunc] = {}
        self.module = Module({name: self[name] for name in self._func_index}, type_key="vm")

    # -- set-up -----------------------------------------------------------------------------------
    def _resolve_functions(self) -> list[Callable[..., Any]]:
        lib = self.exe.lib
        out: list[Callable[..., Any]] = []
        missing = []
        for index, entry in enumerate(self.exe.func_table):
            if isinstance(entry, VMFunction):
                out.append(self._vm_callable(index))
                continue
            fn = None
            if lib is not None:
                try:
                    fn = lib.get_function(entry, query_imports=True)
                except AttributeError:
                    fn = None
            if fn is None:
                fn = get_global_func(entry, allow_missing=True)
            if fn is None:
                missing.append(entry)
            # call the raw Python function, skipping the PackedFunc wrapper's extra frame
            out.append(fn._fn if isinstance(fn, PackedFunc) else fn)
        if missing:
            where = "the kernel library or " if lib is not None else ""
            raise ValueError(f"VirtualMachine: {', '.join(repr(m) for m in missing)} "
                             f"{'is' if len(missing) == 1 else 'are'} in neither {where}the global function "
                             "registry (register_func)")
        return out

    def _function_value(self, c: Any) -> Any:
        """A constant with each :class:`FuncRef` (in tuples too) replaced by the function it names."""
        if isinstance(c, FuncRef):
            return PackedFunc(self._callables[self.exe.func_names.index(c.name)], c.name)
        if type(c) is tuple:
            return tuple(self._function_value(v) for v in c)
        return c

    def _vm_callable(self, index: int) -> Callable[..., Any]:
        run = self._run

        def call_vm_function(*args: Any) -> Any:
            return run(index, args)

        return call_vm_function

    def _compile(self, func: VMFunction) -> _Program:
        """Turn instructions into tuples with callables and constants in place."""
        names = self.exe.func_names
        code: list[tuple] = []
        for pc, ins in enumerate(func.instructions):
            if isinstance(ins, Call):
                callee = self.exe.func_table[ins.func_index]
                if isinstance(callee, VMFunction) and len(ins.args) != len(callee.params):
                    raise ValueError(f"function {func.name!r}, instruction {pc}: @{callee.name} takes "
                                     f"{len(callee.params)} arguments, the call passes {len(ins.args)}")
                fn = self._callables[ins.func_index]
                dst = -1 if ins.dst is None else ins.dst
                name = names[ins.func_index]
                if all(isinstance(a, Reg) for a in ins.args):
                    code.append((_CALL_REGS, dst, fn, tuple(a.index for a in ins.args), None, name))
                else:
                    template: list[Any] = []
                    slots = []
                    for pos, a in enumerate(ins.args):
                        if isinstance(a, Reg):
                            template.append(None)
                            slots.append((pos, a.index))
                        elif isinstance(a, Const):
                            template.append(self._constants[a.index])
                        else:
                            assert isinstance(a, Imm)
                            template.append(a.value)
                    fast = self._specialize(name, template, slots)
                    if fast is not None:
                        code.append((_CALL_REGS, dst, fast, tuple(r for _, r in slots), None, name))
                    else:
                        code.append((_CALL, dst, fn, template, tuple(slots), name))
            elif isinstance(ins, Ret):
                code.append((_RET, ins.src))
            elif isinstance(ins, Goto):
                code.append((_GOTO, ins.offset))
            else:
                assert isinstance(ins, If)
                code.append((_IF, ins.cond, ins.false_offset))
        return _Program(func.name, len(func.params), func.num_registers, code)

    @staticmethod
    def _specialize(name: str, template: list, slots: list) -> Callable[..., Any] | None:
        """A builtin call with constant arguments, specialized once (see ``builtins.SPECIALIZERS``)."""
        make = SPECIALIZERS.get(name)
        if make is None:
            return None
        try:
            return make(template, [pos for pos, _ in slots])
        except (TypeError, ValueError):
            return None  # the general builtin raises the precise error when (if ever) it runs

    # -- the interpreter loop ---------------------------------------------------------------------
    def _run(self, index: int, args: tuple | list) -> Any:
        prog = self._programs[index]
        hook = self._hook
        if hook is None and prog.straight is not None:
            return prog.straight(*args)
        regs: list[Any] = [None] * prog.num_registers
        regs[:prog.num_params] = args
        code = prog.code
        pc = 0
        try:
            while True:
                ins = code[pc]
                op = ins[0]
                if op == _CALL_REGS:
                    argv = [regs[r] for r in ins[3]]
                elif op == _CALL:
                    argv = ins[3].copy()
                    for pos, r in ins[4]:
                        argv[pos] = regs[r]
                elif op == _RET:
                    return regs[ins[1]]
                elif op == _GOTO:
                    pc += ins[1]
                    continue
                else:  # _IF
                    cond = regs[ins[1]]
                    if type(cond) is NDArray:
                        cond = cond._array.item()
                    pc += 1 if cond else ins[2]
                    continue
                result = ins[2](*argv) if hook is None else hook(prog.name, pc, ins[5], ins[2], argv)
                if ins[1] >= 0:
                    regs[ins[1]] = result
                pc += 1
        except Exception as err:
            err.add_note(_instruction_note(prog, pc))
            raise

    # -- calling ----------------------------------------------------------------------------------
    def invoke(self, func_name: str, *args: Any) -> Any:
        """Check and convert ``args``, run ``func_name``, return its result (NDArray or tuple)."""
        index = self._func_index.get(func_name)
        if index is None:
            raise AttributeError(f"the executable has no VM function {func_name!r}; it has: "
                                 f"{', '.join(self._func_index) or '(none)'}")
        return self._call(func_name, index, self._checks[func_name](args)[0])

    def invoke_closure(self, closure: Any, *args: Any) -> Any:
        """Call a closure a VM function returned (``R.make_closure``) with the rest of its arguments."""
        if not callable(closure) or isinstance(closure, NDArray):
            raise TypeError(f"invoke_closure: expected a closure, got {type(closure).__name__}")
        return _wrap_result(closure(*args))

    def invoke_bytecode(self, func_name: str, *args: Any) -> Any:
        """:meth:`invoke` through the bytecode interpreter even when the function has a native
        entry (to compare the two, or to step through what the native entry does in one call)."""
        index = self._func_index.get(func_name)
        if index is None:
            raise AttributeError(f"the executable has no VM function {func_name!r}; it has: "
                                 f"{', '.join(self._func_index) or '(none)'}")
        return _wrap_result(self._run(index, self._checks[func_name](args)[0]))

    def _call(self, func_name: str, index: int, values: list | tuple) -> Any:
        """Run checked arguments: the native entry unless an instrument or the profiler watches."""
        native = self.native_entries.get(func_name)
        if native is not None and self._hook is None:
            return native.run(values)
        return _wrap_result(self._run(index, values))

    def __getitem__(self, func_name: str) -> PackedFunc:
        fn = self._bound.get(func_name)
        if fn is None:
            index = self._func_index.get(func_name)
            if index is None:
                raise AttributeError(f"the executable has no VM function {func_name!r}; it has: "
                                     f"{', '.join(self._func_index) or '(none)'}")
            check, run, native = self._checks[func_name], self._run, self.native_entries.get(func_name)

            if native is not None:
                def call(*args: Any) -> Any:
                    values = check(args)[0]
                    if self._hook is None:
                        return native.run(values)
                    return _wrap_result(run(index, values))
            else:
                def call(*args: Any) -> Any:
                    return _wrap_result(run(index, check(args)[0]))

            fn = self._bound[func_name] = PackedFunc(call, func_name)
        return fn

    def __contains__(self, func_name: object) -> bool:
        return func_name in self._func_index

    def _positional(self, func_name: str, args: tuple, kwargs: dict) -> tuple:
        """``args`` then ``kwargs`` placed by the function's parameter names."""
        self[func_name]  # noqa: B018 - raises for an unknown name
        if not kwargs:
            return args
        names = self.exe.func_table[self._func_index[func_name]].params
        values: list[Any] = list(args) + [_MISSING] * (len(names) - len(args))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"{func_name}: no parameter named {key!r}; its parameters are {', '.join(names)}")
            if values[names.index(key)] is not _MISSING:
                raise TypeError(f"{func_name}: parameter {key!r} given twice")
            values[names.index(key)] = value
        missing = [n for n, v in zip(names, values) if v is _MISSING]
        if missing:
            raise TypeError(f"{func_name}: missing arguments {', '.join(missing)}")
        return tuple(values)

    def save_function(self, func_name: str, saved_name: str, *args: Any, include_return: bool = True,
                      **kwargs: Any) -> None:
        """Make ``vm[saved_name]()`` call ``func_name`` on these arguments (TVM's, for timing
        a function with its inputs bound); without ``include_return`` the call returns None.
        ``saved_name`` may replace an earlier saved function, not a function of the module."""
        if saved_name in self._func_index:
            raise ValueError(f"save_function: {saved_name!r} is a function of the module; choose another name")
        fn, bound = self[func_name], self._positional(func_name, args, kwargs)

        def call() -> Any:
            out = fn(*bound)
            return out if include_return else None

        self._bound[saved_name] = PackedFunc(call, saved_name)

    # stateful calling (as TVM): set the inputs once, run many times, read the outputs
    def set_input(self, func_name: str, *args: Any, **kwargs: Any) -> None:
        """The inputs of ``func_name`` for :meth:`invoke_stateful`, by position or by name."""
        self._inputs[func_name] = self._checks[func_name](self._positional(func_name, args, kwargs))[0]

    def invoke_stateful(self, func_name: str) -> None:
        if func_name not in self._inputs:
            raise ValueError(f"invoke_stateful({func_name!r}): call set_input({func_name!r}, ...) first")
        self._outputs[func_name] = self._call(func_name, self._func_index[func_name], self._inputs[func_name])

    def get_outputs(self, func_name: str) -> Any:
        if func_name not in self._outputs:
            raise ValueError(f"get_outputs({func_name!r}): call invoke_stateful({func_name!r}) first")
        return self._outputs[func_name]

    # -- observing --------------------------------------------------------------------------------
    def set_instrument(self, fn: Instrument | None) -> None:
        """Call ``fn`` before and after every Call instruction, as TVM's ``set_instrument``::

            def instrument(func, func_symbol, before_run, ret_value, *args): ...

        ``func`` is the callee, ``func_symbol`` its name in the function table (a kernel,
        ``vm.builtin.alloc_tensor`` ...), ``before_run`` True before the call (``ret_value``
        None) and False after it (``ret_value`` the call's result), ``args`` its arguments --
        for a kernel in destination-passing style the output is the last one.  Returning
        ``VMInstrumentReturnKind.SKIP_RUN`` before the call skips it (and the after-call).
        ``None`` removes the instrument.  Copy tensors you keep: storage is reused.
        """
        if fn is not None and not callable(fn):
            raise TypeError(f"set_instrument needs a callable or None, got {type(fn).__name__}")
        self._instrument = fn
        self._update_hook()

    def _update_hook(self) -> None:
        instrument, timings = self._instrument, self._timings
        if instrument is None and timings is None:
            self._hook = None
            return
        clock = time.perf_counter

        def hook(func_name: str, pc: int, callee: str, fn: Callable[..., Any], argv: list) -> Any:
            if instrument is not None and instrument(fn, callee, True, None, *argv) == VMInstrumentReturnKind.SKIP_RUN:
                return None
            if timings is not None:
                start = clock()
                result = fn(*argv)
                timings.append((func_name, pc, callee, clock() - start))
            else:
                result = fn(*argv)
            if instrument is not None:
                instrument(fn, callee, False, result, *argv)
            return result

        self._hook = hook

    def profile(self, func_name: str, *args: Any, by: str = "callee", native: bool | None = None) -> "ProfileReport":
        """Run ``func_name`` once, timing every call it makes; a table by callee (or by call).

        A function that runs as a native entry (``exec_mode="compiled"``) is profiled through the
        entry's timed twin: the same kernel calls on the same arena as a plain call, each timed
        by the clock inside the machine code, with nothing between them but the next call.  The
        bytecode's profile (``native=False``, and what functions without an entry get) times
        every Call instruction from Python instead -- allocations and shape bookkeeping included,
        and each kernel after a pause in Python, so small kernels look slower there than they run
        in a plain call.  ``native=True`` insists on the entry.

        The first call of a function pays for first-touch memory: profile twice and keep
        the second report to see the steady state.
        """
        fn = self[func_name]
        entry = self.native_entries.get(func_name)
        timeable = entry is not None and entry.can_time
        if native is None:
            native = timeable and self._instrument is None
        if native:
            if not timeable:
                why = "it has no native entry" if entry is None else "its library has no timed entry"
                raise ValueError(f"profile(native=True): @{func_name} cannot be profiled natively: {why}"
                                 + (f" ({self.exe.native_plans().get(func_name)})" if entry is None else ""))
            if self._instrument is not None:
                raise ValueError("profile(native=True): an instrument is set, and it watches the bytecode; "
                                 "remove it with set_instrument(None)")
            start = time.perf_counter()
            _, seconds = entry.run_timed(self._checks[func_name](args)[0])
            total = time.perf_counter() - start
            events = [(func_name, k, kernel, t) for k, ((kernel, _), t) in enumerate(zip(entry.plan.calls, seconds))]
            return ProfileReport(func_name, total, events, set(self._func_index), by, native=True)
        self._timings = timings = []
        self._update_hook()
        try:
            start = time.perf_counter()
            fn(*args)
            total = time.perf_counter() - start
        finally:
            self._timings = None
            self._update_hook()
        return ProfileReport(func_name, total, timings, set(self._func_index), by)

    def time_evaluator(self, func_name: str, dev: Device | None = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, cooldown_interval_ms: float = 0,
                       f_preproc: str = "") -> Callable[..., BenchmarkResult]:
        """A function that times ``func_name`` on given arguments (as ``Module.time_evaluator``);
        ``"invoke_stateful"`` times :meth:`invoke_stateful` of the function named in the call, on the
        inputs ``set_input`` gave it (as TVM)."""
        fn = self.invoke_stateful if func_name == "invoke_stateful" else self[func_name]
        return make_time_evaluator(fn, dev or self.device, number, repeat, min_repeat_ms,
                                   cooldown_interval_ms, f_preproc)

    def __repr__(self) -> str:
        return f"<minitvm VirtualMachine on {self.device}: {', '.join(self._func_index)}>"


# -- arguments and results --------------------------------------------------------------------------


def _constant_value(c: Any) -> Any:
    """The runtime form of a constant: arrays become read-only NDArrays."""
    if isinstance(c, np.ndarray):
        view = c.view()
        view.flags.writeable = False
        return NDArray(view)
    if isinstance(c, tuple) and not isinstance(c, ShapeTuple):
        return tuple(_constant_value(v) for v in c)
    return c


def _wrap_result(value: Any) -> Any:
    if type(value) is NDArray:
        return value
    if type(value) is np.ndarray:
        return NDArray(np.require(value, requirements="C"))  # keeps 0-d arrays 0-d
    if type(value) is tuple:
        return tuple(_wrap_result(v) for v in value)
    return value


def _entry_check(func: VMFunction) -> "_RepeatedCallCheck":
    """The argument check of a VM function called from Python (the one kernels use too)."""
    infos = list(func.param_info) if func.param_info is not None else [ParamInfo()] * len(func.params)
    specs = [_arg_spec(name, info) for name, info in zip(func.params, infos)]
    return _RepeatedCallCheck(ArgumentCheck(func.name, specs, copy_strided=True, shape_type=ShapeTuple))


def _arg_spec(name: str, info: ParamInfo) -> ArgSpec:
    fields = None if info.fields is None else tuple(_arg_spec(f"{name}[{i}]", f) for i, f in enumerate(info.fields))
    return ArgSpec(name, info.kind, info.dtype, info.shape, info.ndim, fields=fields)


class _RepeatedCallCheck:
    """An entry's :class:`ArgumentCheck` that passes a call shaped as the last one at once.  A
    language model's ``embed(tokens, params)`` and ``decode(embedding, cache, params)`` are
    called per token with the same list of dozens of weights; checking each weight again cost
    ~15 us, 0.9 ms per call for the 30M model's 57.

    When the check converted nothing (every tensor an NDArray passed through as is, in tuples
    or lists of them, runtime objects), the call's *signature* is kept: per tensor its shape,
    dtype, contiguity and writability, per tuple or list its type and length, per object the
    object itself -- all the check depends on.  A call with the same signature passes with the
    sizes the check found, its lists made tuples as the check makes them.  (The last call's
    objects stay referenced until the next call: a signature compares them by ``id``.)"""

    __slots__ = ("check", "_last", "_repeats")

    def __init__(self, check: ArgumentCheck):
        self.check = check
        self._repeats = 0
        # (signature, sizes, the arguments): one tuple, replaced whole, so that a call on another
        # thread never pairs one call's signature with another's sizes
        self._last: tuple | None = None

    def __call__(self, args: tuple | list) -> tuple:
        last = self._last
        if last is not None and _signature(args) == last[0]:
            self._repeats += 1
            return [_as_tuples(a) for a in args], last[1]
        result = self.check(args)
        self._last = (_signature(args), result[1], tuple(args)) if _unconverted(args, result[0]) else None
        return result

    @property
    def fast_calls(self) -> int:
        """Calls passed without the full check: repeats of the last call and the check's own
        fast path (as :attr:`ArgumentCheck.fast_calls`)."""
        return self._repeats + self.check.fast_calls

    def describe(self) -> str:
        return self.check.describe()


def _signature(args: tuple | list) -> tuple | None:
    """What the argument check reads of ``args`` (see :class:`_RepeatedCallCheck`); None for
    arguments it may convert."""
    out: list[Any] = []
    for a in args:
        t = type(a)
        if t is NDArray:
            arr = a._array
            flags = arr.flags
            out.append((arr.shape, arr.dtype, flags.c_contiguous, flags.writeable))
        elif t is tuple or t is list:
            inner = _signature(a)
            if inner is None:
                return None
            out.append((t, inner))
        elif isinstance(a, Object):
            out.append(id(a))
        else:
            return None
    return tuple(out)


def _as_tuples(value: Any) -> Any:
    """``value`` with its lists made tuples (as the check passes a tuple argument on)."""
    if type(value) is list or type(value) is tuple:
        return tuple(_as_tuples(v) for v in value)
    return value


def _unconverted(args: Any, values: Any) -> bool:
    """Whether the check handed ``args`` on as they were: the same NDArrays and objects, tuples
    for the tuples and lists."""
    if type(args) is tuple or type(args) is list:
        return isinstance(values, (tuple, list)) and len(values) == len(args) and \
            all(_unconverted(a, v) for a, v in zip(args, values))
    return values is args and (type(args) is NDArray or isinstance(args, Object))


# -- profiling ---------------------------------------------------------------------------------------


class ProfileReport:
    """Where one VM call spent its time (``print(report)`` or show it in Jupyter).

    ``events`` keeps every timed call as ``(func_name, instr_index, callee, seconds)``.
    Rows group the events by callee (``by="callee"``, the default) or by instruction
    (``by="instruction"``: ``@forward[5] test.vm.linear``).  A callee that is itself a VM
    function is timed including everything it calls, so its row is marked ``*`` and left out
    of the share; "(VM overhead)" is the wall time that no leaf call accounts for.

    ``native``: the events are the kernel calls of a native entry (``instr_index`` is the call's
    position in the entry: ``@forward call 3 test.vm.linear`` by instruction), and the overhead is
    what the call costs outside the kernels (Python, the argument checks, the clock reads).
    """

    def __init__(self, func_name: str, total: float, events: list[tuple[str, int, str, float]],
                 vm_functions: set[str], by: str = "callee", native: bool = False):
        if by not in ("callee", "instruction"):
            raise ValueError(f"ProfileReport: by must be 'callee' or 'instruction', got {by!r}")
        self.func_name = func_name
        self.total = total
        self.events = events
        self.by = by
        self.native = native
        self._vm_names = vm_functions
        rows: dict[str, list] = {}  # key -> [calls, seconds, is a VM function]
        for func, pc, callee, seconds in events:
            key = callee if by == "callee" else f"@{func} call {pc} {callee}" if native else f"@{func}[{pc}] {callee}"
            row = rows.setdefault(key, [0, 0.0, callee in vm_functions])
            row[0] += 1
            row[1] += seconds
        self.rows: list[tuple[str, int, float, bool]] = sorted(((k, c, t, vm) for k, (c, t, vm) in rows.items()),
                                                                key=lambda r: -r[2])
        leaf = sum(t for _, _, t, vm in self.rows if not vm)
        self.overhead = max(total - leaf, 0.0)

    def regroup(self, by: str) -> "ProfileReport":
        """The same measurements grouped ``by`` "callee" or "instruction"."""
        return ProfileReport(self.func_name, self.total, self.events, self._vm_names, by, self.native)

    def table(self) -> list[dict[str, Any]]:
        """One dict per row: name, calls, total_us, mean_us, percent (None for VM functions)."""
        out = []
        for name, calls, seconds, vm in self.rows:
            out.append({"name": name + (" *" if vm else ""), "calls": calls, "total_us": seconds * 1e6,
                        "mean_us": seconds * 1e6 / calls,
                        "percent": None if vm else 100.0 * seconds / self.total if self.total else 0.0})
        out.append({"name": "(VM overhead)", "calls": None, "total_us": self.overhead * 1e6, "mean_us": None,
                    "percent": 100.0 * self.overhead / self.total if self.total else 0.0})
        return out

    def _cells(self) -> list[list[str]]:
        rows = []
        for r in self.table():
            rows.append([r["name"], "" if r["calls"] is None else str(r["calls"]), f"{r['total_us']:.2f}",
                         "" if r["mean_us"] is None else f"{r['mean_us']:.2f}",
                         "" if r["percent"] is None else f"{r['percent']:.1f}"])
        return rows

    _HEAD = ["Name", "Calls", "Total (us)", "Mean (us)", "Share %"]

    @property
    def _how(self) -> str:
        return " (native entry)" if self.native else ""

    def __str__(self) -> str:
        rows = self._cells()
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(self._HEAD)]

        def line(cells: list[str]) -> str:
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        out = [f"VM profile of @{self.func_name}{self._how}: {self.total * 1e6:.2f} us in total", line(self._HEAD),
               "  ".join("-" * w for w in widths)]
        out += [line(r) for r in rows]
        if any(r[3] for r in self.rows):
            out.append("* VM function: its time includes the calls it makes (not in the share)")
        return "\n".join(out)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in self._HEAD)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in self._cells())
        note = ("<p><small>* VM function: its time includes the calls it makes</small></p>"
                if any(r[3] for r in self.rows) else "")
        return (f"<div><b>VM profile of @{html.escape(self.func_name)}{self._how}</b>: {self.total * 1e6:.2f} &micro;s"
                f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}</div>")
