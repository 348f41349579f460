"""TightenGuardedLoops: a loop's guard on its own variable becomes its extent, and a serial loop
whose vectorized guards fail only at its end is split there -- the same numbers, no guard left."""

import numpy as np

import minitvm
from minitvm import te, tir
from minitvm.ir import IRModule
from minitvm.target.interpreter import run_prim_func
from minitvm.tir import post_order_visit
from minitvm.tir.transform import TightenGuardedLoops, lowered
from minitvm.tir.transform.default_schedule import apply_default_schedule


def _guards(func) -> list:
    found: list = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, tir.IfThenElse) else None)
    return found


def _loops(func) -> list:
    found: list = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, tir.For) else None)
    return found


def _guarded_copy():
    """``for i in T.unroll(4): for j in T.vectorized(16): if i + 6 < 9 and j + 32 < 37 and n > 0:
    B[i * 16 + j] = A[...] + 1`` -- the partial tile of a peeled loop, written directly."""
    a = tir.decl_buffer((64,), "float32", name="A")
    b = tir.decl_buffer((64,), "float32", name="B")
    n = tir.Var("n", "int32")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    cond = tir.all(i + 6 < 9, j + 32 < 37, n > 0)
    store = tir.BufferStore(b, tir.BufferLoad(a, [i * 16 + j]) + tir.const(1.0, "float32"), [i * 16 + j])
    row = tir.For(j, 0, 16, tir.ForKind.VECTORIZED, tir.IfThenElse(cond, store))
    body = tir.For(i, 0, 4, tir.ForKind.UNROLLED, row)
    pa, pb = tir.Var("pa", "handle"), tir.Var("pb", "handle")
    return tir.PrimFunc([pa, pb, n], buffer_map={pa: a, pb: b}, body=body)


def test_a_guard_on_the_loop_variables_becomes_their_extents_and_the_rest_is_hoisted():
    func = _guarded_copy()
    out = TightenGuardedLoops()(IRModule({"main": func}))["main"]
    loops = {loop.loop_var.name: int(loop.extent.value) for loop in _loops(out)}
    assert loops == {"i": 3, "j": 5}, out.script()
    guards = _guards(out)
    assert len(guards) == 1 and isinstance(out.body, tir.IfThenElse), out.script()  # n > 0, around both loops
    rng = np.random.default_rng(0)
    a = rng.standard_normal(64).astype("float32")
    for n in (1, 0):
        want, got = np.zeros(64, "float32"), np.zeros(64, "float32")
        run_prim_func(func, [a, want, n])
        run_prim_func(out, [a, got, n])
        np.testing.assert_array_equal(got, want)
        assert np.count_nonzero(got) == (15 if n else 0)  # rows 0..2, columns 0..4


def test_the_scores_matmul_of_vit_lowers_without_a_guard():
    """ViT's Q.K^T at 3 heads (197 x 64 by 64 x 197): the default schedule's tiles peel the last
    rows and columns; lowered, the partial tiles loop over what they cover -- 5 of the 16
    columns, 5 of the 6 rows -- and the partial rows' loop over column tiles is split before
    its partial tile: no guard is left (a guard in a vectorized loop made it scalar); numpy's
    result."""
    heads, rows, k = 3, 197, 64
    x = te.placeholder((heads, rows, k), "float32", name="x")
    y = te.placeholder((heads, k, rows), "float32", name="y")
    r = te.reduce_axis((0, k), name="r")
    out = te.compute((heads, rows, rows), lambda h, i, j: te.sum(x[h, i, r] * y[h, r, j], axis=r), name="C")
    with minitvm.tir.vector_unit.AVX2:
        sched = apply_default_schedule(te.create_prim_func([x, y, out]))
    low = lowered(sched.with_attr("global_symbol", "main"))
    assert _guards(low) == [], low.script()
    vector_extents = sorted({int(f.extent.value) for f in _loops(low) if f.kind == tir.ForKind.VECTORIZED})
    assert vector_extents == [5, 16], low.script()
    lib = minitvm.build(sched.with_attr("global_symbol", "main"))
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((heads, rows, k)).astype("float32")
    yv = rng.standard_normal((heads, k, rows)).astype("float32")
    result = minitvm.nd.array(np.full((heads, rows, rows), np.nan, "float32"))
    lib["main"](minitvm.nd.array(xv), minitvm.nd.array(yv), result)
    np.testing.assert_allclose(result.numpy(), xv @ yv, rtol=1e-4, atol=1e-4)


