"""Per-token overhead of a decode step with symbolic shapes: microseconds per call of a
transformer-block-like function whose query length ``n`` and cache length ``m`` are symbolic,
called at ``n = 1`` (one new token) for a few cache lengths, through the native entry (one
native call: sizes computed at entry, arena grown when needed) and through the bytecode
interpreter (one Python step per instruction); for reference, the same step compiled for
fixed shapes (``static``: ``n = 1`` and that ``m`` in the types, an arena planned at compile time).

    .venv/bin/python benchmarks/decode_overhead.py [--width 64] [--lengths 16,256] [--repeat 200]

Both paths run the same executable and the same machine code for the kernels
(``vm.invoke_bytecode`` is the bytecode path), interleaved in rounds; ``saved`` is bytecode minus
native, the Python work the native entry removes per token.  Medians; other processes share the
2 cores (their load is printed).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import busy_fraction, format_table, time_interleaved  # noqa: E402


def _decode_step(width: int, static: tuple[int, int] | None = None) -> Any:
    """x (n, d) attends to a cache k, v (m, d); rms-norm, attention, out-projection, a SiLU MLP,
    two residual adds -- a decode step of one layer.  ``static``: (n, m) fixed instead."""
    from minitvm import relax
    from minitvm.relax import op
    from minitvm.tir import Var

    n, m = static or (Var("n", "int64"), Var("m", "int64"))

    def t(*shape: Any) -> relax.Var:
        return relax.TensorStructInfo(shape, "float32")

    x, k, v = relax.Var("x", t(n, width)), relax.Var("k", t(m, width)), relax.Var("v", t(m, width))
    wq, wo = relax.Var("wq", t(width, width)), relax.Var("wo", t(width, width))
    w1, w2 = relax.Var("w1", t(width, 4 * width)), relax.Var("w2", t(4 * width, width))
    g = relax.Var("g", t(width))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, k, v, wq, wo, w1, w2, g]):
        with bb.dataflow():
            h = bb.emit(op.nn.rms_norm(x, g, axes=-1))
            s = bb.emit(op.matmul(op.matmul(h, wq), op.permute_dims(k, [1, 0])))
            a = bb.emit(op.matmul(op.nn.softmax(s, axis=-1), v))
            y = bb.emit(op.add(x, op.matmul(a, wo)))
            f = bb.emit(op.matmul(op.nn.silu(op.matmul(op.nn.rms_norm(y, g, axes=-1), w1)), w2))
            out = bb.emit_output(op.add(y, f))
        bb.emit_func_output(out)
    return bb.get()


def measure(width: int, lengths: list[int], repeat: int, rounds: int) -> list[list[str]]:
    import numpy as np

    import minitvm
    from minitvm import relax

    ex = minitvm.compile(_decode_step(width))
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    cpu = minitvm.cpu()
    entry = vm.native_entries.get("main")
    if entry is None:
        raise SystemExit(f"no native entry: {ex.native_plans().get('main')}")
    rng = np.random.default_rng(0)
    d = width
    weights = [(rng.standard_normal(s) / np.sqrt(s[0])).astype("float32") for s in [(d, d), (d, d), (d, 4 * d),
                                                                                  (4 * d, d)]]
    g = minitvm.nd.array(np.ones(d, "float32"))
    weights = [minitvm.nd.array(w) for w in weights] + [g]
    main = vm["main"]
    rows = []
    for m in lengths:
        args = [minitvm.nd.array(rng.standard_normal(s).astype("float32")) for s in [(1, d), (m, d), (m, d)]] + weights
        fixed = relax.VirtualMachine(minitvm.compile(_decode_step(width, (1, m))), cpu)["main"]
        assert np.array_equal(main(*args).numpy(), vm.invoke_bytecode("main", *args).numpy())
        # the static build's schedules differ (a known row count tiles otherwise): sums in another order
        np.testing.assert_allclose(main(*args).numpy(), fixed(*args).numpy(), rtol=1e-5, atol=1e-5)
        t = time_interleaved({"native": lambda a=args: main(*a),
                              "bytecode": lambda a=args: vm.invoke_bytecode("main", *a),
                              "static": lambda a=args, f=fixed: f(*a)}, repeat, rounds, warmup=20)
        native, bytecode, static = (t[k].median * 1e6 for k in ("native", "bytecode", "static"))
        rows.append([f"decode step, d={d}", "1", str(m), f"{native:.1f}", f"{bytecode:.1f}", f"{bytecode - native:.1f}",
                     f"{bytecode / native:.2f}x", f"{static:.1f}", f"{native / static:.2f}x",
                     str(len(ex.vm_functions["main"].instructions)), str(len(entry.plan.calls))])
        print(f"  m={m}: native {native:.1f} us, bytecode {bytecode:.1f} us", flush=True)
    return rows


HEAD = ["function", "n", "m (cache)", "native us/call", "bytecode us/call", "saved us", "bytecode/native",
        "static native us", "native/static", "instructions", "kernel calls"]


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--lengths", default="16,256", help="comma list of cache lengths m")
    p.add_argument("--repeat", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    load = busy_fraction()
    rows = measure(args.width, [int(s) for s in args.lengths.split(",") if s.strip()], args.repeat, args.rounds)
    after = busy_fraction()
    text = (f"decode-step overhead with symbolic shapes, medians of {args.rounds} x {args.repeat} interleaved calls "
            f"(other load: {load:.0%} at start, {after:.0%} at end)\n" + format_table(HEAD, rows, left=1))
    print("\n" + text)
    return text


if __name__ == "__main__":
    main()
