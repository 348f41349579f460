"""Schedules TVM refuses are refused here too, with a ScheduleError naming the block/loop and why.

Each case mirrors one of TVM's ``pytest.raises(ScheduleError)`` tests (named in the comment),
written with its own small functions.  A refused primitive leaves the schedule unchanged.
"""

import pytest

from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T


@T.prim_func
def col_sum_declared_spatial(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8,), "float32")):
    # an accumulation over i whose block says both axes are spatial ("SS"): iterations of i race
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vj] = B[vj] + A[vi, vj]


@T.prim_func
def row_sum(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16,), "float32")):
    for i, k in T.grid(16, 32):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def row_sum_indexed_by_k(A: T.Buffer((16, 32), "float32"), B: T.Buffer((32,), "float32")):
    for i, k in T.grid(16, 32):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vk] = T.float32(0)
            B[vk] = B[vk] + A[vi, vk]


@T.prim_func
def row_sum_square_index(A: T.Buffer((16, 64), "float32"), B: T.Buffer((16,), "float32")):
    for i, k in T.grid(16, 8):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            vk = T.axis.reduce(64, k * k)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def row_sum_init_one(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16,), "float32")):
    for i, k in T.grid(16, 32):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(1)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def row_sum_parallel_k(A: T.Buffer((16, 32), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        for k in T.parallel(32):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def square_transposed_store(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
    for i, j, k in T.grid(8, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vj, vi] = C[vj, vi] + A[vi, vk] * A[vk, vj]


@T.prim_func
def prefix_in_place(A: T.Buffer((16,), "float32")):
    for i in range(15):
        with T.block("scan"):
            A[i + 1] = A[i + 1] + A[i]


@T.prim_func
def two_stage(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32), "float32")
    for i, j in T.grid(32, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
    for i, j in T.grid(32, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] * T.float32(2)


@T.prim_func
def both_outputs(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32"), C: T.Buffer((32,), "float32")):
    for i in range(32):
        with T.block("B"):
            vi = T.axis.spatial(32, i)
            B[vi] = A[vi] + T.float32(1)
    for i in range(32):
        with T.block("C"):
            vi = T.axis.spatial(32, i)
            C[vi] = B[vi] * T.float32(2)


@T.prim_func
def halves_then_copy(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32), "float32")
    for i in range(32):
        for j in range(16):
            with T.block("B_left"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj]
        for j in range(16):
            with T.block("B_right"):
                vi = T.axis.spatial(32, i)
                vj = T.axis.spatial(32, j + 16)
                B[vi, vj] = A[vi, vj]
    for i, j in T.grid(32, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj]


@T.prim_func
def nested_consumer(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32), "float32")
    for i, j in T.grid(32, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
    for io in range(4):
        with T.block("C_outer"):
            vio = T.axis.spatial(4, io)
            for ii, j in T.grid(8, 32):
                with T.block("C_inner"):
                    vi = T.axis.spatial(32, vio * 8 + ii)
                    vj = T.axis.spatial(32, j)
                    C[vi, vj] = B[vi, vj]


@T.prim_func
def view_consumer(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32), "float32")
    for i, j in T.grid(32, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
    for i, j in T.grid(32, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            Bv = T.match_buffer(B[vi, vj], (1,))
            C[vi, vj] = Bv[0]


@T.prim_func
def pointer_consumer(A: T.Buffer((32,), "float32"), C: T.Buffer((32,), "float32")):
    B = T.alloc_buffer((32,), "float32")
    for i in range(32):
        with T.block("B"):
            vi = T.axis.spatial(32, i)
            B[vi] = A[vi] + T.float32(1)
    for i in range(32):
        with T.block("C"):
            vi = T.axis.spatial(32, i)
            T.reads(B[0:32])
            T.writes(C[vi])
            T.evaluate(T.call_extern("int32", "touch", B.data))  # B's memory escapes to a callee
            C[vi] = B[vi]


@T.prim_func
def two_writers(A: T.Buffer((32,), "float32"), C: T.Buffer((32,), "float32")):
    B = T.alloc_buffer((32,), "float32")
    for i in range(32):
        with T.block("B0"):
            vi = T.axis.spatial(32, i)
            B[vi] = A[vi]
    for i in range(32):
        with T.block("B1"):
            vi = T.axis.spatial(32, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(32):
        with T.block("C"):
            vi = T.axis.spatial(32, i)
            C[vi] = B[vi]


@T.prim_func
def scaled_index(A: T.Buffer((8, 128), "float32"), B: T.Buffer((8, 128), "float32")):
    for i, j in T.grid(8, 8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            vj = T.axis.spatial(128, j * 16)
            B[vi, vj] = A[vi, vj]


@T.prim_func
def square_binding(A: T.Buffer((40, 4), "float32"), B: T.Buffer((40, 4), "float32")):
    for a, b, c in T.grid(6, 4, 4):
        with T.block("B"):
            vi = T.axis.spatial(40, a * a + b)
            vj = T.axis.spatial(4, c)
            B[vi, vj] = A[vi, vj]


@T.prim_func
def triangle(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i in range(16):
        for j in range(i):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj]


@T.prim_func
def guarded(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("B"):
            T.where(i * 16 + j < 100)
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj]


@T.prim_func
def copy_2d(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj]


def _with_opaque_iterator(func):
    """``func`` with its block's second iterator made opaque (neither spatial nor reduction)."""
    from minitvm.ir import replace
    from minitvm.tir.schedule.tree import block_realizes, replace_stmt

    realize = next(r for r, _ in block_realizes(func.body) if r.block.name_hint == "B")
    ivs = list(realize.block.iter_vars)
    ivs[1] = replace(ivs[1], iter_type="opaque")
    return func.with_body(replace_stmt(func.body, realize.block, replace(realize.block, iter_vars=tuple(ivs))))


opaque_axis = _with_opaque_iterator(copy_2d)


@T.prim_func
def annotated_inner(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i in range(16):
        for j in T.serial(16, annotations={"note": 1}):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj]


@T.prim_func
def thread_bound_inner(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i in range(16):
        for j in T.thread_binding(16, thread="threadIdx.x"):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj]


# (TVM test it mirrors, function, steps, words the message must contain)
CASES = [
    # test_tir_schedule_for_kind.py
    ("test_parallel_not_compact_data_flow", row_sum_indexed_by_k,
     lambda s: s.parallel(s.get_loops("B")[0]), ["loop i", "block B", "compact data flow"]),
    ("test_parallel_not_quasi_affine", row_sum_square_index,
     lambda s: s.parallel(s.get_loops("B")[0]), ["block B", "not quasi-affine"]),
    ("test_vectorize_opaque_block", prefix_in_place,
     lambda s: s.vectorize(s.get_loops("scan")[0]), ["block scan", "reads A, which it also writes"]),
    ("test_bind_not_cross_thread_reduction", row_sum,
     lambda s: s.bind(s.get_loops("B")[1], "blockIdx.x"), ["loop k", "reduction iterator vk"]),
    ("(brief) a reduction declared spatial", col_sum_declared_spatial,
     lambda s: s.parallel(s.get_loops("B")[0]), ["block B", "reads B, which it also writes"]),
    ("(TVM order) parallel after decompose_reduction", row_sum,
     lambda s: (s.decompose_reduction("B", s.get_loops("B")[1]), s.parallel(s.get_loops("B_update")[0])),
     ["loop i", "no T.init"]),
    # test_tir_schedule_compute_at.py
    ("test_fail_subtree_complete_block", halves_then_copy,
     lambda s: s.compute_at("B_left", s.get_loops("C")[0]), ["block B_left", "not the only writer of B"]),
    ("test_fail_not_in_same_scope", nested_consumer,
     lambda s: s.compute_at("B", s.get_loops("C_inner")[0]), ["same block scope"]),
    ("test_fail_loop_is_ancestor_of_block", two_stage,
     lambda s: s.compute_at("B", s.get_loops("B")[0]), ["loop i is an ancestor of block B"]),
    ("test_fail_output_block", both_outputs,
     lambda s: s.compute_at("C", s.get_loops("B")[0]), ["block C is an output block"]),
    # test_tir_schedule_compute_inline.py
    ("test_buffer_matched", view_consumer, lambda s: s.compute_inline("B"), ["block C", "T.match_buffer"]),
    ("test_opaque_access_load", pointer_consumer, lambda s: s.compute_inline("B"),
     ["block C accesses B opaquely"]),
    ("test_output_block (reverse_compute_inline)", both_outputs,
     lambda s: s.reverse_compute_inline("C"), ["producer B writes B, a parameter"]),
    ("test_output_block (compute_inline)", both_outputs, lambda s: s.compute_inline("B"),
     ["its output B is a parameter"]),
    # test_tir_schedule_cache_read_write.py
    ("test_cache_read_fail_invalid_storage_scope", two_stage,
     lambda s: s.cache_read("C", 0, "scratchpad"), ["'scratchpad' is not a storage scope"]),
    ("test_cache_write_fail_invalid_storage_scope", two_stage,
     lambda s: s.cache_write("B", 0, "scratchpad"), ["'scratchpad' is not a storage scope"]),
    ("test_cache_read_fail_multi_producer", two_writers,
     lambda s: s.cache_read("C", 0, "local"), ["2 blocks write it (B0, B1)"]),
    # test_tir_schedule_reorder.py
    ("test_reorder_fail_not_affine_bindings", scaled_index,
     lambda s: s.reorder(*reversed(s.get_loops("B"))), ["block B", "affine binding"]),
    ("test_reorder_with_partial_affineness", square_binding,
     lambda s: s.reorder(s.get_loops("B")[0], s.get_loops("B")[2], s.get_loops("B")[1]), ["affine binding"]),
    ("test_reorder_fail_with_dependent_loops", triangle,
     lambda s: s.reorder(s.get_loops("B")[1], s.get_loops("B")[0]), ["range of loop j depends on loop i"]),
    ("test_reorder_with_predicate", guarded,
     lambda s: s.reorder(s.get_loops("B")[1], s.get_loops("B")[0]), ["padding guard"]),
    ("test_reorder_fail_with_wrong_block_var_type", opaque_axis,
     lambda s: s.reorder(s.get_loops("B")[1], s.get_loops("B")[0]), ["iterator vj", "neither data parallel"]),
    # test_tir_schedule_split_fuse.py
    ("test_fuse_split_fail_with_annotation (split)", annotated_inner,
     lambda s: s.split(s.get_loops("B")[1], factors=[None, 4]), ["loop j", "annotations"]),
    ("test_fuse_split_fail_with_annotation (fuse)", annotated_inner,
     lambda s: s.fuse(*s.get_loops("B")), ["loop j", "annotations"]),
    ("test_fuse_split_fail_with_thread_binding", thread_bound_inner,
     lambda s: s.split(s.get_loops("B")[1], factors=[None, 4]), ["loop j", "bound to thread threadIdx.x"]),
    # test_tir_schedule_rfactor.py
    ("test_reduction_rfactor_not_reduction_block2", row_sum_square_index,
     lambda s: s.rfactor(s.get_loops("B")[1], 0), ["not a reduction block", "not quasi-affine"]),
    ("test_reduction_rfactor_not_reduction_block3", row_sum_indexed_by_k,
     lambda s: s.rfactor(s.get_loops("B")[1], 0), ["reduction iterator vk indexes its output B"]),
    ("test_reduction_rfactor_not_same_buffer_access", square_transposed_store,
     lambda s: s.rfactor(s.get_loops("C")[2], 0), ["T.init of block C must store"]),
    ("test_reduction_rfactor_not_serial_loop", row_sum_parallel_k,
     lambda s: s.rfactor(s.get_loops("B")[1], 0), ["reduction loop k is parallel"]),
    ("test_reduction_rfactor_wrong_reduce_pattern1", row_sum_init_one,
     lambda s: s.rfactor(s.get_loops("B")[1], 0), ["not the identity 0"]),
]


@pytest.mark.parametrize("tvm_test, func, steps, words", CASES, ids=[c[0] for c in CASES])
def test_refused_as_tvm_refuses(tvm_test, func, steps, words):
    sch = tir.Schedule(func)
    with pytest.raises(tir.ScheduleError) as err:
        steps(sch)
    for w in words:
        assert w in str(err.value), f"{w!r} not in: {err.value}"


def test_a_refused_primitive_leaves_the_schedule_unchanged():
    sch = tir.Schedule(row_sum_indexed_by_k)
    before, n = sch.mod, len(sch.trace)
    i, _ = sch.get_loops("B")
    with pytest.raises(tir.ScheduleError):
        sch.parallel(i)
    assert sch.mod is before and len(sch.trace) == n + 2  # the two lookups stay, the refused step does not


def test_loop_kinds_before_decompose_reduction_still_work(same_numbers):
    sch = tir.Schedule(row_sum)
    i, k = sch.get_loops("B")
    sch.parallel(i)
    sch.decompose_reduction("B", k)
    assert_structural_equal(sch.mod, sch.mod)
    same_numbers(row_sum, sch.mod)


def test_bind_reduction_to_thread_x_is_a_cross_thread_reduction():
    sch = tir.Schedule(row_sum)
    _, k = sch.get_loops("B")
    sch.bind(k, "threadIdx.x")  # allowed: the threads of one block reduce together
    assert sch.get(k).thread_binding == "threadIdx.x"
