"""Code generators: lowered TIR -> runnable :class:`minitvm.runtime.Module`.

``build_module(funcs, target)`` picks the back end from the target kind: ``llvm`` compiles
to native code, ``python`` runs the numpy reference interpreter.
"""

from __future__ import annotations

from typing import Any

from ...tir.analysis import uses_var
from ...tir.expr import Call, IterVar
from ...tir.functor import pre_order_visit
from ...tir.op import BUILTIN_OPS
from ...tir.stmt import AllocateConst, AttrStmt, BlockRealize, For, ForKind
from ...tir.stmt_functor import walk_stmts
from ..target import Target

__all__ = ["build_module", "check_buildable"]


def check_buildable(funcs: dict[str, Any], target: Any) -> None:
    """Refuse what parses and schedules but has no CPU code: TVM's GPU and C-runtime builtins
    (``T.tvm_load_matrix_sync``, ``T.tvm_access_ptr`` ...) and GPU thread launches
    (``T.launch_thread`` / ``T.attr``), and constant data (``T.allocate_const``).  Raises
    NotImplementedError naming the first one met."""
    kind = getattr(getattr(target, "kind", None), "name", str(target))
    if kind in ("cuda", "cuda-emulated"):  # GPU targets refuse what they cannot print or run themselves
        for name, func in funcs.items():
            problem = _gpu_refusal(func.body)
            if problem:
                raise NotImplementedError(f"cannot build {name!r} for {kind!r}: {problem}")
        return
    for name, func in funcs.items():
        problem = _cpu_refusal(func.body, kind)
        if problem:
            raise NotImplementedError(f"cannot build {name!r}: {problem}")


def _gpu_refusal(body: Any) -> str | None:
    """Why a scheduled function cannot be built for a GPU target (None if it can): a reduction
    bound to threadIdx needs TVM's cross-thread reduction lowering (an allreduce), which
    minitvm does not have."""
    for realize, path in walk_stmts(body):
        if not isinstance(realize, BlockRealize):
            continue
        for loop in path:
            if not (isinstance(loop, For) and loop.kind == ForKind.THREAD_BINDING
                    and str(loop.thread_binding).startswith("threadIdx.")):
                continue
            for iv, value in zip(realize.block.iter_vars, realize.iter_values):
                if iv.iter_type == "reduce" and uses_var(value, loop.loop_var):
                    return (f"block {realize.block.name_hint} reduces over loop {loop.loop_var.name}, bound to "
                            f"{loop.thread_binding}: a cross-thread reduction, which TVM lowers to an allreduce "
                            "(LowerCrossThreadReduction) and minitvm does not; keep the reduction loop inside each "
                            "thread, or rfactor it and combine the partial results in a second block")
    return None


def _cpu_refusal(body: Any, kind: str) -> str | None:
    """Why ``body`` cannot be built for the CPU target ``kind`` (None if it can)."""
    problem: list[str] = []

    def visit(n: Any) -> bool:
        if problem:
            return False
        if isinstance(n, Call) and n.op == "tir.tvm_call_packed":
            if kind != "llvm":
                problem.append(f"it calls T.call_packed, which runs in native code only (target \"llvm\"), "
                               f"not on target {kind!r}")
            for arg in n.args:  # its arrays' records (tvm_stack_make_array) are the call's own
                parts = _packed_array_parts(arg)
                for part in parts if parts is not None else [arg]:
                    pre_order_visit(part, visit)
            return False
        if isinstance(n, Call) and n.op == "tir.prefetch" and kind in ("llvm", "python"):
            return kind == "llvm"  # (the interpreter skips the hint, address and all)
        if isinstance(n, Call) and n.op == "tir.address_of" and kind == "llvm":
            return True
        if isinstance(n, Call) and n.op in BUILTIN_OPS:
            builtin = BUILTIN_OPS[n.op]
            problem.append(f"it calls T.{builtin.name}, {builtin.family}; minitvm builds for the CPU "
                           f"(target {kind!r}) and has no code for it")
        elif isinstance(n, AllocateConst):
            problem.append(f"it has constant data (T.allocate_const {n.buffer_var.name}), which minitvm's "
                           f"code generators (target {kind!r}) do not implement; pass the values as a parameter")
        elif isinstance(n, AttrStmt):
            if isinstance(n.node, IterVar) and n.node.thread_tag:
                problem.append(f"it launches GPU threads (T.launch_thread({n.node.thread_tag!r}, ...)); "
                               f"target {kind!r} is a CPU, where there are none: build for target=\"cuda\" "
                               "(CUDA source) or \"cuda-emulated\" (run on this CPU as a GPU would)")
            else:
                problem.append(f"it has a T.attr statement ({n.attr_key!r}), which minitvm's CPU code "
                               f"generators (target {kind!r}) do not implement")
        return not problem

    pre_order_visit(body, visit)
    return problem[0] if problem else None


def _packed_array_parts(arg: Any) -> list | None:
    """The expressions inside ``tvm_stack_make_array(data, tvm_stack_make_shape(...), ...)``, a
    packed call's array argument (None when ``arg`` is not one)."""
    if not (isinstance(arg, Call) and arg.op == "tir.tvm_stack_make_array"):
        return None
    data, shape, strides, _ndim, _dtype, elem_offset = arg.args
    dims = list(shape.args) if isinstance(shape, Call) and shape.op == "tir.tvm_stack_make_shape" else [shape]
    return [data, *dims, strides, elem_offset]


def build_module(funcs: dict[str, Any], target: Any, entries: tuple = ()) -> Any:
    """Compile lowered PrimFuncs (global name -> PrimFunc) for ``target``; ``entries``: VM
    functions to give native entries (llvm only; see :func:`.llvm.build_llvm`)."""
    target = target if isinstance(target, Target) else Target(target)
    check_buildable(funcs, target)
    if target.kind.name == "llvm":
        from .llvm import build_llvm  # lazy: each back end (here llvmlite) loads when a build asks for it

        return build_llvm(funcs, target, entries=entries)
    if target.kind.name == "python":
        from .python import build_python  # lazy: each back end loads when a build asks for it

        return build_python(funcs, target)
    if target.kind.name in ("cuda", "cuda-emulated"):
        from ..cuda import build_cuda  # lazy: each back end loads when a build asks for it

        return build_cuda(funcs, target)
    raise ValueError(f"no code generator for target kind {target.kind.name!r}")
