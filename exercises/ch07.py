# Generated from solutions/ch07.py by `python -m minitvm.grade.make_stubs`: edit the bodies that raise.
"""Chapter 7 exercises: automatic program optimization (to solve).

Stochastic schedules, their search spaces, and the pieces of a tuner: each function's
docstring says what it takes and returns. Try them here or in a notebook::

    from exercises import ch07
    ch07.perfect_tilings(12, 2)
    sch = ch07.stochastic_mm_relu(minitvm.s_tir.Schedule(ch07.MMRelu))
    print(sch.trace)

The graders (``tests/grade/test_ch07.py``) enumerate your search space and look for the
target in it, call your search loop with a cost function of their own, compare your
numbers with theirs, and time programs drawn from your own design space (7.9). Run them
with ``minitvm grade ch07`` or ``minitvm.grade.check("ch07")``.
"""

from __future__ import annotations

import random
from typing import Callable

from minitvm import s_tir, tirx
from minitvm.ir import IRModule
from minitvm.s_tir import meta_schedule as ms
from minitvm.script import ir as I
from minitvm.script import tirx as T

# ---------------------------------------------------------------- starting programs


@I.ir_module
class MatMul:
    @T.prim_func
    def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
             C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "main", "tirx.noalias": True})
        for i, j, k in T.grid(128, 128, 128):
            with T.sblock("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@I.ir_module
class MMRelu:
    @T.prim_func
    def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
             C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "main", "tirx.noalias": True})
        Y = T.sblock_alloc_buffer((128, 128), "float32")
        for i, j, k in T.grid(128, 128, 128):
            with T.sblock("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(128, 128):
            with T.sblock("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))


@I.ir_module
class MMReluTarget:
    """One program exercise 7.2's search space must contain (the grader keeps its own copy)."""

    @T.prim_func
    def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
             C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "main", "tirx.noalias": True})
        Y = T.sblock_alloc_buffer((128, 128))
        for i_0, j_0 in T.grid(16, 4):
            for i_1_init in range(8):
                for j_1_init in T.vectorized(32):
                    with T.sblock("Y_init"):
                        vi = T.axis.spatial(128, i_0 * 8 + i_1_init)
                        vj = T.axis.spatial(128, j_0 * 32 + j_1_init)
                        Y[vi, vj] = T.float32(0.0)
            for k, i_1 in T.grid(128, 8):
                for j_1 in T.vectorized(32):
                    with T.sblock("Y_update"):
                        vi = T.axis.spatial(128, i_0 * 8 + i_1)
                        vj = T.axis.spatial(128, j_0 * 32 + j_1)
                        vk = T.axis.reduce(128, k)
                        Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
            for ax0 in range(8):
                for ax1 in T.vectorized(32):
                    with T.sblock("C"):
                        vi = T.axis.spatial(128, i_0 * 8 + ax0)
                        vj = T.axis.spatial(128, j_0 * 32 + ax1)
                        C[vi, vj] = T.max(Y[vi, vj], T.float32(0.0))


# ---------------------------------------------------------------- exercises


def perfect_tilings(extent: int, n: int, max_innermost_factor: int = 16) -> list[list[int]]:
    """Exercise 7.1: every decision ``sch.sample_perfect_tile(loop, n, max_innermost_factor)``
    can make for a loop of this ``extent``: all lists of ``n`` positive integers whose product
    is ``extent`` and whose last (innermost) entry is at most ``max_innermost_factor``.

    Return them sorted (Python's list order), each once. ``perfect_tilings(12, 2, 4)`` is
    ``[[3, 4], [4, 3], [6, 2], [12, 1]]``. Their number is the size of one sampling step's
    search space.
    """
    raise NotImplementedError("exercise 7.1: write perfect_tilings")


def stochastic_mm_relu(sch: s_tir.Schedule) -> s_tir.Schedule:
    """Exercise 7.2: a stochastic schedule for ``MMRelu`` whose search space contains
    ``MMReluTarget``.

    Look at the target: the matmul ``Y`` is tiled over ``i`` and ``j`` and reordered to
    ``i_0, j_0, k, i_1, j_1`` with ``j_1`` vectorized, the ReLU ``C`` sits inside the tile loop
    ``j_0`` (vectorized inside), and the initialisation is decomposed and vectorized. Write the
    schedule so that the two tile sizes are *sampled* with ``sch.sample_perfect_tile`` instead
    of written down (mind ``max_innermost_factor``: the target's inner ``j`` loop has 32
    iterations). The grader replays your trace with every possible decision and looks for the
    target among the programs; your space must hold more than one program. Return ``sch``.
    """
    raise NotImplementedError("exercise 7.2: write stochastic_mm_relu")


