"""dlight's base: ScheduleRule, the ApplyDefaultSchedule pass and the helpers rules share."""

from .schedule_rule import ScheduleRule
from .transform import ApplyDefaultSchedule, is_scheduled
from .utils import (
    auto_vectorize,
    fuse,
    get_bytes,
    get_extent,
    max_threads_per_block,
    suggest_threads_per_block,
    try_inline,
    try_inline_contiguous_spatial,
)

__all__ = ["ScheduleRule", "ApplyDefaultSchedule", "is_scheduled", "auto_vectorize", "fuse", "get_bytes", "get_extent",
           "max_threads_per_block", "suggest_threads_per_block", "try_inline", "try_inline_contiguous_spatial"]
