"""Graders for chapter 7 (``exercises/ch07.py``): one test per exercise, worth ``points``.

The starting programs and the target are written here, so editing them in the exercise file
changes nothing. A search space is checked by replaying the learner's trace with *every*
possible decision (``Trace.apply_to_schedule(..., decision_provider=...)``, as a tuner that
enumerates would) and comparing each program with the target; the search loop and the
mutation are called with the grader's own cost function and random generator.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import minitvm
from minitvm import meta_schedule as ms
from minitvm import tir
from minitvm.ir import IRModule, assert_structural_equal, structural_equal
from minitvm.script import ir as I
from minitvm.script import tir as T
from minitvm.testing import assert_allclose


@pytest.fixture
def ex(grade_module):
    return grade_module("ch07")


# ------------------------------------------------------------------ programs


def matmul(n: int) -> IRModule:
    @I.ir_module
    class MatMul:
        @T.prim_func
        def main(A: T.Buffer((n, n), "float32"), B: T.Buffer((n, n), "float32"), C: T.Buffer((n, n), "float32")):
            T.func_attr({"global_symbol": "main", "tir.noalias": True})
            for i, j, k in T.grid(n, n, n):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return MatMul


@I.ir_module
class MMRelu:
    @T.prim_func
    def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
             C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        Y = T.alloc_buffer((128, 128), "float32")
        for i, j, k in T.grid(128, 128, 128):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))


@T.prim_func
def mm_relu_target(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
                   C: T.Buffer((128, 128), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    Y = T.alloc_buffer((128, 128))
    for i_0, j_0 in T.grid(16, 4):
        for i_1_init in range(8):
            for j_1_init in T.vectorized(32):
                with T.block("Y_init"):
                    vi = T.axis.spatial(128, i_0 * 8 + i_1_init)
                    vj = T.axis.spatial(128, j_0 * 32 + j_1_init)
                    Y[vi, vj] = T.float32(0.0)
        for k, i_1 in T.grid(128, 8):
            for j_1 in T.vectorized(32):
                with T.block("Y_update"):
                    vi = T.axis.spatial(128, i_0 * 8 + i_1)
                    vj = T.axis.spatial(128, j_0 * 32 + j_1)
                    vk = T.axis.reduce(128, k)
                    Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for ax0 in range(8):
            for ax1 in T.vectorized(32):
                with T.block("C"):
                    vi = T.axis.spatial(128, i_0 * 8 + ax0)
                    vj = T.axis.spatial(128, j_0 * 32 + ax1)
                    C[vi, vj] = T.max(Y[vi, vj], T.float32(0.0))


# ------------------------------------------------------------------ helpers


def _tilings(extent: int, n: int, max_inner: int) -> list[list[int]]:
    """All decisions of sample_perfect_tile, by brute force over divisor tuples."""
    divisors = [d for d in range(1, extent + 1) if extent % d == 0]
    return sorted(list(t) for t in itertools.product(divisors, repeat=n)
                  if int(np.prod(t)) == extent and t[-1] <= max_inner)


def _decision_options(sch: tir.Schedule, inst: tir.schedule.Instruction, inputs: list, attrs: list) -> list:
    if inst.kind.name == "SamplePerfectTile":
        return _tilings(int(sch.get(inputs[0]).extent), int(attrs[0]), int(attrs[1]))
    if inst.kind.name == "SampleCategorical":
        return list(range(len(attrs[0])))
    raise AssertionError(f"the grader enumerates sample_perfect_tile and sample_categorical, "
                         f"not {inst.kind.name}: use those two")


def _space(mod: IRModule, trace: tir.Trace, limit: int = 400) -> list[tir.Schedule]:
    """Every program the trace's sampling instructions can produce: a depth-first walk over
    the decisions, each replay choosing option ``choice[k]`` at the k-th sampling step."""
    programs, stack = [], [[]]
    while stack:
        prefix = stack.pop()
        counts: list[int] = []
        sch = tir.Schedule(mod)

        def provide(inst, inputs, attrs, decision, sch=sch, prefix=prefix, counts=counts):
            if not inst.kind.decision:
                return decision
            options = _decision_options(sch, inst, inputs, attrs)
            k = len(counts)
            counts.append(len(options))
            return options[prefix[k] if k < len(prefix) else 0]

        try:
            trace.apply_to_schedule(sch, decision_provider=provide)
            programs.append(sch)
        except (tir.ScheduleError, ValueError):
            # decisions the later steps refuse (a unit loop that vanished, say) give no program,
            # as in a tuner's replay
            pass
        for pos in range(len(prefix), len(counts)):
            stack += [prefix + [0] * (pos - len(prefix)) + [alt] for alt in range(1, counts[pos])]
        assert len(programs) <= limit, f"your search space has more than {limit} programs: sample fewer decisions"
    return programs


def _tile_decisions(trace: tir.Trace) -> list[tuple[int, ...]]:
    return [tuple(int(f) for f in trace.get_decision(inst)) for inst in trace.insts
            if inst.kind.name == "SamplePerfectTile"]


def _tiled_matmul(sch: tir.Schedule) -> tir.Schedule:
    """The grader's stochastic schedule: i, j and k sampled (three tile decisions)."""
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2))
    j0, j1, j2 = sch.split(j, sch.sample_perfect_tile(j, n=3, max_innermost_factor=8))
    k0, k1 = sch.split(k, sch.sample_perfect_tile(k, n=2, max_innermost_factor=4))
    sch.reorder(i0, j0, k0, i1, j1, k1, j2)
    sch.vectorize(j2)
    return sch


