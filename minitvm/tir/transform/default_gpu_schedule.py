"""DefaultGPUSchedule: bind every not-yet-bound block of a GPU function to blockIdx.x / threadIdx.x.

TVM's fallback that makes a module buildable for a GPU without tuning (TVM v0.23
``tvm.tir.transform.DefaultGPUSchedule``, 0.27 ``tvm.s_tir.transform``).  For every PrimFunc
whose target (its ``target`` attribute, else the ``with Target(...)`` in scope, else none at all)
is a GPU and which is not marked ``tir.is_scheduled``: each leaf block none of whose loops is
bound gets its data-parallel loops fused, split by the target's ``max_num_threads`` and bound
(blockIdx.x, threadIdx.x); its reduction loops stay inside each thread.  When the fused extent
exceeds ``max_num_threads * 256``, the grid is capped at 256 blocks and each thread loops over
the rest.  Afterwards every PrimFunc of the module (CPU ones too, left as they were) carries
``tir.is_scheduled``, as TVM's pass marks them.

The schedule's primitives (fuse, split, reorder, bind) check themselves, so the result computes
what the input computed.
"""

from __future__ import annotations

from typing import Any

from ...ir import replace
from ...ir.module import IRModule
from ...runtime.registry import get_global_func
from ...transform import PassContext, module_pass
from ..expr import IntImm, IterVar, Range, Var, const
from ..function import PrimFunc
from ..schedule import BlockRV, Schedule
from ..stmt import Block, BlockRealize, For, ForKind
from ..stmt_functor import block_realizes
from .default_schedule import SCHEDULED_ATTR, is_scheduled

__all__ = ["DefaultGPUSchedule"]

#: target kinds TVM's pass treats as GPUs (minitvm builds the first two; the rest are only recognised)
_GPU_KINDS = ("cuda", "cuda-emulated", "rocm", "metal", "vulkan", "opencl", "webgpu")
#: the grid's cap: beyond max_num_threads * this many elements each thread loops (as TVM)
MAX_THREADBLOCKS = 256


def _target_of(func: PrimFunc) -> Any:
    """The function's ``target`` attribute, else the Target in scope, else None."""
    target = func.attrs.get("target")
    if target is None:
        # the Target class sits a floor above tir: it registers how to read the one in scope
        current = get_global_func("target.TargetCurrent", allow_missing=True)
        return current() if current is not None else None
    return target  # a Target, or the str / dict spelling of one


def _kind_name(target: Any) -> str:
    if isinstance(target, str):
        return target.split()[0]
    if isinstance(target, dict):
        return str(target.get("kind", ""))
    return str(target.kind.name)


def _on_gpu(func: PrimFunc) -> bool:
    """As TVM: a function with no target anywhere counts as GPU (and then fails for want of one)."""
    target = _target_of(func)
    return target is None or _kind_name(target) in _GPU_KINDS


def _max_threads(target: Any, name: str) -> int:
    if target is None:
        raise ValueError(f"DefaultGPUSchedule: PrimFunc {name!r} has no 'target' attribute and no Target is in "
                         "scope; run the pass inside `with tvm.target.Target('cuda'):`")
    attrs = target if isinstance(target, dict) else getattr(target, "attrs", {})
    value = attrs.get("max_num_threads", attrs.get("max-num-threads")) if isinstance(attrs, dict) else None
    # TVM's cuda kind defaults max_num_threads to 1024; minitvm's Target leaves it unset unless given
    return int(value) if value is not None else 1024


def _leaf_blocks(sch: Schedule) -> list[BlockRV]:
    """The function's blocks that contain no other block, in program order."""
    func = sch.mod[sch.func_working_on]
    names = [r.block.name_hint for r, _ in block_realizes(func.body) if r.block.name_hint != "root"]
    blocks = [sch.get_block(n) for n in names]
    return [b for b in blocks if not sch.get_child_blocks(b)]