def random_search(mod: IRModule, schedule_fn: Callable[[s_tir.Schedule], s_tir.Schedule],
                  evaluate: Callable[[s_tir.Schedule], float],
                  num_trials: int) -> tuple[s_tir.Schedule, list[float]]:
    """Exercise 7.3: random search. ``num_trials`` times: apply ``schedule_fn`` to a fresh
    ``s_tir.Schedule(mod)`` (no fixed seed: each trial draws new decisions) and measure the result
    with ``evaluate(sch)`` (seconds: lower is better). Call ``evaluate`` once per trial.

    Return the fastest schedule and the list of the ``num_trials`` costs in the order measured.
    """
    raise NotImplementedError("exercise 7.3: write random_search")


def mutate_tile(mod: IRModule, trace: s_tir.Trace, rng: random.Random) -> s_tir.Schedule:
    """Exercise 7.4: the mutation step of an evolutionary search. ``trace`` is the trace of a
    stochastic schedule of ``mod``. Pick one of its ``sample_perfect_tile`` instructions with
    ``rng`` (``trace.insts``; ``inst.kind.name == "SamplePerfectTile"``), give it a different
    valid decision (same number of factors, same product, innermost factor within the
    instruction's ``max_innermost_factor``, its second attribute: ``inst.attrs``), keep every
    other decision, and replay the new trace on a fresh ``s_tir.Schedule(mod)``.

    ``trace.get_decision(inst)`` reads a decision, ``trace.with_decision(inst, decision,
    remove_postproc=False)`` returns a copy with one changed, ``apply_to_schedule(sch)`` replays.
    Return the new schedule.
    """
    raise NotImplementedError("exercise 7.4: write mutate_tile")


def loop_features(func: tirx.PrimFunc) -> dict[str, int]:
    """Exercise 7.5: features of a scheduled PrimFunc, as a cost model sees them. Count the
    ``tirx.For`` loops in ``func.body`` (``tirx.post_order_visit`` calls a function on every node)
    and, for the loop kinds ``"vectorized"``, ``"unrolled"`` and ``"parallel"`` (``loop.kind``),
    how many loops have that kind and the product of their extents (1 when there is none):

    ``{"loops": ..., "vec_num": ..., "vec_prod": ..., "unroll_num": ..., "unroll_prod": ...,
    "parallel_num": ..., "parallel_prod": ...}`` (all ``int``; the extents are constants).
    """
    raise NotImplementedError("exercise 7.5: write loop_features")


def ranking_accuracy(predicted: list[float], measured: list[float]) -> float:
    """Exercise 7.6: how well a cost model ranks candidates. ``predicted[i]`` is the model's
    score for candidate ``i`` (higher: the model expects it to be faster); ``measured[i]`` its
    measured time in seconds (lower: faster).

    Over all pairs ``i < j`` whose measured times differ, return the fraction the model orders
    right (the faster one has the higher score); a pair the model scores equal counts one half.
    Raise ``ValueError`` when no pair has different times.
    """
    raise NotImplementedError("exercise 7.6: write ranking_accuracy")


def best_from_work_dir(work_dir: str, mod: IRModule, target: str) -> tuple[s_tir.Schedule, float]:
    """Exercise 7.7: read a tuning run's results back. ``work_dir`` is the folder a
    ``ms.tune_tir(..., work_dir=work_dir)`` call wrote its database to (its two JSON-lines
    files); ``mod`` the module it tuned.

    Open the database from the folder (``ms.database.JSONDatabase(work_dir=...)``), ask it for
    the best schedule of ``mod`` (``ms.tir_integration.compile_tir``) and for the best record
    (``database.query_tuning_record(mod, target)``), and return the schedule and that record's
    mean measured time in seconds (the mean of its ``run_secs``).
    """
    raise NotImplementedError("exercise 7.7: write best_from_work_dir")


def record_measurements(database: ms.database.Database, mod: IRModule,
                        measured: list[tuple[s_tir.Schedule, float]], target: str) -> None:
    """Exercise 7.8: the database is where tuning hands its results to the compiler, and it
    takes results from anywhere. ``measured`` holds schedules of ``mod`` you timed yourself,
    each with its time in seconds. Put them into ``database`` so that
    ``ms.tir_integration.compile_tir(database, mod, target)`` returns the fastest.

    A record belongs to a workload: ``database.commit_workload(mod)`` returns it (adding it when
    new). ``ms.database.TuningRecord(trace, workload, run_secs, target)`` is one measurement
    (``run_secs`` a list of seconds); ``database.commit_tuning_record(record)`` stores it.
    """
    raise NotImplementedError("exercise 7.8: write record_measurements")


def fast_design_space(sch: s_tir.Schedule) -> s_tir.Schedule:
    """Exercise 7.9 (open): a design space in which every program is fast.

    Write a stochastic schedule for ``MatMul`` (the grader uses 128 x 128): it samples at
    least one decision that changes the program, and *every* program it can produce computes
    the matmul and runs at least 4x faster than the unscheduled loop nest. The grader draws
    eight programs from your space (``s_tir.Schedule(mod, seed=s)``, ``s = 0 ... 7``) and
    measures each against the naive loop nest on this machine. Any primitives, any decisions:
    a tuner only ever picks programs from the space you give it, so keep the slow ones out.
    Return ``sch``.
    """
    raise NotImplementedError("exercise 7.9: write fast_design_space")
