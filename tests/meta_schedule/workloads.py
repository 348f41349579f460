"""Small workloads and schedule functions shared by the meta_schedule tests."""

import numpy as np

import minitvm
from minitvm.script import tir as T


@T.prim_func
def matmul_64(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i, j, k in T.grid(64, 64, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def add_one_32(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    for i in range(32):
        with T.block("B"):
            vi = T.axis.spatial(32, i)
            B[vi] = A[vi] + T.float32(1)


def split_j(sch):
    """The MLC course's stochastic schedule: a sampled split of j, moved inside k."""
    block = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block)
    j0, j1 = sch.split(j, factors=sch.sample_perfect_tile(j, n=2))
    sch.reorder(i, j0, k, j1)
    sch.decompose_reduction(block, k)
    return sch


def check_matmul(mod, seed=1):
    """Build ``mod`` (a scheduled ``matmul_64``) and compare it with numpy on random inputs."""
    lib = minitvm.build(mod, target="llvm")
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((64, 64)).astype("float32"), rng.standard_normal((64, 64)).astype("float32")
    c = minitvm.nd.empty((64, 64), "float32")
    lib["main"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)
