"""GPUScheduleRule: a rule that declines every target but a GPU one, and what GPU rules share."""

from __future__ import annotations

from ....target import Target
from ....tir import Schedule
from ....tir.schedule import BlockRV, LoopRV
from ..base import ScheduleRule

__all__ = ["GPUScheduleRule", "one_thread", "outputs_in"]


class GPUScheduleRule(ScheduleRule):
    """A rule for GPU targets (``cuda``, ``cuda-emulated``): None for any other target, as TVM's."""

    def is_target_available(self, target: Target) -> bool:
        return super().is_target_available(target) and "gpu" in target.keys


def outputs_in(sch: Schedule, block: BlockRV, scope: str) -> None:
    """Every buffer ``block`` writes in storage ``scope`` (a tuple reduction, layer norm's sum
    and sum of squares, writes two)."""
    for i in range(len(sch.get(block).writes)):
        sch.set_scope(block, i, scope)


def one_thread(sch: Schedule, block: BlockRV, above: LoopRV, num_threads: int) -> LoopRV:
    """Run ``block`` (everything under loop ``above``) on thread 0 of the ``num_threads`` of its
    thread block: a unit loop split by ``num_threads`` is bound to threadIdx.x, and the split's
    guard keeps threads 1.. idle.  minitvm has no cross-thread reduction (TVM's allreduce), so the
    rules combine the threads' partial results this way; unbound, every thread would run the
    block and race on its output.  The block accumulates in registers and stores once: a loop
    storing to shared memory at every step would need a barrier per step, which a guarded
    (one-thread) region cannot hold."""
    unit = sch.add_unit_loop(above)
    for i in range(len(sch.get(block).writes)):
        store = sch.cache_write(block, i, "local")
        sch.reverse_compute_at(store, unit, preserve_unit_loops=True)
    _, tx = sch.split(unit, factors=[None, num_threads])
    sch.bind(tx, "threadIdx.x")
    return tx
