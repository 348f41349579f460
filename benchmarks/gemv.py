"""Batch-1 GEMV (a decode step's linear layer, ``y = W @ x``): how close minitvm's default
schedule streams the weights to this machine's memory bandwidth, for float32 weights and for
int8 / packed int4 ones decoded inside the kernel (``relax.transform.QuantizeLinearWeights``).

    .venv/bin/python benchmarks/gemv.py                 # N = K = 2048
    .venv/bin/python benchmarks/gemv.py --n 4096 --k 4096 --repeat 20

Prints the machine's load, its bandwidth (a large numpy copy: bytes read + bytes written per
second; and the rate numpy reads 256 MiB, which bounds a GEMV), then one row per kernel: time,
weight GB/s, that as a fraction of the read bandwidth, and time against numpy's float32 matvec.
Two columns of each: "hot" calls the kernel on one weight matrix again and again (2048^2
float32 is 16 MiB: it can stay in a 32 MiB L3), "cold" cycles through copies of the weights
that together exceed ``--cold-mib`` so that every call reads them from memory, as a model's
layers one after another do.  Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from common import Row, Timing, format_table, setup_environment, time_fn, wait_until_idle, write_json

import minitvm
from minitvm import te
from minitvm.relax.transform.quantize_weights import (
    _nt_matmul_int4_te,
    _nt_matmul_int8_te,
    pack_int4,
    quantize_int8,
    unpack_int4,
)
from minitvm.tir.transform import DefaultCPUSchedule


def copy_bandwidth(mib: int = 256, repeat: int = 5) -> float:
    """GB/s of ``np.copyto`` between two ``mib`` MiB arrays (read + written bytes)."""
    src = np.ones(mib * 2**20 // 8)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    return 2 * src.nbytes / time_fn(lambda: np.copyto(dst, src), repeat=repeat, warmup=1).median / 1e9


def read_bandwidth(mib: int = 256, repeat: int = 5) -> float:
    """GB/s at which numpy reads ``mib`` MiB: the faster of a one-thread ``bitwise_or.reduce``
    over 64-bit words and numpy's float32 matvec (OpenBLAS sgemv on its threads, which stalls
    when another process holds a core) -- the rate a GEMV's weights can stream at here."""
    words = np.ones(mib * 2**20 // 8, "uint64")
    w = words.view("float32").reshape(-1, 4096)
    x = np.ones(4096, "float32")
    reduce_t = time_fn(lambda: np.bitwise_or.reduce(words), repeat=repeat, warmup=1).median
    matvec_t = time_fn(lambda: w @ x, repeat=repeat, warmup=1).median
    return words.nbytes / min(reduce_t, matvec_t) / 1e9


def _build(func):
    mod = DefaultCPUSchedule()(minitvm.IRModule({"main": func}))
    return minitvm.build(mod, target="llvm")["main"]


def kernels(n: int, k: int, group_size: int, rng: np.random.Generator) -> dict[str, tuple]:
    """name -> (compiled kernel, [weight arrays], weight bytes, the float weights it stands for)."""
    w = rng.standard_normal((n, k)).astype("float32")
    x = te.placeholder((1, k), "float32", name="x")
    r = te.reduce_axis((0, k), "k")
    wf = te.placeholder((n, k), "float32", name="w")
    fp32 = te.compute((1, n), lambda i, j: te.sum(x[i, r] * wf[j, r], axis=r), name="NT_matmul")
    q, scale = quantize_int8(w)
    q8 = [te.placeholder(a.shape, str(a.dtype)) for a in (q, scale)]
    packed, scales = pack_int4(w, group_size)
    q4 = [te.placeholder(a.shape, str(a.dtype)) for a in (packed, scales)]
    return {
        "fp32": (_build(te.create_prim_func([x, wf, fp32])), [w], w.nbytes, w),
        "int8": (_build(te.create_prim_func([x, *q8, _nt_matmul_int8_te(x, *q8, minitvm.tir.IntImm("int8", 0))])),
                 [q, scale], q.nbytes + scale.nbytes, q * scale[:, None]),
        f"int4 g{group_size}": (_build(te.create_prim_func([x, *q4, _nt_matmul_int4_te(x, *q4, group_size)])),
                                [packed, scales], packed.nbytes + scales.nbytes,
                                unpack_int4(packed, scales, group_size)),
    }


def _timed(call_with, copies: list, repeat: int) -> Timing:
    """Median seconds per call, cycling through ``copies`` (one call per copy per sample)."""
    state = {"i": 0}

    def one() -> None:
        call_with(copies[state["i"] % len(copies)])
        state["i"] += 1
    return time_fn(one, repeat=repeat * len(copies), warmup=len(copies))


def measure(n: int, k: int, group_size: int, repeat: int, cold_mib: int) -> list[Row]:
    """A row per kernel (and numpy's): hot timing, and the cold one in ``extra``."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, k)).astype("float32")
    xn, y = minitvm.nd.array(x), minitvm.nd.empty((1, n), "float32")
    rows = []
    for name, (fn, arrays, nbytes, dense) in kernels(n, k, group_size, rng).items():
        hot = [[minitvm.nd.array(a) for a in arrays]]
        fn(xn, *hot[0], y)
        err = float(np.abs(y.numpy() - x @ dense.T).max())
        cold = hot + [[minitvm.nd.array(a.copy()) for a in arrays]
                      for _ in range(max(1, cold_mib * 2**20 // nbytes))]
        t_hot = _timed(lambda ws, fn=fn: fn(xn, *ws, y), hot, repeat)
        t_cold = _timed(lambda ws, fn=fn: fn(xn, *ws, y), cold, repeat)
        rows.append(Row(f"minitvm {name}", t_hot, flops=2 * n * k, max_abs_err=err,
                        extra={"bytes": nbytes, "cold_median": t_cold.median}))
        if name == "fp32":  # numpy's float32 matvec (OpenBLAS sgemv) on the same weights
            w_np = [dense] + [dense.copy() for _ in range(len(cold) - 1)]
            numpy_hot = _timed(lambda w: w @ x[0], w_np[:1], repeat)
            numpy_cold = _timed(lambda w: w @ x[0], w_np, repeat)
            rows.append(Row("numpy fp32 (w @ x)", numpy_hot, flops=2 * n * k,
                            extra={"bytes": dense.nbytes, "cold_median": numpy_cold.median}))
    return rows


def main(argv: list[str] | None = None) -> list[Row]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--k", type=int, default=2048)
    p.add_argument("--group-size", type=int, default=32)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--cold-mib", type=int, default=128, help="weights cycled through for the cold column")
    p.add_argument("--wait", type=float, default=30.0, help="seconds to wait for the other processes to go quiet")
    args = p.parse_args(argv)
    setup_environment()
    busy = wait_until_idle(timeout=args.wait)
    load = os.getloadavg()
    copy_bw, bandwidth = copy_bandwidth(), read_bandwidth()
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"other processes busy {busy:.0%} of the CPU just before the run (waited up to {args.wait:.0f} s)")
    print(f"memory bandwidth: numpy copy of 256 MiB {copy_bw:.1f} GB/s (read + write); numpy reading 256 MiB "
          f"{bandwidth:.1f} GB/s -- 'of bw' below is a fraction of the read one\n")
    rows = measure(args.n, args.k, args.group_size, args.repeat, args.cold_mib)
    numpy_row = next(r for r in rows if r.name.startswith("numpy"))
    head = ["GEMV 1 x {} x {}".format(args.k, args.n), "weight MiB", "hot", "GB/s", "of bw", "cold", "GB/s",
            "of bw", "vs numpy (cold)", "max|err|"]
    lines = []
    for r in rows:
        b, cold = r.extra["bytes"], r.extra["cold_median"]
        lines.append([r.name, f"{b / 2**20:.1f}", f"{r.timing.median * 1e6:.0f} us", f"{b / r.timing.median / 1e9:.1f}",
                      f"{b / r.timing.median / 1e9 / bandwidth:.2f}", f"{cold * 1e6:.0f} us", f"{b / cold / 1e9:.1f}",
                      f"{b / cold / 1e9 / bandwidth:.2f}", f"{numpy_row.extra['cold_median'] / cold:.2f}x",
                      "" if r.max_abs_err is None else f"{r.max_abs_err:.1e}"])
    print(format_table(head, lines))
    after = os.getloadavg()
    print(f"\nload average after: {after[0]:.2f} (a busy second core halves the parallel rows: rerun when high)")
    write_json("gemv", rows, config={"n": args.n, "k": args.k, "group_size": args.group_size,
                                     "copy_gbs": copy_bw, "read_gbs": bandwidth, "loadavg": list(load), "busy": busy,
                                     "time": time.time()})
    return rows


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
