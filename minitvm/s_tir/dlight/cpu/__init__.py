"""dlight's CPU rules (target ``llvm``): GEMV and row reductions, on minitvm's default CPU schedules."""

from .base import CPUScheduleRule
from .gemv import GEMV
from .reduction import Reduction

__all__ = ["CPUScheduleRule", "GEMV", "Reduction"]
