"""dlight's GPU rules: each schedules the kernels of its kind for a GPU target and declines any other."""

from .base import GPUScheduleRule
from .fallback import Fallback
from .gemv import GEMV
from .general_reduction import GeneralReduction
from .matmul import Matmul
from .reduction import Reduction

__all__ = ["GPUScheduleRule", "Matmul", "GEMV", "Reduction", "GeneralReduction", "Fallback"]
