"""float32 matmul C = A @ B (n x n x n): numpy, torch and minitvm schedules, same run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/matmul.py [--size 1024] [--repeat 10]

(The ``env -u`` matters on machines where OPENBLAS_CORETYPE is set: it forces an older
OpenBLAS kernel, e.g. Haswell on an AVX-512 CPU, and numpy is then slower than it can be.
The table's header says which kernel numpy ran.)

Rows:

* ``numpy``   -- OpenBLAS, its default threads (2 here).
* ``torch``   -- torch.matmul with ``torch.set_num_threads(2)`` (MKL/oneDNN).
* ``naive``   -- the unscheduled TVMScript matmul compiled as is (one scalar loop nest).
  It is ~100x slower, so it is timed at ``--naive-size`` (256 by default) and shows
  GFLOP/s only: no ratio columns, as the work differs.
* ``default`` -- ``tir.transform.DefaultCPUSchedule`` on the plain matmul: the schedule
  ``minitvm.compile`` gives a kernel with no hand work.
* ``tiled``   -- split i/j, reorder so k is outside a 4x32 register tile, unroll/vectorize the
  tile, parallel outer loop.  No packing, no local accumulator.
* ``packed``  -- an 8x32 register tile + B packed into 32-wide column panels (cache_read +
  transform_layout) + cache_write("local") accumulator: the classic TVM CPU recipe.
* ``best``    -- packed B + a register-blocked micro-kernel inserted with ``tensorize``; its
  accumulator is a small ``local`` buffer allocated *inside* the parallel loop (see below).

Every minitvm result is checked against numpy before it is timed.

``measure_int8`` (the int8 rows of ``run.py --only tensorize``) times a u8 x s8 -> int32 matmul
with B packed [N/16, K/4, 16, 4]: numpy (an int32 matmul), ``torch._int_mm``, and one int8
register tile vectorized and tensorized with ``dot_16x4_vnni`` (AVX-512 VNNI's ``vpdpbusd``),
each checked exactly against numpy.

The tensorized rows run on every x86-64 CPU: the intrinsics' implementations are portable LLVM.
On a CPU without the instruction (AVX-512F for the FMA tile, AVX-512 VNNI for ``vpdpbusd``) LLVM
emulates each step with narrower instructions, and the row's note says so: the time is then
that of the emulation, not of the instruction.

``packed`` is the classic TVM CPU recipe written with schedule primitives only; its 8x32
register tile is 16 zmm accumulators.  Two compiler pieces make it fast: the
CompactBufferAllocation lowering pass shrinks ``C_local`` to the tile and allocates it inside
the parallel loop (a stack array LLVM keeps in registers), and the function that ``parallel``
outlines takes the buffers as ``noalias`` parameters, so the k loop is pure broadcast + load +
FMA.  ``best`` reaches the same kind of inner loop through ``tensorize`` with a hand-written
micro-kernel: the other way TVM teaches to get there.

Measured variants of ``best`` are listed in a comment above ``BEST`` below.

OMP_WAIT_POLICY (``--omp-wait-policy``, ``passive`` by default) reaches torch's libgomp only:
minitvm's parallel loops run on its own thread pool, whose idle workers sleep.  ``active``
keeps torch's workers spinning after every torch call, which slows what else runs in the
process (the interleaved rounds) and on the machine.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from typing import Any, Callable, Iterable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    Row,
    Timing,
    environment_info,
    print_table,
    setup_environment,
    time_fn,
    time_interleaved,
    wait_until_idle,
    write_json,
)

# Variants of ``best`` measured while tuning (MB, mi, nj): median GFLOP/s at 1024^3, 2 threads,
# OMP_WAIT_POLICY=passive, machine idle, numpy (OpenBLAS SkylakeX kernel) 433-436 in the same run:
#   (64, 4, 32) 370   (64, 8, 32) 420   (128, 8, 32) 418-422   (32, 4, 64) 423-427
#   (64, 4, 64) 423   (128, 4, 64) 427  (64, 2, 128) 359-362   (64, 16, 16) 220
# 4x64 and 8x32 tiles (16 zmm accumulators) are FMA-bound; 4x32 (8 accumulators) is short of
# independent FMAs, 16x16 is load-bound (16 broadcasts per 16 FMAs).  mi=6 tiles do not fit:
# 1024 has no factor 6, and blockize needs MB | 1024 and mi | MB.
# Under load (a test suite on one core) all of them drop to ~200 and numpy to ~70-240.
BEST = (64, 4, 64)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=1024, help="n for an n x n x n matmul (multiple of 64)")
    p.add_argument("--repeat", type=int, default=10, help="timed runs per row (median reported)")
    p.add_argument("--rounds", type=int, default=3,
                   help="interleaved rounds: every row is timed --repeat times per round (median over all)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--naive-size", type=int, default=256,
                   help="size at which the unscheduled kernel is timed (it is very slow); 0 skips it")
    p.add_argument("--naive-repeat", type=int, default=3)
    p.add_argument("--best", default=",".join(map(str, BEST)),
                   help="MB,mi,nj of the best schedule: rows per tensorized block, register tile rows, "
                        "vector columns (nj a multiple of 16)")
    p.add_argument("--wait-idle", type=float, default=60.0,
                   help="wait up to this many seconds for the other processes to leave both cores idle")
    p.add_argument("--omp-wait-policy", default="passive", choices=["active", "passive", "env"],
                   help="OMP_WAIT_POLICY for torch's libgomp ('env': leave the environment alone)")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--no-json", action="store_true")
    p.add_argument("--quiet-trace", action="store_true", help="do not print the best schedule's trace")
    return p.parse_args(argv)


# -- the computation and its schedules ----------------------------------------------------------


def matmul_func(n: int):
    """The plain TVMScript matmul: C[i, j] = sum_k A[i, k] * B[k, j]."""
    from minitvm.script import tir as T

    @T.prim_func
    def matmul(A: T.Buffer((n, n), "float32"), B: T.Buffer((n, n), "float32"),
               C: T.Buffer((n, n), "float32")):
        for i, j, k in T.grid(n, n, n):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return matmul


def sched_default(n: int):
    """What ``minitvm.compile`` does to a kernel: ``tir.transform.DefaultCPUSchedule`` on the
    plain matmul (the rule-based default schedule, no hand work); returns the IRModule."""
    from minitvm import IRModule
    from minitvm.tir.transform import DefaultCPUSchedule

    return DefaultCPUSchedule()(IRModule({"main": matmul_func(n)}))


def sched_tiled(n: int, mi: int = 4, nj: int = 32):
    """Register tile mi x nj, k outside the tile, vectorize + unroll the tile, parallel rows."""
    from minitvm import tir

    sch = tir.Schedule(matmul_func(n))
    C = sch.get_block("C")
    i, j, k = sch.get_loops(C)
    i0, i1 = sch.split(i, [None, mi])
    j0, j1 = sch.split(j, [None, nj])
    sch.reorder(i0, j0, k, i1, j1)
    sch.vectorize(j1)  # loop kinds before decompose_reduction, as TVM requires
    sch.unroll(i1)
    sch.parallel(i0)
    init = sch.decompose_reduction(C, k)
    sch.vectorize(sch.get_loops(init)[-1])
    return sch


def sched_packed(n: int, mi: int = 8, nj: int = 32):
    """tiled + B packed into nj-wide column panels + a cache_write('local') accumulator."""
    from minitvm import tir

    sch = tir.Schedule(matmul_func(n))
    C = sch.get_block("C")
    Bp = sch.cache_read(C, 1, "global")
    sch.transform_layout(C, ("read", 1), lambda k, j: (j // nj, k, j % nj))
    CL = sch.cache_write(C, 0, "local")
    i, j, k = sch.get_loops(C)
    i0, i1 = sch.split(i, [None, mi])
    j0, j1 = sch.split(j, [None, nj])
    sch.reorder(i0, j0, k, i1, j1)
    sch.reverse_compute_at(CL, j0)
    sch.vectorize(j1)  # loop kinds before decompose_reduction, as TVM requires
    sch.unroll(i1)
    sch.parallel(i0)
    sch.vectorize(sch.get_loops(CL)[-1])
    sch.parallel(sch.get_loops(Bp)[0])
    sch.decompose_reduction(C, k)
    return sch


def register_microkernel(n: int, MB: int, mi: int, nj: int) -> str:
    """Register the tensor intrinsic ``best`` tensorizes with; returns its name.

    desc: what one i-block of MB rows computes against all of the packed B
          (C[MB, n] += A[MB, n] @ Bpacked[n/nj, n, nj]), in the loop order the schedule has.
    impl: the same work as a register-blocked micro-kernel: for each nj-wide B panel and each
          mi-row strip, load an mi x nj accumulator into registers, run k with mi broadcasts of A
          and nj/16 zmm loads of B per step (mi*nj/16 FMAs), store it back once.
    """
    from minitvm.script import tir as T
    from minitvm.tir.schedule.blockize import TensorIntrin

    NJ, K, N = n // nj, n, n

    @T.prim_func
    def desc(A: T.Buffer((MB, K), "float32"), B: T.Buffer((NJ, K, nj), "float32"),
             C: T.Buffer((MB, N), "float32")):
        for j0, k, i1, j1 in T.grid(NJ, K, MB, nj):
            with T.block("update"):
                vi = T.axis.spatial(MB, i1)
                vj = T.axis.spatial(N, j0 * nj + j1)
                vk = T.axis.reduce(K, k)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj // nj, vk, vj % nj]

    @T.prim_func
    def impl(A: T.Buffer((MB, K), "float32"), B: T.Buffer((NJ, K, nj), "float32"),
             C: T.Buffer((MB, N), "float32")):
        with T.block("micro"):
            acc = T.alloc_buffer((mi, nj), "float32", scope="local")
            for j0, it in T.grid(NJ, MB // mi):
                for i in T.unroll(mi):
                    for j in T.vectorized(nj):
                        acc[i, j] = C[it * mi + i, j0 * nj + j]
                for k in range(K):
                    for i in T.unroll(mi):
                        for j in T.vectorized(nj):
                            acc[i, j] = acc[i, j] + A[it * mi + i, k] * B[j0, k, j]
                for i in T.unroll(mi):
                    for j in T.vectorized(nj):
                        C[it * mi + i, j0 * nj + j] = acc[i, j]

    name = f"matmul_f32_n{n}_mb{MB}_{mi}x{nj}"
    TensorIntrin.register(name, desc, impl, override=True)
    return name


def sched_best(n: int, MB: int = 64, mi: int = 4, nj: int = 32):
    """Pack B into nj-wide panels, block i by MB (parallel), tensorize the rest with the
    micro-kernel above; zero C first (decompose_reduction) since the kernel accumulates."""
    from minitvm import tir

    if n % MB or MB % mi or n % nj or nj % 16:
        raise ValueError(f"best schedule needs MB | n, mi | MB, nj | n and 16 | nj (n={n}, MB={MB}, "
                         f"mi={mi}, nj={nj})")
    intrin = register_microkernel(n, MB, mi, nj)
    sch = tir.Schedule(matmul_func(n))
    C = sch.get_block("C")
    Bp = sch.cache_read(C, 1, "global")
    sch.transform_layout(C, ("read", 1), lambda k, j: (j // nj, k, j % nj))
    i, j, k = sch.get_loops(C)
    i0, i1 = sch.split(i, [None, MB])
    j0, j1 = sch.split(j, [None, nj])
    sch.reorder(i0, j0, k, i1, j1)
    sch.parallel(i0)  # loop kinds before decompose_reduction, as TVM requires
    sch.parallel(sch.get_loops(Bp)[0])
    init = sch.decompose_reduction(C, j0)
    sch.tensorize(j0, intrin)
    sch.vectorize(sch.get_loops(init)[-1])
    return sch


#: the register tile of the ``vectorized`` / ``tensorized`` pair: mi rows x nj columns (nj/16 zmm per
#: row, mi*nj/16 accumulators), k split by kc (the micro-kernel's k steps per call)
FMA_TILE = (8, 32, 256)


def sched_register_tile(n: int, mi: int = 8, nj: int = 32, kc: int = 256, tensorize: bool = False):
    """An mi x nj register tile with k outside it (split by kc), parallel rows; the tile either
    vectorized + unrolled (``vectorized``: LLVM keeps C in registers if it can) or replaced by
    the AVX-512 FMA micro-kernel ``tir.tensor_intrin.x86.avx512_fma_tile`` (``tensorized``: a
    local accumulator of zmm registers and explicit ``llvm.fma`` calls)."""
    from minitvm import tir
    from minitvm.tir.tensor_intrin import x86

    kc = min(kc, n)
    if n % mi or n % nj or n % kc:
        raise ValueError(f"register tile needs mi | n, nj | n and kc | n (n={n}, mi={mi}, nj={nj}, kc={kc})")
    sch = tir.Schedule(matmul_func(n))
    C = sch.get_block("C")
    i, j, k = sch.get_loops(C)
    i0, i1 = sch.split(i, [None, mi])
    j0, j1 = sch.split(j, [None, nj])
    k0, k1 = sch.split(k, [None, kc])
    sch.reorder(i0, j0, k0, k1, i1, j1)
    sch.parallel(i0)  # loop kinds before decompose_reduction, as TVM requires
    if not tensorize:
        sch.unroll(i1)
        sch.vectorize(j1)
    init = sch.decompose_reduction(C, k0)
    sch.vectorize(sch.get_loops(init)[-1])
    if tensorize:
        sch.tensorize(k1, x86.avx512_fma_tile(mi, nj, kc))
    return sch


def emulated(feature: str, how: str) -> str:
    """"" on a CPU with ``feature``; else a note for a tensorized row: without the instruction
    the intrinsic's step is emulated by LLVM with narrower instructions (``how``)."""
    from minitvm.runtime.cpu import host_cpu_features

    if feature in host_cpu_features():
        return ""
    return f"; this CPU lacks {feature}: LLVM emulates the intrinsic with narrower instructions ({how})"


