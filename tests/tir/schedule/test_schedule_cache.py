"""cache_read / cache_write placement, size and redirection, as TVM decides them."""

import numpy as np
import pytest

import minitvm
from minitvm import te, tir
from minitvm.driver.build_module import export_name
from minitvm.script import tir as T
from minitvm.testing.programs import softmax
from minitvm.transform import PassContext


def _names_in_order(stmt):
    names = []

    def visit(n):
        if isinstance(n, tir.Block):
            names.append(n.name_hint)
        return True

    tir.pre_order_visit(stmt, visit)
    return names


def _alloc(func, name):
    found = []
    tir.post_order_visit(func.body, lambda n: found.extend(
        b for b in n.alloc_buffers if b.name == name) if isinstance(n, tir.Block) else None)
    assert len(found) == 1, name
    return found[0]


@T.prim_func
def tiled_pipeline(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32"), D: T.Buffer((64,), "float32")):
    B = T.alloc_buffer((64,))
    for i in range(4):
        for j in range(16):
            with T.block("B"):
                vi = T.axis.spatial(64, i * 16 + j)
                B[vi] = A[vi] * T.float32(3)
        for j in range(16):
            with T.block("C"):
                vi = T.axis.spatial(64, i * 16 + j)
                C[vi] = B[vi] + T.float32(1)
    for i in range(64):
        with T.block("D"):
            vi = T.axis.spatial(64, i)
            D[vi] = B[vi] - T.float32(1)


def test_cache_read_goes_after_the_writer_inside_the_shared_loop(same_numbers, trace_replays):
    sch = tir.Schedule(tiled_pipeline)
    sch.cache_read("C", 0, "global")
    func = sch.mod["main"]
    # the copy runs per tile of loop i, between the producer and the first reader
    i_loop = func.body.block.body[0]
    assert [s.body.block.name_hint for s in i_loop.body.seq] == ["B", "B_global", "C"]
    copy = i_loop.body[1]
    assert copy.extent.value == 16
    # inside a loop the cache keeps the buffer's shape; both readers now use it
    assert [int(d) for d in _alloc(func, "B_global").shape] == [64]
    d_block = func.body.block.body[1].body.block
    assert d_block.reads[0].buffer.name == "B_global"
    same_numbers(tiled_pipeline, sch.mod)
    trace_replays(sch, tiled_pipeline)


def test_cache_read_for_chosen_consumers_only(same_numbers, trace_replays):
    sch = tir.Schedule(tiled_pipeline)
    sch.cache_read("C", 0, "global", consumer_blocks=["D"])
    func = sch.mod["main"]
    # D alone reads the cache, so the copy goes before D, at the top level, over all of B
    assert _names_in_order(func.body) == ["root", "B", "C", "B_global", "D"]
    c_block = func.body.block.body[0].body[1].body.block
    assert c_block.reads[0].buffer.name == "B"
    same_numbers(tiled_pipeline, sch.mod)
    trace_replays(sch, tiled_pipeline)


@T.prim_func
def tile_scope(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32))
    for io, jo in T.grid(4, 4):
        with T.block("tile"):
            ti, tj = T.axis.remap("SS", [io, jo])
            for x, y in T.grid(8, 8):
                with T.block("B"):
                    vi = T.axis.spatial(32, ti * 8 + x)
                    vj = T.axis.spatial(32, tj * 8 + y)
                    B[vi, vj] = A[vi, vj] + T.float32(2)
            for x, y in T.grid(8, 8):
                with T.block("C"):
                    vi = T.axis.spatial(32, ti * 8 + x)
                    vj = T.axis.spatial(32, tj * 8 + y)
                    C[vi, vj] = B[vi, vj] * B[vi, vj]


def test_cache_in_a_block_scope_is_compact(same_numbers):
    sch = tir.Schedule(tile_scope)
    sch.cache_read("C", 0, "local")
    func = sch.mod["main"]
    cache = _alloc(func, "B_local")
    assert [int(d) for d in cache.shape] == [8, 8]  # only the tile the scope writes
    text = func.script()
    assert "B_local[v0, v1] = B[ti * 8 + v0, tj * 8 + v1]" in text
    assert "C[vi, vj] = B_local[vi - ti * 8, vj - tj * 8] * B_local[vi - ti * 8, vj - tj * 8]" in text
    assert "T.where" not in text  # the scope's iterators (ti < 4) keep the copy inside B, as TVM sees
    same_numbers(tile_scope, sch.mod)
    a = np.random.default_rng(11).standard_normal((32, 32)).astype("float32")
    c = minitvm.nd.array(np.zeros((32, 32), "float32"))
    minitvm.build(sch.mod)["tile_scope"](minitvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), (a + 2) ** 2, rtol=1e-5)


