# ruff: noqa: E501  (golden CUDA source: its lines are as long as the generator makes them)
"""CUDA C source of the MLC course's GPU kernels: golden text (what a learner reads beside the
loop nest), and the clear message where no GPU can run it."""

import numpy as np
import pytest

import minitvm
from minitvm import tir
from minitvm.script import tir as T
from minitvm.target.cuda import cuda_source, real_gpu_status
from minitvm.testing import gpu_programs as gp

VECTOR_ADD = """extern "C" __global__ void __launch_bounds__(128) main_kernel(float* __restrict__ A, float* __restrict__ B, float* __restrict__ C) {
  C[((((int)blockIdx.x) * 128) + ((int)threadIdx.x))] = (A[((((int)blockIdx.x) * 128) + ((int)threadIdx.x))] + B[((((int)blockIdx.x) * 128) + ((int)threadIdx.x))]);
}
"""

WINDOW_SUM = """extern "C" __global__ void __launch_bounds__(128) main_kernel(float* __restrict__ A, float* __restrict__ C) {
  __shared__ float A_shared[256];
  for (int ax0_0 = 0; ax0_0 < 2; ++ax0_0) {
    if ((((ax0_0 * 128) + ((int)threadIdx.x)) < 130)) {
      A_shared[((ax0_0 * 128) + ((int)threadIdx.x))] = A[(((((int)blockIdx.x) * 128) + (ax0_0 * 128)) + ((int)threadIdx.x))];
    }
  }
  __syncthreads();
  C[((((int)blockIdx.x) * 128) + ((int)threadIdx.x))] = ((A_shared[((int)threadIdx.x)] + A_shared[(((int)threadIdx.x) + 1)]) + A_shared[(((int)threadIdx.x) + 2)]);
}
"""

MATMUL_SHARED_256 = """extern "C" __global__ void __launch_bounds__(64) main_kernel(float* __restrict__ A, float* __restrict__ B, float* __restrict__ C) {
  float C_local[64];
  for (int i_2_init = 0; i_2_init < 8; ++i_2_init) {
    for (int j_2_init = 0; j_2_init < 8; ++j_2_init) {
      C_local[((i_2_init * 8) + j_2_init)] = 0.000000e+00f;
    }
  }
  for (int k_0 = 0; k_0 < 32; ++k_0) {
    __syncthreads();
    __shared__ float B_shared[512];
    __shared__ float A_shared[512];
    for (int ax0_ax1_fused_0 = 0; ax0_ax1_fused_0 < 2; ++ax0_ax1_fused_0) {
      *(float4*)(A_shared + ((ax0_ax1_fused_0 * 256) + (((int)threadIdx.x) * 4))) = *(float4*)(A + (((((((int)blockIdx.y) * 16384) + (ax0_ax1_fused_0 * 8192)) + ((((int)threadIdx.x) / 2) * 256)) + (k_0 * 8)) + ((((int)threadIdx.x) % 2) * 4)));
    }
    for (int ax0_ax1_fused_0_1 = 0; ax0_ax1_fused_0_1 < 2; ++ax0_ax1_fused_0_1) {
      *(float4*)(B_shared + ((ax0_ax1_fused_0_1 * 256) + (((int)threadIdx.x) * 4))) = *(float4*)(B + (((((k_0 * 2048) + (ax0_ax1_fused_0_1 * 1024)) + ((((int)threadIdx.x) / 16) * 256)) + (((int)blockIdx.x) * 64)) + ((((int)threadIdx.x) % 16) * 4)));
    }
    __syncthreads();
    for (int k_1 = 0; k_1 < 8; ++k_1) {
      for (int i_2 = 0; i_2 < 8; ++i_2) {
        for (int j_2 = 0; j_2 < 8; ++j_2) {
          C_local[((i_2 * 8) + j_2)] = (C_local[((i_2 * 8) + j_2)] + (A_shared[((((((int)threadIdx.x) / 8) * 64) + (i_2 * 8)) + k_1)] * B_shared[(((k_1 * 64) + ((((int)threadIdx.x) % 8) * 8)) + j_2)]));
        }
      }
    }
  }
  for (int ax0 = 0; ax0 < 8; ++ax0) {
    for (int ax1 = 0; ax1 < 8; ++ax1) {
      C[((((((((int)blockIdx.y) * 16384) + ((((int)threadIdx.x) / 8) * 2048)) + (ax0 * 256)) + (((int)blockIdx.x) * 64)) + ((((int)threadIdx.x) % 8) * 8)) + ax1)] = C_local[((ax0 * 8) + ax1)];
    }
  }
}
"""


def _source(sch, target="cuda"):
    return minitvm.build(sch.mod, target=target).imported_modules[0].get_source()


def test_vector_add_source():
    assert _source(gp.bind_vector_add(tir.Schedule(gp.vector_add(1024)))) == VECTOR_ADD


def test_window_sum_source_has_shared_memory_and_a_barrier():
    assert _source(gp.window_sum_shared(tir.Schedule(gp.window_sum(1024)))) == WINDOW_SUM


def test_matmul_shared_source_fetches_float4_and_syncs_twice_per_k_step():
    src = _source(gp.matmul_shared_blocking(tir.Schedule(gp.matmul(256))))
    assert src == MATMUL_SHARED_256


def test_emulated_build_prints_the_same_source():
    sch = gp.window_sum_shared(tir.Schedule(gp.window_sum(1024)))
    lib = minitvm.build(sch.mod, target="cuda-emulated")
    assert lib.imported_modules[0].get_source() == WINDOW_SUM == lib.get_source("cuda")


def test_math_calls_and_floor_division_print_as_cuda():
    @T.prim_func
    def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), n: T.int32):
        bx = T.launch_thread("blockIdx.x", 2)
        tx = T.launch_thread("threadIdx.x", 32)
        B[bx * 32 + tx] = T.exp(A[(bx * 32 + tx - n) // 4]) + T.max(A[tx], T.float32(0))

    mod = minitvm.tir.transform.device_lower_pipeline()(minitvm.lower(f))
    src = cuda_source({"f_kernel": mod["f_kernel"]})
    assert "expf(A[((((int)blockIdx.x) * 8) + floordiv((((int)threadIdx.x) - n), 4))])" in src
    assert "fmaxf(A[((int)threadIdx.x)], 0.000000e+00f)" in src
    assert "int n)" in src and "__device__ __forceinline__ int floordiv" in src


def test_running_on_cuda_without_a_gpu_says_what_is_missing():
    # no machine running these tests has an NVIDIA GPU with cuda-python: the message must say so
    assert real_gpu_status() is not None
    lib = minitvm.build(gp.bind_vector_add(tir.Schedule(gp.vector_add(256))).mod, target="cuda")
    args = [minitvm.nd.array(np.ones(256, "float32")) for _ in range(3)]
    with pytest.raises(RuntimeError, match='cannot run kernel main_kernel on a GPU: .*target="cuda-emulated"'):
        lib["main"](*args)


def test_report_is_for_emulated_builds_only():
    lib = minitvm.build(gp.bind_vector_add(tir.Schedule(gp.vector_add(256))).mod, target="cuda")
    with pytest.raises(ValueError, match="cuda-emulated"):
        lib.report()


def test_host_code_without_a_launch_is_refused_by_name():
    with pytest.raises(NotImplementedError, match="host code other than kernel launches.*Did you forget to bind"):
        minitvm.build(gp.vector_add(64), target="cuda")