# ------------------------------------------------------------------ 7.1


@pytest.mark.points(1)
@pytest.mark.hint("The search space: one sampling step's choices are the ordered ways to write the extent as a "
                  "product",
                  "build the lists factor by factor, each a divisor of what is left; only the last one is checked "
                  "against max_innermost_factor")
def test_perfect_tilings(ex):
    """Exercise 7.1: every decision of sample_perfect_tile."""
    for extent, n, max_inner in [(12, 2, 4), (128, 2, 16), (64, 3, 8), (30, 3, 16), (7, 2, 16), (16, 1, 16),
                                 (16, 1, 8), (24, 4, 2)]:
        yours = ex.perfect_tilings(extent, n, max_inner)
        assert [list(map(int, t)) for t in yours] == _tilings(extent, n, max_inner), \
            f"perfect_tilings({extent}, {n}, {max_inner}) = {yours}, expected {_tilings(extent, n, max_inner)}"
    assert ex.perfect_tilings(12, 2) == _tilings(12, 2, 16), "max_innermost_factor defaults to 16"
    # every listed decision is one the schedule accepts
    sch = tir.Schedule(matmul(24))
    loop = sch.get_loops(sch.get_block("C"))[0]
    for decision in ex.perfect_tilings(24, 3, 4):
        sch.sample_perfect_tile(loop, n=3, max_innermost_factor=4, decision=decision)


# ------------------------------------------------------------------ 7.2


@pytest.mark.points(3)
@pytest.mark.hint("A stochastic schedule: the chapter's stochastic schedule is this one's pattern: the tile sizes "
                  "are samples, not numbers",
                  "the grader replayed your trace with every decision; the program shown is the nearest in your "
                  "space; can j's inner factor reach 32 (max_innermost_factor)?")