def test_cache_write_copies_out_before_the_consumers(same_numbers, trace_replays):
    sch = tir.Schedule(tiled_pipeline)
    sch.cache_write("B", 0, "local")
    func = sch.mod["main"]
    i_loop = func.body.block.body[0]
    assert [s.body.block.name_hint for s in i_loop.body.seq] == ["B", "B_local", "C"]
    b_block = i_loop.body[0].body.block
    assert b_block.writes[0].buffer.name == "B_local"
    same_numbers(tiled_pipeline, sch.mod)
    trace_replays(sch, tiled_pipeline)


def test_cache_write_with_a_consumer_reading_the_cache(same_numbers):
    sch = tir.Schedule(tiled_pipeline)
    sch.cache_write("B", 0, "local", consumer_blocks=["C"])
    func = sch.mod["main"]
    # C reads the cache in the tile; the copy out only has to precede D, at the top level
    assert _names_in_order(func.body) == ["root", "B", "C", "B_local", "D"]
    c_block = func.body.block.body[0].body[1].body.block
    assert c_block.reads[0].buffer.name == "B_local"
    same_numbers(tiled_pipeline, sch.mod)


@T.prim_func
def guarded_tail(A: T.Buffer((60,), "float32"), C: T.Buffer((60,), "float32")):
    B = T.alloc_buffer((60,))
    for i, j in T.grid(8, 8):
        with T.block("B"):
            T.where(i * 8 + j < 60)
            vi = T.axis.spatial(60, i * 8 + j)
            B[vi] = A[vi] + T.float32(1)
    for i in range(60):
        with T.block("C"):
            vi = T.axis.spatial(60, i)
            C[vi] = B[vi] * T.float32(2)


def test_cache_of_a_guarded_writer_stays_inside_the_buffer(same_numbers):
    sch = tir.Schedule(guarded_tail)
    sch.cache_read("C", 0, "shared")
    assert [int(d) for d in _alloc(sch.mod["main"], "B_shared").shape] == [60]
    same_numbers(guarded_tail, sch.mod)


