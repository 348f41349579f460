"""A VM function's native entry as LLVM IR, in the same module as the kernels it calls.

The plan (:class:`minitvm.runtime.vm.native.EntryPlan`, made from the bytecode) says which
kernels run in which order on which tensors; this file writes it as one function::

    i64 <plan.symbol>(ptr params, ptr consts, ptr arena, ptr outputs)

Each tensor is a data pointer: loaded from the ``params`` / ``consts`` / ``outputs`` tables
(arrays of pointers) or ``arena + offset``.  Each kernel is called directly (never inlined, so
that both paths run the same machine code); a nonzero result returns ``(k + 1) << 32 | code``
at once.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from ...runtime.vm.native import EntryPlan, KernelInfo, KernelParam, ScalarRef, TensorRef
from ...tir import expr as _e
from ..signature import FunctionSignature
from .llvm_types import I32, I64, PTR

__all__ = ["emit_entry", "kernel_info"]


def kernel_info(sig: FunctionSignature) -> KernelInfo:
    """What the planner needs to know of a compiled kernel, from its signature."""
    index = {id(v): k for k, v in enumerate(sig.shape_vars)}

    def dim(d: Any) -> Any:
        if isinstance(d, _e.IntImm):
            return d.value
        if isinstance(d, _e.Var) and id(d) in index:
            return ("v", index[id(d)])
        return None

    params = tuple(KernelParam(p.is_buffer, p.dtype, tuple(dim(d) for d in p.shape) if p.is_buffer else (), p.written)
                   for p in sig.params)
    return KernelInfo(params, len(sig.shape_vars))


def emit_entry(module: ir.Module, plan: EntryPlan, decorate: Any = None) -> ir.Function:
    """Add the native entry of ``plan`` to ``module`` (which holds its kernels)."""
    fn = ir.Function(module, ir.FunctionType(I64, [PTR, PTR, PTR, PTR]), name=plan.symbol)
    if decorate is not None:
        decorate(fn)
    params, consts, arena, outs = fn.args
    for arg, name in zip(fn.args, ("params", "consts", "arena", "outputs")):
        arg.name = name
        arg.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
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
        return b.gep(start, [ir.Constant(I64, ref.offset)], inbounds=True, source_etype=ir.IntType(8))

    for k, (kernel, args) in enumerate(plan.calls):
        callee = module.get_global(kernel)
        if not isinstance(callee, ir.Function):
            raise ValueError(f"native entry of @{plan.func_name}: no kernel {kernel!r} in the module")
        types = list(callee.function_type.args)
        if len(types) != len(args):
            raise ValueError(f"native entry of @{plan.func_name}: {kernel} takes {len(types)} arguments, "
                             f"the plan passes {len(args)}")
        values = []
        for ty, a in zip(types, args):
            if isinstance(a, TensorRef):
                values.append(pointer(a))
            else:
                assert isinstance(a, ScalarRef)
                values.append(ir.Constant(ty, float(a.value) if isinstance(ty, (ir.FloatType, ir.DoubleType))
                                          else int(a.value)))
        # never inlined: the kernel then runs the very machine code the bytecode path runs, so the
        # two paths give bit-identical results (inlined, LLVM may contract float math differently)
        rc = b.call(callee, values, attrs=("noinline",))
        failed = b.icmp_unsigned("!=", rc, ir.Constant(I32, 0))
        with b.if_then(failed, likely=False):
            code = b.or_(b.zext(rc, I64), ir.Constant(I64, (k + 1) << 32))
            b.ret(code)
    b.ret(ir.Constant(I64, 0))
    return fn