def test_stochastic_mm_relu_space_contains_the_target(ex):
    """Exercise 7.2: a stochastic schedule whose space contains the target."""
    sch = ex.stochastic_mm_relu(tir.Schedule(MMRelu, seed=7))
    assert isinstance(sch, tir.Schedule), f"return the schedule, not {type(sch).__name__}"
    assert any(inst.kind.decision for inst in sch.trace.insts), \
        "your schedule samples nothing: use sch.sample_perfect_tile for the tile sizes"
    programs = _space(MMRelu, sch.trace)
    distinct = []
    for p in programs:
        if not any(structural_equal(p.mod, q.mod) for q in distinct):
            distinct.append(p)
    assert len(distinct) >= 2, "every decision gives the same program: use the sampled factors in split"
    target = IRModule({"main": mm_relu_target})
    if not any(structural_equal(p.mod, target) for p in distinct):
        import difflib

        # one era's spelling for both, so the nearest program is the nearest in structure
        want = target.script(era="0.27")
        nearest = max(distinct, key=lambda p: difflib.SequenceMatcher(None, p.mod.script(era="0.27"), want).ratio())
        assert_structural_equal(nearest.mod, target)
    # the programs compute mm_relu
    rng = np.random.default_rng(72)
    a, b = (rng.standard_normal((128, 128)).astype("float32") for _ in range(2))
    c = minitvm.nd.empty((128, 128), "float32")
    minitvm.build(sch.mod, target="llvm")["main"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    assert_allclose(c.numpy(), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-3)


# ------------------------------------------------------------------ 7.3


@pytest.mark.points(2)
@pytest.mark.hint("Random search in ten lines: each trial draws new decisions on a fresh schedule",
                  "one evaluate per trial; keep the schedule with the lowest cost and every cost in the order "
                  "measured")
def test_random_search(ex):
    """Exercise 7.3: the random-search loop."""
    mod = matmul(64)
    calls: list[tuple[tir.Schedule, float]] = []

    def evaluate(sch: tir.Schedule) -> float:
        # a made-up cost that depends on the decisions (so the best one is known), in seconds
        decisions = _tile_decisions(sch.trace)
        cost = 1e-3 * (1 + sum((i + 3) * f for i, d in enumerate(decisions) for f in d) % 23)
        calls.append((sch, cost))
        return cost

    random.seed(0)  # a solution that draws seeds from Python's random is reproducible here
    best, costs = ex.random_search(mod, _tiled_matmul, evaluate, 16)
    assert len(calls) == 16, f"evaluate was called {len(calls)} times for 16 trials: once per trial"
    assert [float(c) for c in costs] == [c for _, c in calls], \
        "return the costs in the order evaluate measured them"
    assert len({_tile_decisions(s.trace)[0] + _tile_decisions(s.trace)[1] for s, _ in calls}) >= 3, \
        "the trials drew (almost) the same decisions: give tir.Schedule no fixed seed"
    for s, _ in calls:
        assert _tile_decisions(s.trace), "evaluate received a schedule that schedule_fn did not transform"
    lowest = min(c for _, c in calls)
    assert isinstance(best, tir.Schedule), f"return the best schedule, not {type(best).__name__}"
    assert any(best is s and c == lowest for s, c in calls), \
        f"the returned schedule is not one of those that cost the least ({lowest * 1e3:.0f} ms)"


# ------------------------------------------------------------------ 7.4


@pytest.mark.points(2)
@pytest.mark.hint("The search space: a trace records every decision; change one and replay it, and you have a "
                  "neighbour",
                  "choose among the sample_perfect_tile instructions, draw another valid tiling of the same loop "
                  "(same count, same product, innermost within the cap), change only that decision and replay on a "
                  "fresh schedule")
def test_mutate_tile(ex):
    """Exercise 7.4: mutate one tile decision and replay."""
    mod = matmul(96)
    mutated_steps = set()
    for seed in range(8):
        parent = _tiled_matmul(tir.Schedule(mod, seed=seed))
        child = ex.mutate_tile(mod, parent.trace, random.Random(seed))
        assert isinstance(child, tir.Schedule), f"return a tir.Schedule, not {type(child).__name__}"
        before, after = _tile_decisions(parent.trace), _tile_decisions(child.trace)
        assert len(before) == len(after), "the new trace must have the same sampling steps"
        changed = [k for k, (x, y) in enumerate(zip(before, after)) if x != y]
        assert len(changed) == 1, f"{len(changed)} tile decisions changed ({before} -> {after}): change one"
        k = changed[0]
        inst = [i for i in parent.trace.insts if i.kind.name == "SamplePerfectTile"][k]
        valid = _tilings(int(np.prod(before[k])), len(before[k]), int(inst.attrs[1]))
        assert list(after[k]) in valid, f"{list(after[k])} is not a valid tiling here; valid ones: {valid}"
        mutated_steps.add(k)
        # the child is the parent's trace replayed with the one new decision
        expected = tir.Schedule(mod)
        parent.trace.with_decision(inst, list(after[k]), remove_postproc=False).apply_to_schedule(expected)
        assert_structural_equal(child.mod, expected.mod)
    assert len(mutated_steps) >= 2, "pick the instruction to mutate with rng, not always the same one"


# ------------------------------------------------------------------ 7.5


def _features_cases() -> list[tuple[tir.PrimFunc, dict[str, int]]]:
    sch = tir.Schedule(matmul(64))
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, 16])
    sch.reorder(i0, j0, k, i1, j1)
    sch.parallel(i0)
    sch.unroll(i1)
    sch.vectorize(j1)
    init = sch.decompose_reduction(block, k)
    sch.vectorize(sch.get_loops(init)[-1])
    fused = tir.Schedule(matmul(32))
    f = fused.fuse(*fused.get_loops(fused.get_block("C"))[:2])
    fused.parallel(f)
    two = tir.Schedule(matmul(32))
    i, j, k = two.get_loops(two.get_block("C"))
    two.unroll(k)
    two.unroll(j)
    return [
        (matmul(16)["main"], {"loops": 3, "vec_num": 0, "vec_prod": 1, "unroll_num": 0, "unroll_prod": 1,
                              "parallel_num": 0, "parallel_prod": 1}),
        (sch.mod["main"], {"loops": 7, "vec_num": 2, "vec_prod": 256, "unroll_num": 2, "unroll_prod": 16,
                           "parallel_num": 1, "parallel_prod": 16}),
        (fused.mod["main"], {"loops": 2, "vec_num": 0, "vec_prod": 1, "unroll_num": 0, "unroll_prod": 1,
                             "parallel_num": 1, "parallel_prod": 1024}),
        (two.mod["main"], {"loops": 3, "vec_num": 0, "vec_prod": 1, "unroll_num": 2, "unroll_prod": 1024,
                           "parallel_num": 0, "parallel_prod": 1}),
        (mm_relu_target, {"loops": 9, "vec_num": 3, "vec_prod": 32**3, "unroll_num": 0, "unroll_prod": 1,
                          "parallel_num": 0, "parallel_prod": 1}),
    ]


