"""Bounds checks on the emulated GPU: under ``PassContext(config={"tir.bounds_check": True})``
a bad shared, local or global index in a "cuda-emulated" kernel raises the CPU path's
``BoundsError`` (function, buffer, index, extent, TVMScript line) instead of reading whatever
lies past the array; correct kernels carry no check, compute numpy's numbers, and keep their
CUDA source and report."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.runtime import BoundsError
from minitvm.script import from_source
from minitvm.script import tir as T
from minitvm.testing import gpu_programs as gp
from minitvm.tir.stmt import AssertStmt
from minitvm.transform import PassContext

RNG = np.random.default_rng(35)


def _build(mod, checked=True):
    mod = mod.mod if isinstance(mod, tir.Schedule) else mod
    with PassContext(config={"tir.bounds_check": checked}):
        return minitvm.build(mod, target="cuda-emulated")


#: a kernel reversing each block of 128 elements through shared memory, plus a per-thread local
#: pair that lives across the barrier (the emulator keeps one copy per thread); {read} is what
#: each thread reads back
_REVERSE = """
@T.prim_func
def {name}(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.allocate([128], "float32", "shared")
    S_1 = T.Buffer((128,), data=S, scope="shared")
    L = T.allocate([2], "float32", "local")
    L_1 = T.Buffer((2,), data=L, scope="local")
    L_1[0] = A[bx * 128 + tx]
    L_1[1] = A[bx * 128 + tx] * T.float32(2)
    S_1[tx] = A[bx * 128 + tx]
    T.tvm_storage_sync("shared")
    B[bx * 128 + tx] = {read}
"""
#: the TVMScript line of the read
READ_LINE = _REVERSE.splitlines().index("    B[bx * 128 + tx] = {read}") + 1

reverse = from_source(_REVERSE.format(name="reverse", read="S_1[127 - tx] + L_1[tx // 64]"))  # L[1]: upper half
reverse_off_by_one = from_source(_REVERSE.format(name="reverse_off_by_one", read="S_1[128 - tx]"))  # thread 0: S[128]
local_past_the_end = from_source(_REVERSE.format(name="local_past_the_end", read="L_1[tx // 64 + 1]"))  # 64..: L[2]


def _asserts(lib) -> list[str]:
    found: list[str] = []
    for _, f in lib.ir_module.items():
        tir.post_order_visit(f.body, lambda n: found.append(n.message) if isinstance(n, AssertStmt) else None)
    return found


@T.prim_func
def gather(A: T.Buffer((256,), "float32"), idx: T.Buffer((256,), "int32"), B: T.Buffer((256,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 128)
    B[bx * 128 + tx] = A[idx[bx * 128 + tx]]


def test_shared_memory_read_past_the_end_raises_the_cpu_paths_bounds_error():
    lib = _build(reverse_off_by_one)
    a, b = RNG.standard_normal(256).astype("float32"), minitvm.nd.empty((256,), "float32")
    with pytest.raises(BoundsError) as err:
        lib["reverse_off_by_one"](minitvm.nd.array(a), b)
    assert str(err.value) == ("reverse_off_by_one_kernel: buffer S_1: index 128 is out of bounds for extent 128 "
                              f"(at S_1[128 - threadIdx_x]) on TVMScript line {READ_LINE}")
    assert isinstance(err.value, IndexError)
    assert (err.value.index, err.value.check.buffer, err.value.check.extent) == (128, "S_1", "128")


def test_local_memory_read_past_the_end_names_the_threads_own_array():
    lib = _build(local_past_the_end)
    with pytest.raises(BoundsError, match=r"^local_past_the_end_kernel: buffer L_1: index 2 is out of bounds for "
                                          r"extent 2 \(at L_1\[threadIdx_x // 64 \+ 1\]\) on TVMScript line "
                                          rf"{READ_LINE}$"):
        lib["local_past_the_end"](minitvm.nd.array(np.ones(256, "float32")), minitvm.nd.empty((256,), "float32"))


def test_global_index_read_from_memory_is_checked_when_the_kernel_runs():
    lib = _build(gather)
    assert len(_asserts(lib)) == 1  # idx[...] and B[...] are proven from the launch extents; A[idx[...]] is not
    a, idx = RNG.standard_normal(256).astype("float32"), RNG.integers(0, 256, 256).astype("int32")
    b = minitvm.nd.empty((256,), "float32")
    lib["gather"](minitvm.nd.array(a), minitvm.nd.array(idx), b)
    np.testing.assert_array_equal(b.numpy(), a[idx])
    idx[200] = 300
    with pytest.raises(BoundsError, match=r"^gather_kernel: buffer A: index 300 is out of bounds for extent 256 "):
        lib["gather"](minitvm.nd.array(a), minitvm.nd.array(idx), b)


def test_correct_kernels_are_proven_and_compute_numpys_numbers():
    lib = _build(reverse)
    assert _asserts(lib) == []  # every index is bounded by the launch extents: nothing to check at run time
    a, b = RNG.standard_normal(256).astype("float32"), minitvm.nd.empty((256,), "float32")
    lib["reverse"](minitvm.nd.array(a), b)
    want = np.concatenate([a[127::-1], a[:127:-1]]) + np.where(np.arange(256) % 128 >= 64, 2 * a, a)
    np.testing.assert_allclose(b.numpy(), want, rtol=1e-6)
    # the course's shared-memory matmul too
    sch = gp.matmul_shared_blocking(tir.Schedule(gp.matmul(64)), 2, 2, 8, 8, 8)
    lib = _build(sch)
    x, y = RNG.standard_normal((64, 64)).astype("float32"), RNG.standard_normal((64, 64)).astype("float32")
    z = minitvm.nd.empty((64, 64), "float32")
    lib["main"](minitvm.nd.array(x), minitvm.nd.array(y), z)
    np.testing.assert_allclose(z.numpy(), x @ y, rtol=1e-4, atol=1e-4)


def test_checks_change_neither_the_cuda_source_nor_the_report():
    checked, unchecked = _build(gather), _build(gather, checked=False)
    assert _asserts(checked) and not _asserts(unchecked)
    assert checked.get_source("cuda") == unchecked.get_source("cuda")
    assert "assert" not in checked.get_source("cuda")
    assert str(checked.report()) == str(unchecked.report())


@T.prim_func
def rounds(A: T.Buffer((128,), "float32"), cnt: T.Buffer((4,), "int32"), B: T.Buffer((128,), "float32"),
           s: T.int32):
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.allocate([128], "float32", "shared")
    S_1 = T.Buffer((128,), data=S, scope="shared")
    B[tx] = A[tx]
    for _k in range(cnt[s]):  # the check of cnt[s] guards a loop that holds barriers
        S_1[tx] = B[tx]
        T.tvm_storage_sync("shared")
        B[tx] = S_1[127 - tx]
        T.tvm_storage_sync("shared")


def test_a_checked_loop_bound_around_barriers_stays_outside_the_thread_loops():
    lib = _build(rounds)
    a, cnt = RNG.standard_normal(128).astype("float32"), np.array([1, 2, 3, 4], "int32")
    b = minitvm.nd.empty((128,), "float32")
    for s, want in ((0, a[::-1]), (1, a)):  # cnt[s] reversals
        lib["rounds"](minitvm.nd.array(a), minitvm.nd.array(cnt), b, s)
        np.testing.assert_array_equal(b.numpy(), want)
    with pytest.raises(BoundsError, match=r"^rounds_kernel: buffer cnt: index 4 is out of bounds for extent 4"):
        lib["rounds"](minitvm.nd.array(a), minitvm.nd.array(cnt), b, 4)