def test_a_serial_loop_over_groups_of_unrolled_rows_splits_where_the_last_group_is_partial():
    """Row sums of 19 rows, 4 at a time: ``for g in range(5): for k: for r in T.unroll(4): if
    g * 4 + r < 19`` -- a branch in every unrolled copy.  Lowered, the group loop splits at 4 (the
    guard always holds before), and the last group's unrolled loop runs its 3 rows, unguarded."""
    x = te.placeholder((19, 40), "float32", name="x")
    k = te.reduce_axis((0, 40), name="k")
    s = te.compute((19,), lambda i: te.sum(x[i, k], axis=k), name="s")
    sch = tir.Schedule(te.create_prim_func([x, s]))
    i, kk = sch.get_loops("s")
    group, row = sch.split(i, [None, 4])
    sch.reorder(group, kk, row)
    sch.unroll(row)
    sch.decompose_reduction("s", kk)
    out = lowered(sch.mod)["main"]  # (the lowering pipeline runs TightenGuardedLoops)
    assert not _guards(out), out.script()
    extents = sorted(int(loop.extent.value) for loop in _loops(out) if loop.kind == tir.ForKind.UNROLLED)
    assert extents == [3, 3, 4, 4], out.script()  # the inits' and the sums' unrolled rows, whole and last
    a = np.random.default_rng(1).standard_normal((19, 40)).astype("float32")
    got = np.zeros(19, "float32")
    run_prim_func(out, [a, got])
    np.testing.assert_allclose(got, a.sum(1), rtol=1e-5)


def test_an_unrolled_loop_over_vectors_is_split_before_its_partial_vector():
    """``for i in T.unroll(4): for j in T.vectorized(16): if i * 16 + j < 56`` (a row of 56 in
    AVX-512 registers, :func:`schedule_depthwise_conv2d`) -> three whole vectors unrolled and one
    of 8, no guard (a guarded vector was made scalar, and LLVM rebuilt it with gathers and kept the
    accumulators on the stack); the same numbers."""
    a = tir.decl_buffer((64,), "float32", name="A")
    b = tir.decl_buffer((64,), "float32", name="B")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    store = tir.BufferStore(b, tir.BufferLoad(a, [i * 16 + j]) * tir.const(2.0, "float32"), [i * 16 + j])
    row = tir.For(j, 0, 16, tir.ForKind.VECTORIZED, tir.IfThenElse(i * 16 + j < 56, store))
    pa, pb = tir.Var("pa", "handle"), tir.Var("pb", "handle")
    func = tir.PrimFunc([pa, pb], buffer_map={pa: a, pb: b}, body=tir.For(i, 0, 4, tir.ForKind.UNROLLED, row))
    out = TightenGuardedLoops()(IRModule({"main": func}))["main"]
    assert _guards(out) == [], out.script()
    loops = sorted((str(loop.kind), int(loop.extent.value)) for loop in _loops(out))
    assert loops == [("unrolled", 3), ("vectorized", 8), ("vectorized", 16)], out.script()
    a_np = np.random.default_rng(1).standard_normal(64).astype("float32")
    want, got = np.zeros(64, "float32"), np.zeros(64, "float32")
    run_prim_func(func, [a_np, want])
    run_prim_func(out, [a_np, got])
    np.testing.assert_array_equal(got, want)
    assert np.count_nonzero(got) == 56
