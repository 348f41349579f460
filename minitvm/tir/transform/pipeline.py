"""The TIR lowering pipeline: from scheduled, block-level TIR to what codegen consumes."""

from __future__ import annotations

from typing import Any

from ...ir.module import IRModule
from ...transform import Sequential
from ..function import PrimFunc
from .compact_buffer_allocation import CompactBufferAllocation
from .flatten_buffer import FlattenBuffer
from .lower_init_block import LowerInitBlock
from .lower_opaque_block import LowerOpaqueBlock
from .simplify import Simplify
from .verify_lowered import VerifyLowered

__all__ = ["lower_pipeline", "lower"]


def lower_pipeline() -> Sequential:
    """allocations moved to where they are used, init -> if, blocks -> plain statements,
    buffers -> flat 1-D, simplify, verify."""
    return Sequential([CompactBufferAllocation(), LowerInitBlock(), LowerOpaqueBlock(), FlattenBuffer(), Simplify(),
                       VerifyLowered()], name="tir.lower")


def lower(mod: IRModule | PrimFunc, name: str = "main") -> Any:
    """Lower every PrimFunc of ``mod`` (a lone PrimFunc comes back as a PrimFunc)."""
    if isinstance(mod, PrimFunc):
        return lower(IRModule({mod.attrs.get("global_symbol", name): mod}))[
            mod.attrs.get("global_symbol", name)]
    if not isinstance(mod, IRModule):
        raise TypeError(f"lower expects an IRModule or a PrimFunc, got {type(mod).__name__}")
    return lower_pipeline()(mod)
