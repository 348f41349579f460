"""TVMScript of GPU programs: thread-bound loops, shared/local scopes, thread launches and
barriers print and parse back to the same IR, at every stage a GPU schedule goes through."""

import pytest

import minitvm
from minitvm import tir
from minitvm.ir import assert_structural_equal
from minitvm.script import from_source
from minitvm.script import tir as T
from minitvm.testing import gpu_programs as gp
from minitvm.tir.transform import device_lower_pipeline


def _round_trip(func):
    again = from_source(func.script())
    assert_structural_equal(again, func)
    return func.script()


def test_scheduled_window_sum_round_trips_with_thread_bindings_and_a_shared_cache():
    text = _round_trip(gp.window_sum_shared(tir.Schedule(gp.window_sum(256))).mod["main"])
    assert 'T.thread_binding(2, thread="blockIdx.x")' in text
    assert 'A_shared = T.sblock_alloc_buffer((258,), scope="shared")' in text


def test_scheduled_matmul_round_trips_with_local_and_shared_caches():
    text = _round_trip(gp.matmul_shared_blocking(tir.Schedule(gp.matmul(128))).mod["main"])
    assert 'C_local = T.sblock_alloc_buffer((128, 128), scope="local")' in text
    assert 'T.thread_binding(64, thread="threadIdx.x")' in text


@pytest.mark.parametrize("program", ["vector_add", "window_sum", "matmul"])
def test_lowered_and_split_kernels_round_trip(program):
    sch = {"vector_add": lambda: gp.bind_vector_add(tir.Schedule(gp.vector_add(256))),
           "window_sum": lambda: gp.window_sum_shared(tir.Schedule(gp.window_sum(256))),
           "matmul": lambda: gp.matmul_shared_blocking(tir.Schedule(gp.matmul(128)))}[program]()
    lowered = minitvm.lower(sch.mod)["main"]
    assert "T.launch_thread(\"threadIdx.x\"" in _round_trip(lowered)
    kernel = device_lower_pipeline()(minitvm.lower(sch.mod))["main_kernel"]
    _round_trip(kernel)


def test_buffer_scope_parameter_and_env_thread_round_trip():
    @T.prim_func
    def f(a: T.handle):
        A = T.match_buffer(a, (64,), "float32")
        tx = T.env_thread("threadIdx.x")
        T.launch_thread(tx, 64)
        S = T.allocate([64], "float32", "shared")
        S_1 = T.Buffer((64,), data=S, scope="shared")
        S_1[tx] = A[tx]
        T.tvm_storage_sync("shared")
        A[tx] = S_1[63 - tx]

    text = _round_trip(f)
    assert 'T.tvm_storage_sync("shared")' in text and 'scope="shared"' in text