@pytest.mark.points(2)
@pytest.mark.hint("What a cost model sees: features are counts over the loops of the function",
                  "visit every node and keep the loops; per kind, count the loops and multiply their extents; a "
                  "kind with no loop has product 1")
def test_loop_features(ex):
    """Exercise 7.5: loop features of a scheduled PrimFunc."""
    for k, (func, expected) in enumerate(_features_cases()):
        yours = ex.loop_features(func)
        assert isinstance(yours, dict), f"return a dict, not {type(yours).__name__}"
        assert {key: int(v) for key, v in yours.items()} == expected, \
            f"case {k + 1}: got {yours}, expected {expected} for\n{func.script()}"


# ------------------------------------------------------------------ 7.6


def _ranking_accuracy(predicted, measured):
    pairs = [(i, j) for i in range(len(measured)) for j in range(i + 1, len(measured)) if measured[i] != measured[j]]
    score = 0.0
    for i, j in pairs:
        sign = np.sign(predicted[i] - predicted[j]) * np.sign(measured[j] - measured[i])
        score += (sign + 1) / 2
    return score / len(pairs)


@pytest.mark.points(1)
@pytest.mark.hint("The cost model's view: a pair is ranked right when the faster candidate has the higher score",
                  "skip pairs with equal times, count a tie in scores one half; when no pair is left, there is "
                  "nothing to rank")
def test_ranking_accuracy(ex):
    """Exercise 7.6: how well a cost model ranks candidates."""
    assert ex.ranking_accuracy([3.0, 2.0, 1.0], [1e-3, 2e-3, 3e-3]) == pytest.approx(1.0)
    assert ex.ranking_accuracy([1.0, 2.0, 3.0], [1e-3, 2e-3, 3e-3]) == pytest.approx(0.0)
    assert ex.ranking_accuracy([1.0, 1.0], [1e-3, 2e-3]) == pytest.approx(0.5), "an equal score counts one half"
    assert ex.ranking_accuracy([5.0, 1.0, 0.0], [1e-3, 1e-3, 2e-3]) == pytest.approx(1.0), \
        "pairs with equal measured times are skipped"
    rng = np.random.default_rng(76)
    for _ in range(5):
        measured = list(rng.uniform(1e-4, 1e-2, 12))
        predicted = list(np.round(-np.array(measured) * 1e3 + rng.normal(0, 2, 12)))  # noisy, with ties
        assert ex.ranking_accuracy(predicted, measured) == pytest.approx(_ranking_accuracy(predicted, measured))
    with pytest.raises(ValueError):
        ex.ranking_accuracy([1.0, 2.0], [1e-3, 1e-3])


# ------------------------------------------------------------------ 7.7


@pytest.mark.points(2)
@pytest.mark.hint("Reading the database: the work_dir holds the tuning database as two JSON-lines files",
                  "open the database from the folder; one call gives the best schedule, another the best record; a "
                  "record's run_secs are its measurements")
def test_best_from_work_dir(ex, tmp_path):
    """Exercise 7.7: read a tuning database back."""
    mod = matmul(64)
    database = ms.database.JSONDatabase(work_dir=str(tmp_path))
    workload = database.commit_workload(mod)
    made = {}
    for seed, secs in [(1, [3e-4, 3.2e-4]), (2, [1.5e-4, 1.7e-4]), (3, None), (4, [2e-4, 2e-4])]:
        sch = _tiled_matmul(tir.Schedule(mod, seed=seed))
        made[seed] = sch
        database.commit_tuning_record(ms.database.TuningRecord(sch.trace, workload, secs, "llvm"))
    # the records come from the files (a fresh database object), as after a tuning run
    sch, secs = ex.best_from_work_dir(str(tmp_path), mod, "llvm --num-cores=1")
    assert isinstance(sch, tir.Schedule), f"return the schedule compile_tir gives, not {type(sch).__name__}"
    assert float(secs) == pytest.approx(1.6e-4), \
        f"the best record's mean time is 0.16 ms (mean of its run_secs), you returned {float(secs) * 1e3:.3f} ms"
    assert_structural_equal(sch.mod, made[2].mod)


