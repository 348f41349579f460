"""``tvm.s_tir.dlight`` (TVM 0.27; ``tvm.dlight`` before): default schedules without tuning.

A :class:`ScheduleRule` looks at one PrimFunc and returns a schedule when the function is its
kind (a matmul, a GEMV, a row reduction ...) and the target is its target, else None.
``ApplyDefaultSchedule(*rules)`` is the module pass that gives every unscheduled PrimFunc the
first rule's schedule that fits::

    from minitvm.s_tir import dlight as dl
    with minitvm.target.Target("cuda-emulated"):
        mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                      dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)

The ``gpu`` rules decline CPU targets (as TVM's), so on ``llvm`` kernels keep minitvm's default
CPU schedule; the ``cpu`` rules decline GPU targets.  minitvm has no cross-thread reduction, so
where TVM binds a reduction to threads the rules here reduce slices per thread with ``rfactor``
and combine the partials in one thread (:mod:`.gpu.rows`).
"""

from . import cpu, gpu
from .analysis import IterInfo, SBlockInfo, normalize_prim_func
from .base import ApplyDefaultSchedule, ScheduleRule, try_inline, try_inline_contiguous_spatial

__all__ = ["gpu", "cpu", "ApplyDefaultSchedule", "ScheduleRule", "SBlockInfo", "IterInfo", "normalize_prim_func",
           "try_inline", "try_inline_contiguous_spatial"]
