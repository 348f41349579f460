"""Dense layers with a symbolic row count (a prompt of any length): the default schedule tiles
the rows as for a static count -- whole register tiles, then a guarded tail -- instead of one
row at a time, and the result matches numpy for row counts that are not a multiple of the tile."""

from __future__ import annotations

import json

import numpy as np
import pytest

import minitvm
from minitvm import relax, te, tir, topi
from minitvm.arith import Analyzer
from minitvm.testing.nn_models import linear_module
from minitvm.tir.transform.default_schedule import apply_default_schedule


def _dense_relu(k: int, n_out: int):
    """``relu(x @ w + b)`` over ``n`` rows, ``n`` symbolic."""
    n = tir.Var("n", "int64")
    x, w = te.placeholder((n, k), "float32", name="x"), te.placeholder((k, n_out), "float32", name="w")
    b = te.placeholder((n_out,), "float32", name="b")
    return te.create_prim_func([x, w, b, topi.nn.relu(topi.add(topi.nn.matmul(x, w), b))])


def test_symbolic_rows_are_tiled_with_a_guarded_tail():
    sched = apply_default_schedule(_dense_relu(64, 48))
    text = sched.script()
    assert sched.attrs.get("tir.is_scheduled") and "_partition" in text, text
    main, tail = text.split("_partition", 2)[1:]
    # whole tiles: rows unrolled, no guard in the k loop; the tail keeps the split's guard
    update = main.split('"T_matmul_i0_00_update"')[1].split("T.sblock")[0]
    assert "T.unroll" in main and "T.where" not in update, main
    assert "T.where(i0_01 *" in tail, tail
    lib = minitvm.build(sched.with_attr("global_symbol", "main"))
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((64, 48)).astype("float32"), rng.standard_normal(48).astype("float32")
    for rows in (0, 1, 7, 9, 129):  # 0: the pieces are empty, not a tile before row 0
        x = rng.standard_normal((rows, 64)).astype("float32")
        out = minitvm.nd.array(np.full((rows, 48), np.nan, "float32"))
        lib["main"](minitvm.nd.array(x), minitvm.nd.array(w), minitvm.nd.array(b), out)
        np.testing.assert_allclose(out.numpy(), np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("k, n_out, act", [(64, 96, None), (256, 512, "silu")])
def test_compiled_linear_with_symbolic_rows_matches_numpy(k, n_out, act):
    """(256 -> 512: the whole tiles run on threads; with 0 or 1 rows their loop is empty.)"""
    vm = relax.VirtualMachine(minitvm.compile(linear_module(tir.Var("n", "int64"), k, n_out, act)), minitvm.cpu())
    rng = np.random.default_rng(1)
    w, b = rng.standard_normal((n_out, k)).astype("float32"), rng.standard_normal(n_out).astype("float32")
    for rows in (0, 1, 7, 129):
        x = rng.standard_normal((rows, k)).astype("float32")
        want = x @ w.T + b
        if act == "silu":
            want = want / (1 + np.exp(-want))
        got = vm["main"](*(minitvm.nd.array(a) for a in (x, w, b))).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_batched_matmul_without_epilogue_tiles_symbolic_rows():
    """A bias-free linear of a (1, n, K) prompt (a Llama projection): whole tiles through a local
    accumulator, the tail rows accumulated in place; numpy's result at 1, 7 and 129 rows."""
    n = tir.Var("n", "int64")
    x, w = te.placeholder((1, n, 32), "float32", name="x"), te.placeholder((32, 64), "float32", name="w")
    sched = apply_default_schedule(te.create_prim_func([x, w, topi.nn.matmul(x, w)]))
    text = sched.script()
    assert "_partition" in text and "T.unroll" in text and 'scope="local"' in text, text
    lib = minitvm.build(sched.with_attr("global_symbol", "main"))
    rng = np.random.default_rng(2)
    wv = rng.standard_normal((32, 64)).astype("float32")
    for rows in (1, 7, 129):
        xv = rng.standard_normal((1, rows, 32)).astype("float32")
        out = minitvm.nd.array(np.full((1, rows, 64), np.nan, "float32"))
        lib["main"](minitvm.nd.array(xv), minitvm.nd.array(wv), out)
        np.testing.assert_allclose(out.numpy(), xv @ wv, rtol=1e-4, atol=1e-4)


def test_symbolic_partition_takes_constant_lengths_and_its_trace_replays():
    """The tail is peeled with ``[None, 1]`` (constants only, as TVM's factors), so the default
    schedule's trace survives JSON and replays on a fresh copy of the function."""
    sch = tir.Schedule(_dense_relu(16, 16))
    i = sch.get_loops(sch.get_block("T_matmul"))[0]
    with pytest.raises(tir.schedule.ScheduleError, match="one None"):
        sch.loop_partition(i, [3, 4])
    from minitvm.ir import IRModule
    from minitvm.tir.schedule import Trace
    from minitvm.tir.transform.default_schedule import schedule_matmul_like

    func = _dense_relu(64, 48)
    sch = tir.Schedule(IRModule({"main": func}))
    assert schedule_matmul_like(sch)
    replay = tir.Schedule(IRModule({"main": func}))
    Trace.apply_json_to_schedule(json.loads(json.dumps(sch.trace.as_json())), replay)
    minitvm.ir.assert_structural_equal(replay.mod, sch.mod)


def test_min_max_absorption():
    n = tir.Var("n", "int64")
    ana = Analyzer()
    one, zero = tir.const(1, "int64"), tir.const(0, "int64")
    assert minitvm.ir.structural_equal(ana.simplify(tir.min(tir.max(n - one, zero), n - one)), n - one)
    assert ana.simplify(tir.max(n, tir.min(n, zero))) is n
    eight = tir.const(8, "int64")
    assert ana.can_prove(tir.floordiv(n, eight) * eight - one < n)  # whole tiles stay inside n rows


@pytest.mark.parametrize("batch, rows, k, n_out", [(None, 67, 256, 256), (3, 37, 48, 32)])
def test_static_prime_rows_keep_row_tiles_and_the_fused_epilogue(batch, rows, k, n_out):
    """A static row count without a divisor to tile by (ViT's 197 tokens; here 67 and 37):
    whole multi-row tiles, then the peeled partial one -- with the bias + tanh epilogue fused
    in both pieces, not one-row tiles -- packed (2-D, large) and batched (3-D); numpy's result."""
    shape = (rows, k) if batch is None else (batch, rows, k)
    x, w = te.placeholder(shape, "float32", name="x"), te.placeholder((k, n_out), "float32", name="w")
    b = te.placeholder((n_out,), "float32", name="b")
    sched = apply_default_schedule(te.create_prim_func([x, w, b, topi.tanh(topi.add(topi.nn.matmul(x, w), b))]))
    text = sched.script()
    assert "_partition" in text and "T.unroll" in text and text.count('T.sblock("compute') == 2, text
    lib = minitvm.build(sched.with_attr("global_symbol", "main"))
    rng = np.random.default_rng(3)
    xv, wv = rng.standard_normal(shape).astype("float32"), rng.standard_normal((k, n_out)).astype("float32")
    bv = rng.standard_normal(n_out).astype("float32")
    out = minitvm.nd.array(np.full(shape[:-1] + (n_out,), np.nan, "float32"))
    lib["main"](minitvm.nd.array(xv), minitvm.nd.array(wv), minitvm.nd.array(bv), out)
    np.testing.assert_allclose(out.numpy(), np.tanh(xv @ wv + bv), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("unit_name, cols", [("avx2", 197), ("avx512", 197), ("avx2", 100), ("avx512", 487)])
@pytest.mark.parametrize("epilogue", [False, True])
def test_columns_without_a_vector_divisor_take_two_vector_tiles_and_a_peeled_one(unit_name, cols, epilogue):
    """ViT's attention scores Q.K^T (3 heads, 197 x 64 by 64 x 197): 197 columns have no divisor
    to tile by (100: only 4).  1-wide tiles ran at 2.3 GFLOP/s, a whole row spills on AVX2 (25
    ymm) and keeps one row per tile on AVX-512 -- so tiles of two vectors, the last, partial one
    of each row of tiles peeled into a piece of its own (as are the rows), epilogue included;
    numpy's result on both units."""
    from minitvm.tir.vector_unit import AVX2, AVX512

    unit = {"avx2": AVX2, "avx512": AVX512}[unit_name]
    heads, rows, k = 3, 37, 24
    x = te.placeholder((heads, rows, k), "float32", name="x")
    y = te.placeholder((heads, k, cols), "float32", name="y")
    r = te.reduce_axis((0, k), name="r")
    out = te.compute((heads, rows, cols), lambda h, i, j: te.sum(x[h, i, r] * y[h, r, j], axis=r), name="C")
    b = te.placeholder((cols,), "float32", name="b")
    args = [x, y, b, topi.tanh(topi.add(out, b))] if epilogue else [x, y, out]
    with unit:
        sched = apply_default_schedule(te.create_prim_func(args))
    text = sched.script()
    assert f"T.vectorized({2 * unit.lanes})" in text and f"T.serial({cols // (2 * unit.lanes)}, " in text, text
    assert "_j_00_partition" in text and "_j_01_partition" in text, text
    if not epilogue:  # the partial tile's write-back (an epilogue's keeps the tile's width and a guard)
        assert f"T.vectorized({cols % (2 * unit.lanes)})" in text, text
    lib = minitvm.build(sched.with_attr("global_symbol", "main"))
    rng = np.random.default_rng(7)
    xv = rng.standard_normal((heads, rows, k)).astype("float32")
    yv = rng.standard_normal((heads, k, cols)).astype("float32")
    bv = rng.standard_normal(cols).astype("float32")
    want = np.tanh(xv @ yv + bv) if epilogue else xv @ yv
    result = minitvm.nd.array(np.full((heads, rows, cols), np.nan, "float32"))
    inputs = [xv, yv, bv] if epilogue else [xv, yv]
    lib["main"](*[minitvm.nd.array(a) for a in inputs], result)
    np.testing.assert_allclose(result.numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("unit_name, tile, peeled", [("avx2", (6, 16), True), ("avx512", (12, 32), True)])
def test_a_dense_layer_with_bias_takes_the_rows_the_registers_hold(unit_name, tile, peeled):
    """BERT's dense + bias at 128 tokens (here 128 x 96 @ 96 x 256): AVX2 takes 6 x 16 tiles (12
    ymm accumulators, a row of B and a broadcast beside them; 5-15% faster than the 4 x 16 that
    divide 128) and peels the last 2 rows, bias included; AVX-512 12 x 32 tiles (24 zmm
    accumulators), the last 8 rows peeled.  numpy's result on both units."""
    import re

    from minitvm.tir.vector_unit import AVX2, AVX512

    unit = {"avx2": AVX2, "avx512": AVX512}[unit_name]
    x, w = te.placeholder((128, 96), "float32", name="x"), te.placeholder((96, 256), "float32", name="w")
    b = te.placeholder((256,), "float32", name="b")
    with unit:
        sched = apply_default_schedule(te.create_prim_func([x, w, b, topi.add(topi.nn.matmul(x, w), b)]))
    text = sched.script()
    rows = re.search(r"for \w+ in T.unroll\((?:T.int64\()?(\d+)", text)
    assert rows and int(rows.group(1)) == tile[0] and f"T.vectorized({tile[1]})" in text, text
    assert ("_partition" in text) == peeled, text
    lib = minitvm.build(sched.with_attr("global_symbol", "main"))
    rng = np.random.default_rng(9)
    xv, wv = rng.standard_normal((128, 96)).astype("float32"), rng.standard_normal((96, 256)).astype("float32")
    bv = rng.standard_normal(256).astype("float32")
    out = minitvm.nd.array(np.full((128, 256), np.nan, "float32"))
    lib["main"](minitvm.nd.array(xv), minitvm.nd.array(wv), minitvm.nd.array(bv), out)
    np.testing.assert_allclose(out.numpy(), xv @ wv + bv, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("unit_name, rows, row_threads", [("avx512", 520, True), ("avx512", 200, False),
                                                          ("avx2", 520, False)])
def test_a_dense_layer_of_many_rows_with_a_prepacked_weight_runs_its_row_tiles_on_threads(unit_name, rows,
                                                                                         row_threads):
    """A weight packed ahead of the calls (``layout_free_buffers``) and 520 rows, on AVX-512: the
    row tiles are the parallel loop, every thread reading all of the weight's panels -- no
    blocks of columns (each of which read all of A again); 200 rows, or AVX2, keep the blocks.
    numpy's result either way."""
    import re

    from minitvm.tir.transform import default_schedule as ds
    from minitvm.tir.vector_unit import AVX2, AVX512

    unit = {"avx2": AVX2, "avx512": AVX512}[unit_name]
    x, w = te.placeholder((rows, 64), "float32", name="x"), te.placeholder((64, 256), "float32", name="w")
    b = te.placeholder((256,), "float32", name="b")
    func = te.create_prim_func([x, w, b, topi.add(topi.nn.matmul(x, w), b)]).with_attr("layout_free_buffers", [1])
    with unit, pytest.MonkeyPatch.context() as mp:
        mp.setattr(ds, "parallel_threads", lambda: 2)
        sched = apply_default_schedule(func)
    text = sched.script()
    assert ds.LAYOUT_REWRITE_PREPROC in text, text  # the packing copy is the prepacked weight's
    parallel = re.findall(r"for (\w+) in T.parallel", text)
    assert len(parallel) == 1 and parallel[0].startswith("i0") == row_threads, text  # i0: rows, i1: columns
    lib = minitvm.build(sched.with_attr("global_symbol", "main"))
    rng = np.random.default_rng(5)
    xv, wv, bv = (rng.standard_normal(s).astype("float32") for s in ((rows, 64), (64, 256), (256,)))
    out = minitvm.nd.array(np.full((rows, 256), np.nan, "float32"))
    lib["main"](minitvm.nd.array(xv), minitvm.nd.array(wv), minitvm.nd.array(bv), out)
    np.testing.assert_allclose(out.numpy(), xv @ wv + bv, rtol=1e-4, atol=1e-4)
