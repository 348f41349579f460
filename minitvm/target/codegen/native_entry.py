"""A VM function's native entry as LLVM IR, in the same module as the kernels it calls.

The plan (:class:`minitvm.runtime.vm.native.EntryPlan`, made from the bytecode) says which
kernels run in which order on which tensors; this file writes it as one function::

    i64 <plan.symbol>(ptr params, ptr consts, ptr arena, ptr outputs)
    i64 <plan.symbol>(ptr params, ptr consts, ptr arena, ptr outputs, ptr sizes)   (symbolic sizes)

Each tensor is a data pointer: loaded from the ``params`` / ``consts`` / ``outputs`` tables
(arrays of pointers) or ``arena + offset``.  With symbolic sizes the function first computes
the plan's size slots from the input slots of ``sizes`` (int64s Python filled from the
arguments' shapes), storing each into the table, runs the plan's checks, and compares the arena's
and the outputs' sizes with the capacities at the table's end -- all before the first kernel,
so a call that fails a check or needs more memory has changed nothing.  Each kernel is called
directly (never inlined, so that both paths run the same machine code); a nonzero result
returns ``(k + 1) << 32 | code`` at once.

Beside each entry sits its *timed* twin (``<plan.symbol>`` + :data:`TIMED_SUFFIX`), which takes
one more pointer, ``stamps``: ``len(plan.calls) + 1`` int64s, where it writes the monotonic clock
(nanoseconds) before the first kernel and after each one.  ``VirtualMachine.profile`` calls it, so
a profile times the very calls a plain call makes, on the same arena, with nothing between the
kernels (the bytecode interpreter's profile pays Python and fresh allocations between them).
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from ...runtime.vm.builtins import EXPR_CODES
from ...runtime.vm.native import (
    NEEDS_MEMORY,
    TIMED_SUFFIX,
    EntryPlan,
    KernelInfo,
    KernelParam,
    ScalarRef,
    Sym,
    TensorRef,
)
from ...tir import expr as _e
from ..signature import FunctionSignature
from .llvm_types import I32, I64, PTR

__all__ = ["emit_entry", "emit_entries", "kernel_info", "CLOCK_SYMBOL"]

#: the libc function a timed entry reads the clock with (a saved library may call it)
CLOCK_SYMBOL = "clock_gettime"

#: ``clock_gettime``'s clock: monotonic, unaffected by changes of the wall clock
_CLOCK_MONOTONIC = 1


def kernel_info(sig: FunctionSignature) -> KernelInfo:
    """What the planner needs to know of a compiled kernel, from its signature."""
    index = {id(v): k for k, v in enumerate(sig.shape_vars)}
    scalars = {id(p.var): k for k, p in enumerate(sig.params) if not p.is_buffer}

    def dim(d: Any) -> Any:
        if isinstance(d, _e.IntImm):
            return d.value
        if isinstance(d, _e.Var) and id(d) in index:
            return ("v", index[id(d)])
        if isinstance(d, _e.Var) and id(d) in scalars:  # a dimension passed as a scalar argument
            return ("p", scalars[id(d)])
        code = EXPR_CODES.get(type(d).__name__)
        if code is not None:  # n * 8 after a reshape: the planner computes it from n
            a, b = dim(d.a), dim(d.b)
            return None if a is None or b is None else ("e", code, a, b)
        return None

    params = tuple(KernelParam(p.is_buffer, p.dtype, tuple(dim(d) for d in p.shape) if p.is_buffer else (), p.written)
                   for p in sig.params)
    return KernelInfo(params, len(sig.shape_vars))


class _Sizes:
    """The size table of a symbolic entry while the IR is written: slot -> its i64 value."""

    def __init__(self, b: ir.IRBuilder, plan: EntryPlan, table: ir.Value):
        self.b, self.plan, self.table = b, plan, table
        self.values: dict[int, ir.Value] = {}

    def slot(self, k: int) -> ir.Value:
        return self.b.gep(self.table, [ir.Constant(I64, k)], inbounds=True, source_etype=I64)

    def __call__(self, v: Any) -> ir.Value:
        if isinstance(v, Sym):
            if v.slot not in self.values:  # an input slot: Python wrote it
                self.values[v.slot] = self.b.load(self.slot(v.slot), typ=I64, name=self.plan.slot_names[v.slot])
            return self.values[v.slot]
        return ir.Constant(I64, int(v))

    def fail_if(self, cond: ir.Value, code: int) -> None:
        with self.b.if_then(cond, likely=False):
            self.b.ret(ir.Constant(I64, code))

    def compute(self) -> None:
        """Every step of the plan, in order: sizes stored into the table, checks returning
        ``-(2 + step)`` when they fail; then the capacities (``NEEDS_MEMORY`` when short)."""
        b = self.b
        for i, step in enumerate(self.plan.steps):
            if step[0] == "set":
                _, slot, code, x, y = step
                value = _binary(b, code, self(x), self(y))
                b.store(value, self.slot(slot))
                self.values[slot] = value
            else:
                _, cmp, x, y, _ = step
                ok = b.icmp_signed({"eq": "==", "ne": "!=", "le": "<=", "ge": ">="}[cmp], self(x), self(y))
                self.fail_if(b.not_(ok), -(2 + i))
        cap = len(self.plan.slot_names)
        for k, need in enumerate([self.plan.arena_size, *self.plan.out_sizes]):
            have = b.load(self.slot(cap + k), typ=I64)
            self.fail_if(b.icmp_signed(">", self(need), have), NEEDS_MEMORY)


def _binary(b: ir.IRBuilder, code: int, x: ir.Value, y: ir.Value) -> ir.Value:
    """``x op y`` on i64 with the shape heap's meaning (floor division and modulo, as Python's;
    the plan checks a divisor that is not a constant for zero first)."""
    name = next(k for k, c in EXPR_CODES.items() if c == code)
    if name in ("Add", "Sub", "Mul"):
        return {"Add": b.add, "Sub": b.sub, "Mul": b.mul}[name](x, y)
    if name in ("Min", "Max"):
        return b.select(b.icmp_signed("<" if name == "Min" else ">", x, y), x, y)
    q, r = b.sdiv(x, y), b.srem(x, y)
    # truncation rounds toward zero; floor differs when the remainder's sign differs from the divisor's
    adjust = b.and_(b.icmp_signed("!=", r, ir.Constant(I64, 0)),
                    b.icmp_signed("<", b.xor(r, y), ir.Constant(I64, 0)))
    if name == "FloorDiv":
        return b.sub(q, b.zext(adjust, I64))
    return b.add(r, b.select(adjust, y, ir.Constant(I64, 0)))


def emit_entries(module: ir.Module, plan: EntryPlan, decorate: Any = None) -> None:
    """Add the native entry of ``plan`` and its timed twin to ``module`` (which holds its kernels)."""
    emit_entry(module, plan, decorate)
    emit_entry(module, plan, decorate, timed=True)


def _clock(b: ir.IRBuilder, module: ir.Module) -> ir.Value:
    """The monotonic clock in nanoseconds (``clock_gettime``; the vDSO makes it a few ns)."""
    gettime = module.globals.get(CLOCK_SYMBOL)
    if gettime is None:
        gettime = ir.Function(module, ir.FunctionType(I32, [I32, PTR]), name=CLOCK_SYMBOL)
    spec = b.alloca(ir.ArrayType(I64, 2))
    b.call(gettime, [ir.Constant(I32, _CLOCK_MONOTONIC), spec])
    seconds = b.load(b.gep(spec, [ir.Constant(I64, 0), ir.Constant(I32, 0)], inbounds=True), typ=I64)
    nanos = b.load(b.gep(spec, [ir.Constant(I64, 0), ir.Constant(I32, 1)], inbounds=True), typ=I64)
    return b.add(b.mul(seconds, ir.Constant(I64, 1_000_000_000)), nanos)


def emit_entry(module: ir.Module, plan: EntryPlan, decorate: Any = None, timed: bool = False) -> ir.Function:
    """Add the native entry of ``plan`` to ``module`` (which holds its kernels); ``timed``: its
    timed twin, which also writes the clock before the first kernel and after each one."""
    names = ("params", "consts", "arena", "outputs") + (("sizes",) if plan.symbolic else ()) + \
        (("stamps",) if timed else ())
    symbol = plan.symbol + (TIMED_SUFFIX if timed else "")
    fn = ir.Function(module, ir.FunctionType(I64, [PTR] * len(names)), name=symbol)
    if decorate is not None:
        decorate(fn)
    for arg, name in zip(fn.args, names):
        arg.name = name
        arg.add_attribute("noalias")
    params, consts, arena, outs = fn.args[:4]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    size = _Sizes(b, plan, fn.args[4]) if plan.symbolic else lambda v: ir.Constant(I64, int(v))
    if plan.symbolic:
        size.compute()
    stamps = fn.args[-1] if timed else None

    def stamp(k: int) -> None:
        if stamps is not None:
            b.store(_clock(b, module), b.gep(stamps, [ir.Constant(I64, k)], inbounds=True, source_etype=I64))

    stamp(0)
    tables = {"param": params, "const": consts, "out": outs}
    loaded: dict[tuple[str, int], ir.Value] = {}

    def base(ref: TensorRef) -> ir.Value:
        if ref.base == "arena":
            return arena
        key = (ref.base, ref.index)
        if key not in loaded:
            slot = b.gep(tables[ref.base], [ir.Constant(I64, ref.index)], inbounds=True, source_etype=PTR)
            loaded[key] = b.load(slot, typ=PTR, name=f"{ref.base}{ref.index}")
        return loaded[key]

    def pointer(ref: TensorRef) -> ir.Value:
        start = base(ref)
        if ref.offset == 0:
            return start
        return b.gep(start, [size(ref.offset)], inbounds=True, source_etype=ir.IntType(8))

    def scalar(ty: ir.Type, a: ScalarRef) -> ir.Value:
        if isinstance(a.value, Sym):
            value = size(a.value)
            return value if ty == I64 else b.trunc(value, ty)
        return ir.Constant(ty, float(a.value) if isinstance(ty, (ir.FloatType, ir.DoubleType)) else int(a.value))

    for k, (kernel, args) in enumerate(plan.calls):
        callee = module.get_global(kernel)
        if not isinstance(callee, ir.Function):
            raise ValueError(f"native entry of @{plan.func_name}: no kernel {kernel!r} in the module")
        types = list(callee.function_type.args)
        if len(types) != len(args):
            raise ValueError(f"native entry of @{plan.func_name}: {kernel} takes {len(types)} arguments, "
                             f"the plan passes {len(args)}")
        values = [pointer(a) if isinstance(a, TensorRef) else scalar(ty, a) for ty, a in zip(types, args)]
        # never inlined: the kernel then runs the very machine code the bytecode path runs, so the
        # two paths give bit-identical results (inlined, LLVM may contract float math differently)
        rc = b.call(callee, values, attrs=("noinline",))
        stamp(k + 1)
        failed = b.icmp_unsigned("!=", rc, ir.Constant(I32, 0))
        with b.if_then(failed, likely=False):
            code = b.or_(b.zext(rc, I64), ir.Constant(I64, (k + 1) << 32))
            b.ret(code)
    b.ret(ir.Constant(I64, 0))
    return fn
