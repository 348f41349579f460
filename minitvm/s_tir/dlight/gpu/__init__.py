"""dlight's GPU rules: each schedules the kernels of its kind for a GPU target and declines any other."""

from .base import GPUScheduleRule
from .fallback import Fallback
from .gemv import GEMV
from .general_reduction import GeneralReduction
from .low_batch_gemv import LowBatchGEMV
from .matmul import Matmul
from .reduction import Reduction
from .rmsnorm import RMSNorm
from .transpose import Transpose

__all__ = ["GPUScheduleRule", "Matmul", "GEMV", "LowBatchGEMV", "Reduction", "GeneralReduction", "Transpose",
           "RMSNorm", "Fallback"]