# -- int8: u8 x s8 -> int32, the computation AVX-512 VNNI's vpdpbusd exists for -----------------

#: the register tile of the int8 ``vectorized`` / ``tensorized`` pair: mi rows x nj int32 columns
#: (nj/16 zmm per row, mi*nj/16 accumulators).  Tiles compared at 1024^3 (tensorized / vectorized,
#: GOP/s, machine shared with other work): 8x32 1040 / 117, 4x64 935 / 115, 4x32 810 / 90,
#: 2x128 270 / 85.  8x32 on the idle machine (run.py --only tensorize): 1928 / 401, torch._int_mm 1926.
INT8_TILE = (8, 32)


def int8_matmul_func(n: int):
    """C[i, j] = sum_k int32(A[i, k]) * int32(W[j, k]) with A uint8 and W int8 given packed as TVM's
    VNNI schedules pack it, ``B[j // 16, k // 4, j % 16, k % 4]`` (:func:`pack_int8_weight`): the
    4 k-values of one output column are 4 adjacent bytes, one int32 word."""
    from minitvm.script import tir as T

    @T.prim_func
    def matmul_u8s8(A: T.Buffer((n, n), "uint8"), B: T.Buffer((n // 16, n // 4, 16, 4), "int8"),
                    C: T.Buffer((n, n), "int32")):
        for i, j, k in T.grid(n, n, n):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0
                C[vi, vj] = C[vi, vj] + T.Cast("int32", A[vi, vk]) * T.Cast(
                    "int32", B[vj // 16, vk // 4, vj % 16, vk % 4])

    return matmul_u8s8


def pack_int8_weight(w):
    """W (n, k) int8 as [n/16, k/4, 16, 4] (the layout :func:`int8_matmul_func` takes)."""
    import numpy as np

    n, k = w.shape
    return np.ascontiguousarray(w.reshape(n // 16, 16, k // 4, 4).transpose(0, 2, 1, 3))


def sched_int8_tile(n: int, mi: int = 8, nj: int = 32, tensorize: bool = False):
    """An mi x nj register tile of the int8 matmul, k outside it in steps of 4, parallel rows:
    ``i0, j0, k0, i1, j1, j2(16), k1(4)``.  ``vectorized``: i1, j1, k1 unrolled and j2 vectorized
    (LLVM pairs the products into ``vpdpwssd``, VNNI's int16 dot product, after widening the bytes);
    ``tensorized``: the 16 x 4 (j2, k1) tile is ``dot_16x4_vnni``, one ``vpdpbusd``."""
    from minitvm import tir
    from minitvm.tir.tensor_intrin import x86

    if n % mi or n % nj or nj % 16 or n % 4:
        raise ValueError(f"int8 tile needs mi | n, nj | n, 16 | nj and 4 | n (n={n}, mi={mi}, nj={nj})")
    sch = tir.Schedule(int8_matmul_func(n))
    C = sch.get_block("C")
    i, j, k = sch.get_loops(C)
    i0, i1 = sch.split(i, [None, mi])
    j0, j1, j2 = sch.split(j, [None, nj // 16, 16])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i0, j0, k0, i1, j1, j2, k1)
    sch.parallel(i0)  # loop kinds before decompose_reduction, as TVM requires
    sch.unroll(i1)
    sch.unroll(j1)
    if not tensorize:
        sch.unroll(k1)
        sch.vectorize(j2)
    init = sch.decompose_reduction(C, k0)
    sch.vectorize(sch.get_loops(init)[-1])
    if tensorize:
        sch.tensorize(j2, x86.VNNI_DOT_16x4_INTRIN)
    return sch


def _torch_peer() -> Any:
    """torch set up as the peer row (2 threads, no autograd), or None with a note if not installed."""
    try:
        import torch
    except ImportError:
        print("torch not installed: no torch row", file=sys.stderr)
        return None
    torch.set_num_threads(2)
    torch.set_grad_enabled(False)
    return torch


def measure_int8(n: int, *, repeat: int = 10, rounds: int = 3, warmup: int = 2, numpy_repeat: int = 3,
                 tile: tuple[int, int] = INT8_TILE, use_torch: bool = True) -> list[Row]:
    """Rows for the u8 x s8 -> int32 matmul: numpy (an int32 matmul of the same values: numpy has
    no int8 BLAS, so it is slow and timed alone, ``numpy_repeat`` runs), torch (``torch._int_mm``,
    its CPU int8 matmul) and the ``tile`` vectorized and tensorized with ``dot_16x4_vnni``, timed
    in interleaved rounds.  Values cover the full u8 / s8 ranges; every result is checked against
    numpy exactly first (AssertionError naming the row if it differs)."""
    import numpy as np

    import minitvm

    ops = 2.0 * n ** 3
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (n, n)).astype(np.uint8)
    w = rng.integers(-128, 128, (n, n)).astype(np.int8)  # W[j, k]: output column j
    packed = pack_int8_weight(w)
    a32, w32t = a.astype(np.int32), w.astype(np.int32).T  # int32 copies, made once
    ref = np.empty((n, n), np.int32)
    numpy_call = lambda: np.matmul(a32, w32t, out=ref)  # noqa: E731
    numpy_timing = time_fn(numpy_call, numpy_repeat, warmup=1)  # fills ref

    def checked(name: str, out) -> float:
        if not np.array_equal(out, ref):
            raise AssertionError(f"{name}: the int8 matmul differs from numpy's int32 matmul "
                                 f"(max abs err {int(np.max(np.abs(out.astype(np.int64) - ref)))})")
        return 0.0

    fns: dict[str, Callable[[], Any]] = {}
    errors: dict[str, float] = {}
    notes = {"numpy": f"np.matmul of int32 copies (numpy has no int8 GEMM), {numpy_repeat} runs timed alone"}
    torch = _torch_peer() if use_torch else None
    if torch is not None:
        ta, tw = torch.from_numpy(a), torch.from_numpy(w).t()
        fns["torch"] = lambda: torch._int_mm(ta, tw)
        errors["torch"] = checked("torch", fns["torch"]().numpy())
        notes["torch"] = "torch._int_mm (u8 x s8 -> int32 on the CPU)"
    for variant, tensorize in (("vectorized", False), ("tensorized", True)):
        name = f"minitvm int8 {variant}"
        lib = minitvm.build(sched_int8_tile(n, *tile, tensorize=tensorize).mod)
        f, out = lib[lib.entry_name], np.zeros((n, n), np.int32)
        f(a, packed, out)
        errors[name] = checked(name, out)
        fns[name] = functools.partial(f, a, packed, out)
        notes[name] = "{}x{} register tile, k by 4, ".format(*tile) + (
            "vectorize+unroll (LLVM: vpdpwssd with VNNI)" if not tensorize else
            "tensorize(dot_16x4_vnni): vpdpbusd" + emulated("avx512vnni", "byte multiplies and adds"))
    timings = time_interleaved(fns, repeat, rounds, warmup)
    rows = [Row("numpy", numpy_timing, ops, 0.0, notes["numpy"])]
    rows += [Row(name, t, ops, errors.get(name), notes.get(name, "")) for name, t in timings.items()]
    return rows


# -- running ----------------------------------------------------------------------------------

#: minitvm rows by variant name: (IRModule builder taking (n, best=(MB, mi, nj)), note)
VARIANTS: dict[str, tuple[Callable[[int, tuple[int, int, int]], Any], Callable[[tuple[int, int, int]], str]]] = {
    "default": (lambda n, best: sched_default(n),
                lambda best: "tir.transform.DefaultCPUSchedule on the plain matmul (what minitvm.compile does)"),
    "tiled": (lambda n, best: sched_tiled(n).mod,
              lambda best: "4x32 tile, vectorize+unroll, parallel i; C accumulated in place"),
    "packed": (lambda n, best: sched_packed(n).mod,
               lambda best: "8x32 tile + packed B + cache_write(local) (the classic TVM recipe)"),
    "vectorized": (lambda n, best: sched_register_tile(n, *FMA_TILE).mod,
                   lambda best: "{}x{} register tile, k split by {}, vectorize+unroll (same tile as tensorized)"
                   .format(*FMA_TILE)),
    "tensorized": (lambda n, best: sched_register_tile(n, *FMA_TILE, tensorize=True).mod,
                   lambda best: "{}x{} register tile, k split by {}, tensorize(avx512_fma_tile)".format(*FMA_TILE)
                   + emulated("avx512f", "two 8-lane ymm FMAs per 16-lane step")),
    "best": (lambda n, best: sched_best(n, *best).mod,
             lambda best: f"packed B + tensorized {best[0]}-row block, {best[1]}x{best[2]} register micro-kernel"),
}


def _check(name: str, got, want, k: int) -> float:
    import numpy as np

    err = float(np.max(np.abs(got - want)))
    # inputs in [0, 1): |C| <= k; float32 sums of k terms round to ~k * 2^-24 * sqrt-ish
    tol = 1e-5 * k + 1e-4
    if not err <= tol:
        raise AssertionError(f"{name}: result differs from numpy (max abs err {err:.3g} > {tol:.3g})")
    return err


def measure(n: int, variants: Iterable[str] = ("default", "tiled", "packed", "best"), *, repeat: int = 10,
            rounds: int = 3, warmup: int = 2, naive_size: int | None = 256, naive_repeat: int = 3,
            best: tuple[int, int, int] = BEST, use_torch: bool = True) -> list[Row]:
    """Rows for numpy, torch, the unscheduled kernel (timed alone at ``naive_size``, it is slow;
    0/None skips it) and each minitvm ``variant``, all timed in interleaved rounds.  Every
    minitvm result is checked against numpy first (AssertionError naming the row if wrong)."""
    import numpy as np

    import minitvm

    flops = 2.0 * n ** 3
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    c = np.empty((n, n), np.float32)
    ref = a @ b

    # the functions to time, in table order; each one writes its own output array
    fns: dict[str, Callable[[], Any]] = {"numpy": lambda: np.matmul(a, b, out=c)}
    errors: dict[str, float] = {}
    torch = _torch_peer() if use_torch else None
    if torch is not None:
        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.empty((n, n))
        fns["torch"] = lambda: torch.matmul(ta, tb, out=tc)
        fns["torch"]()
        errors["torch"] = float(np.max(np.abs(tc.numpy() - ref)))

    first_call: dict[str, float] = {}

    def compiled(name: str, mod, size: int) -> Callable[[], Any]:
        """Build, check against numpy (timing that first call), return a no-argument call of the kernel."""
        lib = minitvm.build(mod)
        f = lib[lib.entry_name]  # the one kernel, exported under its global_symbol
        x, y = (a, b) if size == n else (a[:size, :size].copy(), b[:size, :size].copy())
        out = np.zeros((size, size), np.float32)
        t0 = time.perf_counter()
        f(x, y, out)
        first_call[name] = time.perf_counter() - t0
        errors[name] = _check(name, out, ref if size == n else x @ y, size)
        return lambda: f(x, y, out)

    naive = None
    if naive_size:
        ns = naive_size
        call = compiled("minitvm naive", minitvm.tir.Schedule(matmul_func(ns)).mod, ns)
        # the checked first call is a sample too: at 1024^3 one call takes ~10 s
        extra = time_fn(call, naive_repeat - 1, warmup=0).samples if naive_repeat > 1 else []
        naive = Row("minitvm naive", Timing.of([first_call["minitvm naive"], *extra]), 2.0 * ns ** 3,
                    errors["minitvm naive"], comparable=(ns == n),
                    note=f"unscheduled kernel, timed at {ns}^3 ({naive_repeat} run{'s' * (naive_repeat != 1)})"
                         + ("" if ns == n else f", not {n}^3: GFLOP/s only, no ratios"))
    notes = {}
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"matmul.measure: unknown variant {v!r}; known: {', '.join(VARIANTS)}")
        build_mod, note = VARIANTS[v]
        fns[f"minitvm {v}"] = compiled(f"minitvm {v}", build_mod(n, best), n)
        notes[f"minitvm {v}"] = note(best)

    timings = time_interleaved(fns, repeat, rounds, warmup)
    rows = [Row(name, t, flops, errors.get(name), notes.get(name, "")) for name, t in timings.items()]
    if naive is not None:
        rows.insert(2 if "torch" in timings else 1, naive)
    return rows


def main(argv: list[str] | None = None) -> list[Row]:
    args = parse_args(argv)
    setup_environment(None if args.omp_wait_policy == "env" else args.omp_wait_policy)
    n = args.size
    best = tuple(int(x) for x in args.best.split(","))
    busy = wait_until_idle(args.wait_idle)
    rows = measure(n, repeat=args.repeat, rounds=args.rounds, warmup=args.warmup, naive_size=args.naive_size,
                   naive_repeat=args.naive_repeat, best=best, use_torch=not args.no_torch)

    env = environment_info()
    blas = env.get("blas", {})
    print(f"\nmatmul {n}x{n}x{n} float32 | cpu {env.get('llvm_cpu')} x{env.get('cpus')} | "
          f"numpy {env.get('numpy')} BLAS kernel {blas.get('corename', '?')} | torch "
          f"{env.get('torch', '-')} threads {env.get('torch_threads', '-')} | OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY')} | {args.rounds} rounds x {args.repeat} runs (median) | "
          f"other load at start {busy:.0%} of 2 cores")
    if busy > 0.1:
        print("warning: other processes were using the CPU when timing started; numbers are noisy "
              "(numpy's OpenBLAS suffers most when one of its 2 threads loses its core)")
    if os.environ.get("OPENBLAS_CORETYPE"):
        print(f"warning: OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} is set: numpy runs that "
              "kernel; unset it (and OPENBLAS_L2_SIZE) for this command to compare fairly")
    text = print_table(rows, baselines=("numpy", "torch"))
    trace = str(sched_best(n, *best).trace)
    if not args.quiet_trace:
        from minitvm.tir.schedule.blockize import TensorIntrin

        intrin = TensorIntrin.get(f"matmul_f32_n{n}_mb{best[0]}_{best[1]}x{best[2]}")
        print("\n# best schedule (copy-paste; `mod` = the matmul above):")
        print(trace)
        print("\n# its tensor intrinsic's implementation (register it with "
              "tir.TensorIntrin.register(name, desc, impl)):")
        print(intrin.impl.script())
    if not args.no_json:
        path = write_json("matmul", rows, env=env,
                          config={"size": n, "repeat": args.repeat, "rounds": args.rounds, "warmup": args.warmup,
                                  "other_load_at_start": busy, "naive_size": args.naive_size,
                                  "best": dict(zip(("MB", "mi", "nj"), best)),
                                  "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")},
                          extra={"table": text, "best_trace": trace})
        print(f"\nwrote {path}")
    return rows


if __name__ == "__main__":
    main()
