"""The TIR lowering pipeline: from scheduled, block-level TIR to what codegen consumes."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...transform import Sequential
from ..function import PrimFunc
from ..oob_checker import OOBChecker
from .compact_buffer_allocation import CompactBufferAllocation
from .flatten_buffer import FlattenBuffer
from .lower_init_block import LowerInitBlock
from .lower_opaque_block import LowerOpaqueBlock
from .simplify import Simplify
from .split_host_device import SplitHostDevice
from .thread_sync import ThreadSync
from .tighten_guarded_loops import TightenGuardedLoops
from .unify_thread_binding import UnifyThreadBinding
from .verify_lowered import VerifyLowered

__all__ = ["lower_pipeline", "lowered", "device_lower_pipeline"]


def lower_pipeline() -> Sequential:
    """provable out-of-bounds accesses refused, one variable per GPU thread axis, allocations
    moved to where they are used, init -> if, blocks -> plain statements (thread-bound loops ->
    thread launches), buffers -> flat 1-D, simplify, guards on a loop's own variable -> its extent, verify."""
    return Sequential([OOBChecker(), UnifyThreadBinding(), CompactBufferAllocation(), LowerInitBlock(),
                       LowerOpaqueBlock(), FlattenBuffer(), Simplify(), TightenGuardedLoops(),
                       VerifyLowered()], name="tir.lower")


def device_lower_pipeline() -> Sequential:
    """After :func:`lower_pipeline`, for a GPU target: barriers where the threads of a block
    share data through shared memory (ThreadSync), then each kernel launch split into its own
    device function (SplitHostDevice), as TVM's build does."""
    return Sequential([ThreadSync("shared"), ThreadSync("shared.dyn"), SplitHostDevice()], name="tir.device_lower")


def lowered(mod: IRModule | PrimFunc, name: str = "main") -> Any:
    """The lowered form of what it is given: a PrimFunc for a PrimFunc, an IRModule (every
    PrimFunc lowered) for an IRModule.  (``minitvm.lower``, TVM's, always returns an IRModule.)"""
    if isinstance(mod, PrimFunc):
        symbol = mod.attrs.get("global_symbol", name)
        return lowered(IRModule({symbol: mod}))[symbol]
    if not isinstance(mod, IRModule):
        raise TypeError(f"lowered expects an IRModule or a PrimFunc, got {type(mod).__name__}")
    return lower_pipeline()(mod)
