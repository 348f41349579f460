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
from .verify_lowered import VerifyLowered

__all__ = ["lower_pipeline", "lowered"]


def lower_pipeline() -> Sequential:
    """provable out-of-bounds accesses refused, allocations moved to where they are used,
    init -> if, blocks -> plain statements, buffers -> flat 1-D, simplify, verify."""
    return Sequential([OOBChecker(), CompactBufferAllocation(), LowerInitBlock(), LowerOpaqueBlock(), FlattenBuffer(),
                       Simplify(), VerifyLowered()], name="tir.lower")


def lowered(mod: IRModule | PrimFunc, name: str = "main") -> Any:
    """The lowered form of what it is given: a PrimFunc for a PrimFunc, an IRModule (every
    PrimFunc lowered) for an IRModule.  (``minitvm.lower``, TVM's, always returns an IRModule.)"""
    if isinstance(mod, PrimFunc):
        symbol = mod.attrs.get("global_symbol", name)
        return lowered(IRModule({symbol: mod}))[symbol]
    if not isinstance(mod, IRModule):
        raise TypeError(f"lowered expects an IRModule or a PrimFunc, got {type(mod).__name__}")
    return lower_pipeline()(mod)
