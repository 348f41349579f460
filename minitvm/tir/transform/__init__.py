"""TIR passes: the lowering pipeline from scheduled TensorIR to code generators' input."""

from .compact_buffer_allocation import CompactBufferAllocation
from .flatten_buffer import FlattenBuffer
from .function_pass import PrimFuncPass, prim_func_pass
from .instrument_bound_checkers import InstrumentBoundCheckers
from .lower_init_block import LowerInitBlock
from .lower_opaque_block import ConvertBlocksToOpaque, LowerOpaqueBlock
from .pipeline import device_lower_pipeline, lower_pipeline, lowered
from .simplify import Simplify
from .split_host_device import SplitHostDevice
from .thread_sync import ThreadSync
from .tighten_guarded_loops import TightenGuardedLoops
from .unify_thread_binding import UnifyThreadBinding
from .verify_lowered import VerifyLowered, lowered_form_errors

__all__ = ["PrimFuncPass", "prim_func_pass", "LowerInitBlock", "ConvertBlocksToOpaque",
           "LowerOpaqueBlock", "CompactBufferAllocation", "FlattenBuffer", "Simplify", "TightenGuardedLoops",
           "VerifyLowered",
           "lowered_form_errors", "ThreadSync", "UnifyThreadBinding", "SplitHostDevice", "device_lower_pipeline",
           "lower_pipeline", "lowered"]
from .default_schedule import DefaultCPUSchedule  # noqa: E402

__all__ += ["DefaultCPUSchedule"]
from .default_gpu_schedule import DefaultGPUSchedule  # noqa: E402

__all__ += ["DefaultGPUSchedule"]
