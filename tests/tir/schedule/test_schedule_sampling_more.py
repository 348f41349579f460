"""sch.sample_compute_location, TVM's random engine behind it, and trivial tiling of symbolic loops."""

import pytest

from minitvm import tir
from minitvm.script import tir as T
from minitvm.tir.schedule import random_engine


def test_generator_is_minstd_rand():
    # the C++ standard fixes std::minstd_rand's 10000th value (seed 1) at 399268537
    state = 1
    for _ in range(10000):
        state = random_engine.next_state(state)
    assert state == 399268537


def test_sample_int_is_uniform_and_in_range():
    state, counts = random_engine.normalize_seed(7), [0] * 5
    for _ in range(5000):
        v, state = random_engine.sample_int(state, 0, 5)
        counts[v] += 1
    assert all(900 < c < 1100 for c in counts)
    assert random_engine.sample_int(123, 4, 5) == (4, 123)  # one choice draws nothing
    with pytest.raises(ValueError):
        random_engine.normalize_seed(-5)


@T.prim_func
def blur(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 14), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
    for i, j, k in T.grid(16, 14, 3):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + B[vi, vj + vk]


def test_candidates_and_replay(trace_replays):
    sch = tir.Schedule(blur, seed=3)
    cands = [k for k, _ in sch._compute_location_candidates(sch.get_block("B"))]
    assert cands == [-2, -1, 0, 1]  # inline, root, under i, under j (not under the reduction k)
    seen = set()
    for _ in range(40):
        rv = sch.sample_compute_location("B")
        seen.add(sch.trace.decisions[sch.trace.insts[-1]])
    assert seen == {-2, -1, 0, 1}
    last = sch.trace.decisions[sch.trace.insts[-1]]
    if last >= 0:
        assert sch.get(rv).loop_var.name == ["i", "j"][last]
    else:
        assert rv.mark == ("inline" if last == -2 else "root")
    trace_replays(sch, blur)


def test_stale_decision_falls_back_to_the_one_before():
    sch = tir.Schedule(blur)
    rv = sch.sample_compute_location("B", decision=2)  # 2 is no candidate: 1 (loop j) is taken
    assert sch.trace.decisions[sch.trace.insts[-1]] == 1
    assert sch.get(rv).loop_var.name == "j"


def test_same_seed_same_decisions():
    a, b = tir.Schedule(blur, seed=11), tir.Schedule(blur, seed=11)
    da = [a.trace.decisions[a.trace.insts[-1]] for _ in range(10) if a.sample_compute_location("B")]
    db = [b.trace.decisions[b.trace.insts[-1]] for _ in range(10) if b.sample_compute_location("B")]
    assert da == db


@T.prim_func
def dynamic_rows(a: T.handle, b: T.handle, n: T.int32):
    A = T.match_buffer(a, (n, 8))
    B = T.match_buffer(b, (n, 8))
    for i, j in T.grid(n, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + 1.0


def test_symbolic_loop_is_tiled_trivially(trace_replays):
    import numpy as np

    import minitvm
    from minitvm.driver.build_module import export_name

    sch = tir.Schedule(dynamic_rows, seed=1)
    i, _ = sch.get_loops("B")
    factors = sch.sample_perfect_tile(i, n=3)
    assert factors[0] is None and [sch.get(f) for f in factors[1:]] == [1, 1]
    sch.split(i, factors=factors)
    trace_replays(sch, dynamic_rows)
    gv = sch.mod.get_global_vars()[0]
    a = np.random.default_rng(0).standard_normal((5, 8)).astype("float32")
    b = np.zeros((5, 8), "float32")
    minitvm.build(sch.mod, target="llvm")[export_name(gv.name_hint, sch.mod[gv])](a, b, 5)
    np.testing.assert_allclose(b, a + 1, rtol=1e-6)