def _thread_bind(sch: Schedule, block: BlockRV, max_threads: int) -> None:
    """Fuse the block's data-parallel loops and bind them (blockIdx.x, threadIdx.x), unless
    one of its loops is already bound to a thread."""
    loops = sch.get_loops(block)
    if any(sch.get(lp).thread_binding is not None for lp in loops):
        return
    iters = sch.get(block).iter_vars
    if len(loops) != len(iters) and not (not loops and len(iters) <= 1):
        raise ValueError(f"DefaultGPUSchedule: block {sch.get(block).name_hint!r} has {len(loops)} loops for "
                         f"{len(iters)} block iterators; the pass needs one loop per iterator (as TVM)")
    spatial = [lp for lp, it in zip(loops, iters) if it.iter_type == IterVar.DataPar]
    if not spatial:  # a scalar block or a pure reduction: one thread runs it
        spatial = [sch.add_unit_loop(loops[0] if loops else block)]
    fused = sch.fuse(*spatial, preserve_unit_iters=False) if len(spatial) > 1 else spatial[0]
    extent = sch.get(fused).extent
    product = int(extent.value) if isinstance(extent, IntImm) else None
    if product is None or product > max_threads * MAX_THREADBLOCKS:
        # a grid of constant size whatever the extent (a symbolic one too): each thread loops
        outer, bx, tx = sch.split(fused, factors=[None, MAX_THREADBLOCKS, max_threads])
        sch.reorder(bx, tx, outer)
    else:
        bx, tx = sch.split(fused, factors=[None, min(product, max_threads)])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")


def _wrap_bare_block(func: PrimFunc) -> PrimFunc:
    """A function whose body is one loop-free block computing directly (a scalar op) gets a root
    block around it and a unit loop with a unit iterator, as TVM 0.27 does: the schedule cannot
    add a loop above the function's root block, and binding needs a loop."""
    realize = func.body
    if not isinstance(realize, BlockRealize) or realize.block.iter_vars or \
            isinstance(realize.block.body, (For, BlockRealize)):
        return func
    u, vu = Var("u", "int32"), Var("vu", "int32")
    inner = replace(realize.block, iter_vars=(IterVar(Range(const(0, "int32"), const(1, "int32")), vu,
                                                      IterVar.DataPar),))
    loop = For(u, const(0, "int32"), const(1, "int32"), ForKind.SERIAL, BlockRealize((u,), realize.predicate, inner))
    root = BlockRealize((), const(True, "bool"), Block("root", body=loop))
    return PrimFunc(func.params, func.buffer_map, root, func.ret_type, dict(func.attrs))


def _mark_scheduled(mod: IRModule) -> IRModule:
    out = mod
    for gv, func in mod.functions_items():
        if isinstance(func, PrimFunc):
            out = out.with_function(gv.name_hint, func.with_attr(SCHEDULED_ATTR, True))
    return out


@module_pass(opt_level=0, name="DefaultGPUSchedule")
class DefaultGPUSchedule:
    """``DefaultGPUSchedule()``: a thread per output element for every unbound block of every
    GPU PrimFunc (see the module docstring); CPU functions and bound blocks are left as they are."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod
        for gv, func in mod.functions_items():
            if not isinstance(func, PrimFunc) or is_scheduled(func) or not _on_gpu(func):
                continue
            threads = _max_threads(_target_of(func), gv.name_hint)
            sch = Schedule(IRModule({"main": _wrap_bare_block(func)}))
            for block in _leaf_blocks(sch):
                _thread_bind(sch, block, threads)
            # the schedule's copy of the function is named "main": keep the original's attributes
            scheduled = sch.mod["main"]
            new = PrimFunc(scheduled.params, scheduled.buffer_map, scheduled.body, scheduled.ret_type,
                           dict(func.attrs))
            out = out.with_function(gv.name_hint, new)
        return _mark_scheduled(out)