# ------------------------------------------------------------------ 7.8


@pytest.mark.points(2)
@pytest.mark.hint("Reading the database: records belong to a workload, and the compiler picks the fastest record of "
                  "its workload",
                  "commit the workload once, then one record per measurement: its trace, the workload, its seconds "
                  "as a list, the target")
def test_record_measurements(ex):
    """Exercise 7.8: put your own measurements into a database."""
    mod = matmul(64)
    schedules = [_tiled_matmul(tir.Schedule(mod, seed=seed)) for seed in (5, 6, 7)]
    database = ms.database.MemoryDatabase()
    result = ex.record_measurements(database, mod, list(zip(schedules, [2e-4, 1e-4, 3e-4])), "llvm")
    assert result is None, "record_measurements changes the database and returns nothing"
    assert len(database.get_all_tuning_records()) == 3, \
        f"the database holds {len(database.get_all_tuning_records())} records, expected one per measurement"
    best = ms.tir_integration.compile_tir(database, mod, "llvm")
    assert best is not None, "compile_tir found no record for mod: commit the records under its workload"
    assert_structural_equal(best.mod, schedules[1].mod)
    rng = np.random.default_rng(78)
    a, b = (rng.standard_normal((64, 64)).astype("float32") for _ in range(2))
    c = minitvm.nd.empty((64, 64), "float32")
    minitvm.build(best.mod, target="llvm")["main"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-3)


# ------------------------------------------------------------------ 7.9 (open: any design space)


def _gflops(lib, n: int, args, number: int) -> float:
    seconds = min(lib.time_evaluator("main", minitvm.cpu(), number=number)(*args).mean for _ in range(3))
    return 2 * n**3 / seconds / 1e9


def _decisions(trace: tir.Trace) -> list:
    out = []
    for inst in trace.insts:
        if inst.kind.decision:
            d = trace.get_decision(inst)
            out.append([int(f) for f in d] if hasattr(d, "__len__") else int(d))  # a tiling, or a category
    return out


#: a good space is far above this (15-35x here); a space holding a one-lane "vectorized" loop is near 1x
_SPEEDUP = 4


@pytest.mark.points(3)
@pytest.mark.hint("The search space: a tuner only picks programs from your space: which of your decisions can give "
                  "a slow program?",
                  "sample_perfect_tile may draw an inner factor of 1; sample_categorical draws only from candidates "
                  "you choose")
def test_fast_design_space(ex):
    """Exercise 7.9: every program drawn from the learner's design space is right and 4x the naive matmul."""
    n = 128
    mod = matmul(n)
    rng = np.random.default_rng(79)
    a, b = (rng.standard_normal((n, n)).astype("float32") for _ in range(2))
    args = [minitvm.nd.array(a), minitvm.nd.array(b), minitvm.nd.empty((n, n), "float32")]
    naive = _gflops(minitvm.build(mod, target="llvm"), n, args, number=1)
    draws = []
    for seed in range(8):
        sch = ex.fast_design_space(tir.Schedule(mod, seed=seed))
        assert isinstance(sch, tir.Schedule), f"return the schedule, not {type(sch).__name__}"
        decisions = _decisions(sch.trace)
        assert decisions, "your schedule samples nothing: a design space draws its decisions (sample_perfect_tile, " \
                          "sample_categorical)"
        lib = minitvm.build(sch.mod, target="llvm")
        args[2].copyfrom(np.full((n, n), np.nan, "float32"))
        lib["main"](*args)
        assert_allclose(args[2].numpy(), a @ b, rtol=1e-3, atol=1e-3,
                        err_msg=f"the program drawn with seed {seed} (decisions {decisions}) computes wrong numbers")
        fast = _gflops(lib, n, args, number=3)
        assert fast >= _SPEEDUP * naive, (
            f"the program drawn with seed {seed} (decisions {decisions}) runs at {fast:.1f} GFLOP/s, "
            f"{fast / naive:.1f}x the naive {naive:.1f} GFLOP/s: every program in your space must be at least "
            f"{_SPEEDUP}x faster")
        draws.append(sch.mod)
    distinct = [m for k, m in enumerate(draws) if not any(structural_equal(m, o) for o in draws[:k])]
    assert len(distinct) >= 2, "the eight draws gave one program: your sampled decisions must change the schedule"
