"""Lowering a GPU schedule as TVM does: one variable per thread axis (UnifyThreadBinding),
thread-bound loops -> T.launch_thread, shared buffers compacted per block, barriers where
threads share data (ThreadSync), kernels split from the host (SplitHostDevice)."""

import pytest

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import tir as T
from minitvm.testing import gpu_programs as gp
from minitvm.tir.stmt import AttrStmt, Evaluate, For
from minitvm.tir.transform import SplitHostDevice, ThreadSync, device_lower_pipeline
from minitvm.tir.transform.thread_sync import is_storage_sync


def _lowered(sch):
    return minitvm.lower(sch.mod)["main"]


@T.prim_func
def window_sum_lowered(A: T.Buffer((1026,), "float32"), C: T.Buffer((1024,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "tir.lowered": True})
    blockIdx_x = T.launch_thread("blockIdx.x", 8)
    threadIdx_x = T.launch_thread("threadIdx.x", 128)
    A_shared = T.allocate((256,), "float32", "shared")
    for ax0_0 in range(2):
        if ax0_0 * 128 + threadIdx_x < 130:
            A_shared[ax0_0 * 128 + threadIdx_x] = A[blockIdx_x * 128 + ax0_0 * 128 + threadIdx_x]
    C[blockIdx_x * 128 + threadIdx_x] = A_shared[threadIdx_x] + A_shared[threadIdx_x + 1] + A_shared[threadIdx_x + 2]


def test_window_sum_lowers_to_one_launch_per_axis_and_a_block_wide_cache():
    # the fetch loop's threadIdx.x is the compute's threadIdx.x; the cache holds the block's
    # 128 + 2 elements (rounded to the fetch loop's 2 x 128 iterations)
    got = _lowered(gp.window_sum_shared(tir.Schedule(gp.window_sum(1024))))
    assert_structural_equal(got.body, window_sum_lowered.body, map_free_vars=True)


def test_thread_loops_of_one_tag_need_one_extent():
    @T.prim_func
    def two_extents(A: T.Buffer((64,), "float32")):
        for i in T.thread_binding(64, thread="threadIdx.x"):
            for j in T.thread_binding(32, thread="threadIdx.x"):
                with T.block("A"):
                    vi = T.axis.spatial(64, i)
                    vj = T.axis.spatial(32, j)
                    A[vi] = T.float32(vj)

    with pytest.raises(ValueError, match="bound to `threadIdx.x` should have the same extent.*64 and 32"):
        minitvm.lower(two_extents)


def test_matmul_shared_tiles_are_per_k_step_and_per_block():
    f = _lowered(gp.matmul_shared_blocking(tir.Schedule(gp.matmul(256))))
    text = f.script()
    # A tile: 64 rows x 8 k; B tile: 8 k x 64 columns; C tile: 8 x 8 per thread
    assert 'A_shared = T.allocate([512], "float32", "shared")' in text
    assert 'B_shared = T.allocate([512], "float32", "shared")' in text
    assert 'C_local = T.allocate([64], "float32", "local")' in text
    assert text.index("for k_0 in range(32)") < text.index("A_shared = T.allocate")


def _syncs_under(stmt):
    found = []
    minitvm.tir.functor.pre_order_visit(stmt, lambda n: found.append(n) if is_storage_sync(n) else True)
    return found


def test_thread_sync_places_the_matmul_barriers_where_tvm_does():
    mod = ThreadSync("shared")(minitvm.lower(gp.matmul_shared_blocking(tir.Schedule(gp.matmul(256))).mod))
    k_loop = []
    minitvm.tir.functor.pre_order_visit(mod["main"].body, lambda n: k_loop.append(n) if isinstance(n, For)
                                        and n.loop_var.name == "k_0" else True)
    body = k_loop[0].body.seq
    # one at the start of each k step (the previous step still reads the tiles), one before
    # the compute (the tiles were just written by other threads)
    assert is_storage_sync(body[0])
    stmts = body[1].body.body.seq  # under the two allocations
    assert [is_storage_sync(s) for s in stmts] == [False, False, True, False]
    assert len(_syncs_under(mod["main"].body)) == 2


def test_no_barrier_when_each_thread_reads_its_own_element():
    @T.prim_func
    def own(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        tx = T.launch_thread("threadIdx.x", 128)
        S = T.allocate([128], "float32", "shared")
        S_1 = T.Buffer((128,), data=S, scope="shared")
        S_1[tx] = A[tx]
        B[tx] = S_1[tx] * T.float32(2)

    assert _syncs_under(ThreadSync("shared")(minitvm.IRModule({"main": own}))["main"].body) == []


def test_barrier_when_a_thread_reads_a_neighbours_element():
    @T.prim_func
    def neighbour(A: T.Buffer((128,), "float32"), B: T.Buffer((127,), "float32")):
        tx = T.launch_thread("threadIdx.x", 127)
        S = T.allocate([128], "float32", "shared")
        S_1 = T.Buffer((128,), data=S, scope="shared")
        S_1[tx] = A[tx]
        B[tx] = S_1[tx + 1]

    body = ThreadSync("shared")(minitvm.IRModule({"main": neighbour}))["main"].body
    seq = body.body.body.seq
    assert [type(s).__name__ for s in seq] == ["BufferStore", "Evaluate", "BufferStore"]


def test_thread_sync_refuses_scopes_it_does_not_handle():
    with pytest.raises(NotImplementedError, match="ThreadSync\\('global'\\).*shared memory only"):
        ThreadSync("global")


def test_split_host_device_outlines_the_kernel_with_its_launch():
    mod = device_lower_pipeline()(minitvm.lower(gp.bind_vector_add(tir.Schedule(gp.vector_add(1024))).mod))
    kernel = mod["main_kernel"]
    assert kernel.attrs["tir.kernel_launch_params"] == ["blockIdx.x", "threadIdx.x"]
    assert kernel.attrs["calling_conv"] == 2
    assert [p.name for p in kernel.params] == ["A", "B", "C"]
    assert isinstance(kernel.body, AttrStmt) and kernel.body.node.thread_tag == "blockIdx.x"
    host = mod["main"].body
    assert isinstance(host, Evaluate) and host.value.op == "tir.tvm_call_packed"
    assert [str(a) for a in host.value.args[-2:]] == ["8", "128"]  # the grid and block extents


def test_split_host_device_leaves_cpu_functions_alone():
    mod = minitvm.lower(gp.vector_add(64))
    assert SplitHostDevice()(mod).keys() == ["main"]


def test_cpu_build_of_a_bound_loop_points_to_the_gpu_targets():
    sch = gp.bind_vector_add(tir.Schedule(gp.vector_add(256)))
    with pytest.raises(NotImplementedError, match='launches GPU threads.*target="cuda".*"cuda-emulated"'):
        minitvm.build(sch.mod, target="llvm")


def test_dynamic_shared_buffers_are_one_pool_for_the_barrier():
    # B and D are both dynamic shared memory: one pool, so writing D after reading B needs a barrier
    @T.prim_func
    def f(A: T.Buffer((16,), "float32"), E: T.Buffer((16,), "float32")):
        tx = T.launch_thread("threadIdx.x", 16)
        B = T.allocate([16], "float32", "shared.dyn")
        D = T.allocate([16], "float32", "shared.dyn")
        B_1 = T.Buffer((16,), data=B, scope="shared.dyn")
        D_1 = T.Buffer((16,), data=D, scope="shared.dyn")
        B_1[tx] = A[tx]
        E[tx] = B_1[tx]
        D_1[15 - tx] = A[tx]

    mod = minitvm.IRModule({"main": f})
    assert _syncs_under(ThreadSync("shared")(mod)["main"].body) == []  # one scope per pass, as TVM
    assert len(_syncs_under(ThreadSync("shared.dyn")(mod)["main"].body)) == 1


def test_unify_turns_launch_thread_statements_into_thread_loops():
    @T.prim_func
    def f(A: T.Buffer((128,), "float32")):
        for _i in range(1):
            with T.block("root_like"):
                T.reads()
                T.writes(A[0:128])
                bx = T.launch_thread("blockIdx.x", 2)
                tx = T.launch_thread("threadIdx.x", 64)
                A[bx * 64 + tx] = T.float32(1)

    unified = minitvm.tir.transform.UnifyThreadBinding()(minitvm.IRModule({"main": f}))["main"]
    loops = []
    minitvm.tir.functor.pre_order_visit(unified.body, lambda n: loops.append(n) if isinstance(n, For) else True)
    assert [(lp.loop_var.name, lp.thread_binding) for lp in loops[1:]] == [("blockIdx_x", "blockIdx.x"),
                                                                           ("threadIdx_x", "threadIdx.x")]
