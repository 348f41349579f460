"""The emulated GPU (target "cuda-emulated"): the course's schedules run with CUDA's meaning
and match numpy; races, oversized blocks and too much shared memory are refused by name;
the report's numbers are counted, not guessed."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.script import tir as T
from minitvm.target.cuda import GPUEmulatorError, LaunchConfigError, SharedMemoryRaceError
from minitvm.testing import gpu_programs as gp

RNG = np.random.default_rng(17)


def _rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _build(sch_or_func, options=""):
    mod = sch_or_func.mod if isinstance(sch_or_func, tir.Schedule) else sch_or_func
    return minitvm.build(mod, target=f"cuda-emulated {options}".strip())


def test_vector_add_matches_numpy_on_the_emulated_device():
    lib = _build(gp.bind_vector_add(tir.Schedule(gp.vector_add(1024))))
    dev = minitvm.cuda(0)
    a, b = _rand(1024), _rand(1024)
    c = minitvm.nd.empty((1024,), "float32", dev)
    lib["main"](minitvm.nd.array(a, dev), minitvm.nd.array(b, dev), c)
    np.testing.assert_allclose(c.numpy(), a + b, rtol=1e-6)
    r = lib.report()[0]
    assert (r.grid, r.block, r.threads_per_block) == ((8, 1, 1), (128, 1, 1), 128)
    assert r.global_bytes == 3 * 1024 * 4 and r.flops == 1024  # two loads, a store and an add per thread
    assert r.estimated_seconds == pytest.approx(3 * 1024 * 4 / 320e9)  # memory-bound on a T4


def test_window_sum_with_a_shared_cache_matches_numpy():
    lib = _build(gp.window_sum_shared(tir.Schedule(gp.window_sum(1024))))
    a, c = _rand(1026), minitvm.nd.empty((1024,), "float32")
    lib["main"](minitvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), a[:-2] + a[1:-1] + a[2:], rtol=1e-5, atol=1e-6)
    r = lib.report()[0]
    # per block: 130 guarded loads of A (of the 256 fetch iterations), 128 stores of C
    assert r.global_bytes == 8 * (130 + 128) * 4
    assert r.shared_bytes == 256 * 4 and "no race" in r.race_check


@pytest.mark.parametrize("schedule", [gp.matmul_local_blocking, gp.matmul_shared_blocking])
def test_matmul_schedules_match_numpy(schedule):
    lib = _build(schedule(tir.Schedule(gp.matmul(128))))
    a, b = _rand(128, 128), _rand(128, 128)
    c = minitvm.nd.empty((128, 128), "float32")
    lib["main"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)
    assert lib.report()[0].flops == 2 * 128 ** 3


def test_shared_tiles_cut_global_traffic():
    # the point of the course's shared-memory step, in the report's numbers
    local = _build(gp.matmul_local_blocking(tir.Schedule(gp.matmul(128)))).report()[0]
    shared = _build(gp.matmul_shared_blocking(tir.Schedule(gp.matmul(128)))).report()[0]
    assert shared.global_bytes * 8 < local.global_bytes
    assert shared.shared_bytes == 2 * 64 * 8 * 4 and local.shared_bytes == 0
    assert shared.estimated_seconds < local.estimated_seconds


def test_a_fetch_without_cooperation_is_a_write_race_on_the_shared_cache():
    sch = gp.window_sum_shared(tir.Schedule(gp.window_sum(256)), cooperative=False)
    with pytest.raises(SharedMemoryRaceError, match=r"race in kernel main_kernel on buffer A_shared.*threadIdx\.x=0 "
                       r"writes it at line \d+ of the kernel's TIR.*threadIdx\.x=1 writes it.*cooperative fetching"):
        _build(sch)


@T.prim_func
def shift_in_place(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.allocate([129], "float32", "shared")
    S_1 = T.Buffer((129,), data=S, scope="shared")
    S_1[tx] = A[bx * 128 + tx]
    S_1[tx] = S_1[tx + 1]  # thread t reads what thread t + 1 overwrites: no barrier can split this
    B[bx * 128 + tx] = S_1[tx]


def test_a_read_racing_a_write_is_refused_with_both_threads_and_the_line():
    with pytest.raises(SharedMemoryRaceError, match=r"on buffer S_1, element 1 \(in block blockIdx\.x=0\): thread "
                       r"threadIdx\.x=1 writes it at line \d+ of the kernel's TIR: "
                       r"`S_1\[threadIdx_x\] = S_1\[threadIdx_x \+ 1\]` "
                       r"\(TVMScript line \d+ of [^)]*test_gpu_emulator\.py\) and thread threadIdx\.x=0 reads it"):
        _build(shift_in_place)


def test_every_thread_writing_one_shared_element_is_a_race():
    @T.prim_func
    def shift(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
        bx = T.launch_thread("blockIdx.x", 2)
        tx = T.launch_thread("threadIdx.x", 128)
        S = T.allocate([129], "float32", "shared")
        S_1 = T.Buffer((129,), data=S, scope="shared")
        L = T.allocate([1], "float32", "local")
        L_1 = T.Buffer((1,), data=L, scope="local")
        S_1[tx] = A[bx * 128 + tx]
        S_1[128] = T.float32(0)
        L_1[0] = S_1[tx + 1]
        S_1[tx] = L_1[0]
        B[bx * 128 + tx] = S_1[tx]

    # reading into a local copy first would fix the shift, but every thread also writes S[128]
    with pytest.raises(SharedMemoryRaceError, match=r"S_1, element 128.*writes"):
        _build(shift)


def test_barriers_split_the_phases_and_local_values_survive_them():
    @T.prim_func
    def reverse(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
        bx = T.launch_thread("blockIdx.x", 2)
        tx = T.launch_thread("threadIdx.x", 128)
        S = T.allocate([128], "float32", "shared")
        S_1 = T.Buffer((128,), data=S, scope="shared")
        L = T.allocate([1], "float32", "local")
        L_1 = T.Buffer((1,), data=L, scope="local")
        L_1[0] = A[bx * 128 + tx] * T.float32(2)
        S_1[tx] = A[bx * 128 + tx]
        T.tvm_storage_sync("shared")
        B[bx * 128 + tx] = S_1[127 - tx] + L_1[0]

    lib = _build(reverse)
    a, b = _rand(256), minitvm.nd.empty((256,), "float32")
    lib["reverse"](minitvm.nd.array(a), b)
    want = np.concatenate([a[127::-1], a[:127:-1]]) + 2 * a
    np.testing.assert_allclose(b.numpy(), want, rtol=1e-6)
    # one thread loop per phase (UnifyThreadBinding names the thread variable after its tag, as TVM)
    assert lib.get_source("cpu").count("for threadIdx_x in range(128)") == 2


def test_a_barrier_under_a_thread_dependent_condition_is_refused():
    @T.prim_func
    def divergent(A: T.Buffer((128,), "float32")):
        tx = T.launch_thread("threadIdx.x", 128)
        if tx < 64:
            T.tvm_storage_sync("shared")
            A[tx] = T.float32(1)

    with pytest.raises(GPUEmulatorError, match="barrier .* under `if threadIdx_x < 64`, which depends on threadIdx"):
        _build(divergent)


def test_more_threads_than_a_block_allows_is_refused():
    sch = tir.Schedule(gp.vector_add(4096))
    i, = sch.get_loops("C")
    i0, i1 = sch.split(i, [None, 2048])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    with pytest.raises(LaunchConfigError, match="launches 2048 threads per block .* at most 1024"):
        _build(sch)


def test_more_shared_memory_than_the_device_has_is_refused():
    sch = gp.matmul_shared_blocking(tir.Schedule(gp.matmul(256)), 1, 1, 32, 32, 256)  # 2 tiles of 32 x 256 floats
    with pytest.raises(LaunchConfigError, match=r"needs 65536 B of shared memory per block \(B_shared 32768 B, "
                       r"A_shared 32768 B\); NVIDIA Tesla T4 has 49152 B"):
        _build(sch)
    # a device with more shared memory per block takes it
    lib = _build(sch, "-max_shared_memory_per_block=98304")
    assert lib.report()[0].shared_bytes == 65536


def test_the_report_names_its_device_and_says_it_is_an_estimate():
    lib = _build(gp.bind_vector_add(tir.Schedule(gp.vector_add(1024))), "-model=rtx3060")
    text = str(lib.report())
    assert "NVIDIA GeForce RTX 3060 (12.7 TFLOP/s FP32, 360 GB/s" in text
    assert "a roofline estimate, not a measurement" in text


def test_time_evaluator_times_the_emulation():
    lib = _build(gp.bind_vector_add(tir.Schedule(gp.vector_add(1024))))
    args = [minitvm.nd.array(_rand(1024)) for _ in range(3)]
    result = lib.mod.time_evaluator("main", minitvm.cuda(0), number=2)(*args)
    assert result.mean > 0


def test_a_reduction_bound_to_threads_is_refused_by_name():
    sch = tir.Schedule(gp.matmul(64))
    i, j, k = sch.get_loops("C")
    sch.bind(i, "blockIdx.x")
    sch.bind(k, "threadIdx.x")  # legal in TVM's schedule: a cross-thread reduction
    with pytest.raises(NotImplementedError, match="block C reduces over loop k, bound to threadIdx.x: a cross-thread "
                       "reduction"):
        _build(sch)
