"""cache_read, cache_write, transform_layout, rfactor, blockize and tensorize."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.script import tir as T


@T.prim_func
def matmul(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    for i, j, k in T.grid(32, 32, 32):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def row_sum(A: T.Buffer((8, 64), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 64):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


def test_cache_write_then_reverse_compute_at(same_numbers):
    sch = tir.Schedule(matmul)
    block = sch.get_block("C")
    local = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.reorder(i0, j, i1, k)
    sch.reverse_compute_at(local, j)
    func = sch.mod["main"]
    assert func.body.block.alloc_buffers[0].scope == "local"
    assert [sch.get(lp).extent.value for lp in sch.get_loops(local)] == [8, 32, 4]
    same_numbers(matmul, sch.mod)
    assert_structural_equal(from_source(sch.mod.script()), sch.mod)


def test_cache_read_then_compute_at(same_numbers):
    sch = tir.Schedule(matmul)
    block = sch.get_block("C")
    shared = sch.cache_read(block, 1, "global")
    i, j, k = sch.get_loops(block)
    sch.compute_at(shared, i)
    assert shared.name == "B_global"
    assert [sch.get(lp).extent.value for lp in sch.get_loops(shared)] == [32, 32, 32]
    same_numbers(matmul, sch.mod)


def test_transform_layout_packs_a_buffer(same_numbers):
    sch = tir.Schedule(matmul)
    block = sch.get_block("C")
    packed = sch.cache_read(block, 1, "global")
    sch.transform_layout(block, ("read", 1), lambda k, j: (j // 8, k, j % 8))
    buf = sch.mod["main"].body.block.alloc_buffers[0]
    assert [int(s) for s in buf.shape] == [4, 32, 8]
    assert "B_global[vj // 8, vk, vj % 8]" in sch.mod.script()
    assert packed.name == "B_global"
    same_numbers(matmul, sch.mod)


def test_rfactor_makes_the_partial_axis_spatial(same_numbers):
    sch = tir.Schedule(row_sum)
    i, k = sch.get_loops(sch.get_block("B"))
    k0, k1 = sch.split(k, factors=[None, 8])
    rf = sch.rfactor(k1, 1)
    assert rf.name == "B_rf"
    sch.vectorize(sch.get_loops(rf)[-1]) if False else None
    rf_block = sch.get(rf)
    assert [iv.iter_type for iv in rf_block.iter_vars] == ["spatial", "spatial", "reduce"]
    same_numbers(row_sum, sch.mod)
    assert_structural_equal(from_source(sch.mod.script()), sch.mod)


@T.prim_func
def axpy_desc(a: T.Buffer((1,), "float32"), x: T.Buffer((16,), "float32"), y: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("update"):
            vi = T.axis.spatial(16, i)
            y[vi] = y[vi] + a[0] * x[vi]


@T.prim_func
def axpy_impl(a: T.Buffer((1,), "float32"), x: T.Buffer((16,), "float32"), y: T.Buffer((16,), "float32")):
    for i in T.vectorized(16):
        with T.block("update"):
            vi = T.axis.spatial(16, i)
            y[vi] = y[vi] + a[0] * x[vi]


tir.TensorIntrin.register("test_axpy16", axpy_desc, axpy_impl, override=True)


def test_blockize_then_tensorize(same_numbers):
    sch = tir.Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    j0, j1 = sch.split(j, factors=[None, 16])
    sch.reorder(i, j0, k, j1)
    sch.decompose_reduction(block, k)
    sch.tensorize(j1, "test_axpy16")
    func = sch.mod["main"]
    outer = sch.get(sch.get_block("C_update_o"))
    assert len(outer.match_buffers) == 3
    same_numbers(matmul, sch.mod)
    lib = minitvm.build(sch.mod)
    assert "<16 x float>" in lib.get_source("ll") or "<8 x float>" in lib.get_source("ll")
    assert func is sch.mod["main"]


@T.prim_func
def axpy_desc_in_registers(a: T.handle, x: T.handle, y: T.handle):
    A = T.match_buffer(a, (1,), "float32", scope="global.a_reg")
    X = T.match_buffer(x, (16,), "float32", scope="global.x_reg")
    Y = T.match_buffer(y, (16,), "float32", scope="global.acc")
    for i in range(16):
        with T.block("update"):
            vi = T.axis.spatial(16, i)
            Y[vi] = Y[vi] + A[0] * X[vi]


tir.TensorIntrin.register("test_axpy16_in_registers", axpy_desc_in_registers, axpy_desc_in_registers,
                          override=True)


def _axpy_tiled() -> tuple[tir.Schedule, tir.LoopRV]:
    sch = tir.Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    j0, j1 = sch.split(j, factors=[None, 16])
    sch.reorder(i, j0, k, j1)
    sch.decompose_reduction(block, k)
    return sch, j1


def test_tensorize_refuses_a_buffer_in_another_storage_scope():
    # as TVM: the description's operands live in special memory; a global buffer does not match
    sch, j1 = _axpy_tiled()
    with pytest.raises(tir.ScheduleError, match=r"buffer C is in scope 'global', the intrinsic's Y in scope "
                                                r"'global.acc'"):
        sch.tensorize(j1, "test_axpy16_in_registers")


def test_tensorize_accepts_operands_staged_in_the_description_scopes(same_numbers):
    sch = tir.Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    j0, j1 = sch.split(j, factors=[None, 16])
    sch.reorder(i, j0, k, j1)
    update = sch.blockize(j1)
    for index, scope in ((0, "global.a_reg"), (1, "global.x_reg")):
        sch.compute_at(sch.cache_read(update, index, scope), k)
    sch.reverse_compute_at(sch.cache_write(update, 0, "global.acc"), j0)
    sch.decompose_reduction(update, k)
    sch.tensorize(update, "test_axpy16_in_registers")
    same_numbers(matmul, sch.mod)


def test_blockize_outer_iterators(same_numbers):
    @T.prim_func
    def scale(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.block("B"):
                vi = T.axis.spatial(64, i)
                B[vi] = A[vi] * T.float32(3)

    sch = tir.Schedule(scale)
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, factors=[None, 16])
    outer = sch.blockize(i1)
    ob = sch.get(outer)
    assert ob.name_hint == "B_o" and ob.iter_vars[0].dom.extent.value == 4
    assert "B[vi_o * 16:vi_o * 16 + 16]" in sch.mod.script()
    same_numbers(scale, sch.mod)
    np.testing.assert_equal(len(sch.trace), 4)


@T.prim_func
def _nested_reduction(A: T.Buffer((2, 64), "float32"), B: T.Buffer((2,), "float32")):
    for i, ko in T.grid(2, 2):
        with T.block("outer"):
            vi, vko = T.axis.remap("SR", [i, ko])
            C = T.alloc_buffer((32,), dtype="float32")
            with T.init():
                B[vi] = T.float32(0)
            for ki in T.serial(32):
                with T.block("inner_1"):
                    vki = T.axis.remap("S", [ki])
                    C[vki] = A[vi, vko * 32 + vki] * T.float32(2)
            for ki in T.serial(32):
                with T.block("inner_2"):
                    vki = T.axis.remap("R", [ki])
                    B[vi] += C[vki]


def test_decompose_reduction_keeps_the_blocks_regions_and_thread_bindings(same_numbers, trace_replays):
    sch = tir.Schedule(_nested_reduction)
    _, ko = sch.get_loops("outer")
    sch.decompose_reduction("outer", ko)
    update = sch.get(sch.get_block("outer_update"))
    # as TVM: the update block reads what it writes, then what the block read
    assert [r.buffer.name for r in update.reads] == ["B", "A"]
    trace_replays(sch, _nested_reduction)
    same_numbers(_nested_reduction, sch.mod)

    sch = tir.Schedule(_nested_reduction)
    i, ko = sch.get_loops("outer")
    sch.bind(i, "threadIdx.x")
    sch.decompose_reduction("outer", ko)
    init_loop = sch.get(sch.get_loops("outer_init")[0])
    assert init_loop.kind == "thread_binding" and init_loop.thread_binding == "threadIdx.x"