def test_cache_write_needs_the_single_writer():
    @T.prim_func
    def f(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        B = T.alloc_buffer((8,))
        for i in range(4):
            with T.block("B0"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi]
        for i in range(4):
            with T.block("B1"):
                vi = T.axis.spatial(8, i + 4)
                B[vi] = A[vi] * T.float32(2)
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = B[vi]

    sch = tir.Schedule(f)
    with pytest.raises(tir.ScheduleError, match=r"B must be written by a single block, but 2 blocks write it"):
        sch.cache_write("B0", 0, "local")


# -- a copy under the tail of a non-dividing split ------------------------------------------------


def _matmul_relu():
    """relu(A @ B) with A 6x9, B 9x5: splits by 2, 4, 6 leave a padded tail."""
    A = te.placeholder((6, 9), "float32", name="A")
    B = te.placeholder((9, 5), "float32", name="B")
    k = te.reduce_axis((0, 9), "k")
    C = te.compute((6, 5), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    relu = te.compute((6, 5), lambda i, j: tir.max(C[i, j], tir.const(0.0, "float32")), name="relu")
    return te.create_prim_func([A, B, relu])


def _bounds_checked_numbers_of_matmul_relu(mod):
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((6, 9)).astype("float32"), rng.standard_normal((9, 5)).astype("float32")
    _assert_bounds_checked_numbers(mod, [a, b], np.maximum(a.astype("float64") @ b, 0))


def _assert_bounds_checked_numbers(mod, inputs, expected):
    """Built with bounds checks on (the build proves or traps an access past a buffer's end),
    for LLVM and the interpreter: numpy's ``expected`` (the output first filled with NaN)."""
    gv = mod.get_global_vars()[0]
    for target in ("llvm", "python"):
        with PassContext(config={"tir.bounds_check": True}):
            lib = minitvm.build(mod, target=target)
        out = minitvm.nd.array(np.full(expected.shape, np.nan, "float32"))
        lib[export_name(gv.name_hint, mod[gv])](*(minitvm.nd.array(x) for x in inputs), out)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5, err_msg=target)


def _compute_at_relu_tile(loop, factors, at):
    def schedule(sch):
        tiles = sch.split(sch.get_loops("relu")[loop], factors)
        sch.compute_at("C", tiles[at])
        sch.cache_read("relu", 0, "local")
    return schedule


def _reverse_compute_at_c_tile(sch):
    outer, _ = sch.split(sch.get_loops("C")[0], [None, 4])
    sch.reverse_compute_at("relu", outer)
    sch.cache_write("C", 0, "local")


@pytest.mark.parametrize("schedule,guard", [
    # The schedule fuzzer's shortest case: the copy sits in the innermost loop of relu's
    # 5 -> 1 x 6 x 2 split, next to C (moved there by compute_at), and ran for j = 5 .. 11 too;
    # the build proved C_local[i, 11] out of bounds.  It now has the split's kind of guard.
    (_compute_at_relu_tile(1, [None, 6, 2], -1), "T.where(j_1 * 2 + j_2 + ax1 < 5)"),
    # at the outer loop of a 6 -> 2 x 4 split the copy covers a 4-row tile, rows 4 .. 7 in the
    # second: the guard keeps it to rows 4 and 5
    (_compute_at_relu_tile(0, [None, 4], 0), "T.where(i_0 * 4 + ax0 < 6)"),
    (_reverse_compute_at_c_tile, "T.where(i_0 * 4 + ax0 < 6)"),
    (_compute_at_relu_tile(0, [None, 3], 0), None),  # 6 = 2 x 3: no tail, no guard
], ids=["cache_read_innermost", "cache_read_tile", "cache_write_tile", "no_tail"])
def test_cache_under_the_tail_of_a_split_gets_the_split_guard(schedule, guard, trace_replays):
    func = _matmul_relu()
    sch = tir.Schedule(func)
    schedule(sch)
    copy = sch.mod.script().split('T.sblock("C_local")')[1].split("T.reads")[0]
    assert (guard in copy) if guard else "T.where" not in copy
    _bounds_checked_numbers_of_matmul_relu(sch.mod)
    trace_replays(sch, func)


# The other traces of `benchmarks/schedule_fuzz.py --count 5000` (seed 0) the build refused,
# as the fuzzer printed them (its step resolution included: the steps it refused are not in a
# trace); each leaves a cache copy unguarded under a non-dividing split.
FUZZ_TRACES = {
    "cache_write_under_a_split_of_C": """
b0 = sch.get_block(name="relu", func_name="main")
l1, l2 = sch.get_loops(block=b0)
b3 = sch.get_block(name="C", func_name="main")
l4, l5, l6 = sch.get_loops(block=b3)
sch.reverse_compute_at(block=b0, loop=l5, preserve_unit_loops=False, index=-1)
b7 = sch.get_block(name="relu", func_name="main")
l8, l9 = sch.get_loops(block=b7)
sch.parallel(loop=l9)
b10 = sch.get_block(name="C", func_name="main")
l11, l12, l13 = sch.get_loops(block=b10)
l14, l15 = sch.split(loop=l11, factors=[None, 4], preserve_unit_iters=True, disable_predication=False)
b16 = sch.get_block(name="C", func_name="main")
l17, l18, l19, l20 = sch.get_loops(block=b16)
sch.vectorize(loop=l19)
b21 = sch.get_block(name="C", func_name="main")
l22, l23, l24, l25 = sch.get_loops(block=b21)
b26 = sch.cache_write(block=b21, write_buffer_index=0, storage_scope="global")
""",
    "cache_read_after_compute_at_under_a_split": """
b0 = sch.get_block(name="relu", func_name="main")
l1, l2 = sch.get_loops(block=b0)
l3, l4 = sch.split(loop=l1, factors=[4, None], preserve_unit_iters=True, disable_predication=False)
b5 = sch.get_block(name="C", func_name="main")
b9 = sch.get_block(name="relu", func_name="main")
l10, l11, l12 = sch.get_loops(block=b9)
sch.compute_at(block=b5, loop=l12, preserve_unit_loops=False, index=-1)
b18 = sch.get_block(name="relu", func_name="main")
b22 = sch.cache_read(block=b18, read_buffer_index=0, storage_scope="global")
""",
    "softmax_second_cache_read_under_a_split": """
b0 = sch.get_block(name="max", func_name="main")
b3 = sch.cache_read(block=b0, read_buffer_index=0, storage_scope="global")
b4 = sch.get_block(name="max", func_name="main")
b7 = sch.get_block(name="A_global", func_name="main")
l8, l9 = sch.get_loops(block=b7)
sch.reverse_compute_at(block=b4, loop=l9, preserve_unit_loops=False, index=-1)
b10 = sch.get_block(name="max", func_name="main")
l11, l12 = sch.get_loops(block=b10)
l13, l14, l15 = sch.split(loop=l11, factors=[None, 8, 2], preserve_unit_iters=True, disable_predication=False)
b16 = sch.get_block(name="sum", func_name="main")
b19 = sch.cache_read(block=b16, read_buffer_index=0, storage_scope="global")
""",
}


def _softmax_numbers(mod):
    a = np.random.default_rng(3).standard_normal((4, 16)).astype("float32")
    e = np.exp(a.astype("float64") - a.max(axis=1, keepdims=True))
    _assert_bounds_checked_numbers(mod, [a], e / e.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("name", list(FUZZ_TRACES))
def test_schedule_fuzz_traces_with_a_cache_under_a_split_build_and_compute(name):
    softmax_case = name.startswith("softmax")
    sch = tir.Schedule(softmax if softmax_case else _matmul_relu())
    exec(FUZZ_TRACES[name], {}, {"sch": sch})
    (_softmax_numbers if softmax_case else _bounds_checked_numbers_of_matmul_relu)(sch.mod)
