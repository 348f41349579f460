"""Dense layers ``act(x @ W.T + b)`` at the row counts of a prompt (1-512), as users compile them:
a Relax function through ``minitvm.compile`` with the weights as parameters (as
``relax.frontend.nn.Linear`` exports them), once per static row count and once with a symbolic
row count ``n`` (one executable for every prompt length), against numpy and torch in one run.

    .venv/bin/python benchmarks/dense.py [--rows 1,16,64,128,256,512] [--layers 256x256,256x1024:gelu,...]
                                         [--repeat 10] [--rounds 3] [--threads N] [--stat min] [--no-json]

Per row of the table: the time of numpy (``x @ w.T + b``, then the activation with numpy /
scipy), torch (``F.linear`` + the activation, 2 threads), minitvm static and minitvm symbolic;
GFLOP/s (2 * rows * K * N per call), their ratios to numpy and torch (>1: minitvm faster) and
the fraction of the measured peak: numpy's 1024^3 matmul in this run (OpenBLAS, both cores).
Every minitvm result is checked against torch first.  Other processes share the 2 cores: the
table's title gives their load at the start and over the run; rerun rows that matter.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import LoadMeter, Row, busy_fraction, format_table, setup_environment, time_fn, time_interleaved, write_json  # noqa: E402

ROWS = (1, 16, 64, 128, 256, 512)
#: K x N[:activation]: BERT-mini's attention projection, its MLP up (GELU) and down, a ViT-tiny-
#: like 768-wide layer (SiLU, as a Llama MLP's gate)
LAYERS = ("256x256", "256x1024:gelu", "1024x256", "768x768:silu")


def compiled(mod: Any) -> Any:
    import minitvm
    from minitvm import relax

    return relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())["main"]


def numpy_act(act: str | None) -> Any:
    import numpy as np

    if act == "gelu":
        from scipy.special import erf

        return lambda y: y * (0.5 + 0.5 * erf(y * np.float32(0.5 ** 0.5)))
    if act == "silu":
        return lambda y: y / (1 + np.exp(-y))
    return lambda y: y


def measure_layer(k: int, n: int, act: str | None, rows_list: list[int], torch: Any, repeat: int,
                  rounds: int) -> list[dict[str, Any]]:
    """Time one layer at every row count: numpy, torch, minitvm static (one compile per row
    count) and symbolic (one compile for all); results checked against torch."""
    import numpy as np

    import minitvm
    from minitvm import tir

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    from minitvm.testing.nn_models import linear_module

    symbolic = compiled(linear_module(tir.Var("n", "int64"), k, n, act))
    tw, tb = torch.from_numpy(w), torch.from_numpy(b)
    tact = {"gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu}.get(act, lambda y: y)
    nact = numpy_act(act)
    out = []
    for rows in rows_list:
        x = rng.standard_normal((rows, k)).astype("float32")
        tx = torch.from_numpy(x)
        want = tact(torch.nn.functional.linear(tx, tw, tb)).numpy()
        static = compiled(linear_module(rows, k, n, act))
        args = [minitvm.nd.array(a) for a in (x, w, b)]
        errors = {}
        for name, f in (("static", static), ("symbolic", symbolic)):
            got = f(*args).numpy()
            errors[name] = float(np.max(np.abs(got - want)))
            if not np.allclose(got, want, rtol=1e-3, atol=1e-3):
                raise AssertionError(f"dense {k}->{n} {act or ''} at {rows} rows, minitvm {name}: differs from "
                                     f"torch (max abs err {errors[name]:.3g})")
        fns = _calls(x, w, b, nact, tx, tw, tb, tact, torch, static, symbolic, args)
        timings = time_interleaved(fns, repeat, rounds, warmup=2, min_sample_seconds=0.002,
                                   side_by_side=("static", "symbolic"))
        out.append({"layer": f"{k}->{n}" + (f" {act}" if act else ""), "rows": rows, "flops": 2.0 * rows * k * n,
                    "timings": timings, "errors": errors})
    return out


def _calls(x, w, b, nact, tx, tw, tb, tact, torch, static, symbolic, args) -> dict[str, Any]:
    """The four no-argument calls to time, bound to this row's arrays."""
    return {"numpy": lambda: nact(x @ w.T + b), "torch": lambda: tact(torch.nn.functional.linear(tx, tw, tb)),
            "static": lambda: static(*args), "symbolic": lambda: symbolic(*args)}


def table(results: list[dict[str, Any]], peak: float, stat: str = "median") -> tuple[list[str], list[list[str]]]:
    """The printed table; ``stat`` picks each row's median or best (min) sample."""
    head = ["layer", "rows", "numpy us", "torch us", "static us", "symbolic us", "static GF/s", "symb GF/s",
            "static/np", "symb/np", "static/torch", "symb/torch", "static %peak", "symb %peak"]
    lines = []
    for r in results:
        t = {name: getattr(tm, stat) for name, tm in r["timings"].items()}
        gf = {name: r["flops"] / s / 1e9 for name, s in t.items()}
        times = (f"{t[x] * 1e6:.1f}" for x in ("numpy", "torch", "static", "symbolic"))
        lines.append([r["layer"], str(r["rows"]), *times,
                      f"{gf['static']:.1f}", f"{gf['symbolic']:.1f}",
                      f"{t['numpy'] / t['static']:.2f}x", f"{t['numpy'] / t['symbolic']:.2f}x",
                      f"{t['torch'] / t['static']:.2f}x", f"{t['torch'] / t['symbolic']:.2f}x",
                      f"{100 * gf['static'] / peak:.0f}", f"{100 * gf['symbolic'] / peak:.0f}"])
    return head, lines


def measured_peak() -> float:
    """GFLOP/s of numpy's 1024^3 float32 matmul (best of 5): what this machine's BLAS reaches."""
    import numpy as np

    a = np.random.default_rng(0).random((1024, 1024), dtype=np.float32)
    c = np.empty_like(a)
    return 2 * 1024 ** 3 / time_fn(lambda: np.matmul(a, a, out=c), repeat=5, warmup=2).min / 1e9


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default=",".join(map(str, ROWS)), help="comma list of row counts")
    p.add_argument("--layers", default=",".join(LAYERS), help="comma list of KxN[:gelu|silu]")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=0,
                   help="threads of minitvm, numpy's BLAS and torch (default: each library's own)")
    p.add_argument("--stat", choices=("median", "min"), default="median",
                   help="per row, the median or the best sample (min: less hurt by other processes' bursts)")
    p.add_argument("--no-json", action="store_true")
    args = p.parse_args(argv)
    if args.threads:  # before minitvm's pool starts and numpy's BLAS loads
        for var in ("MINITVM_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    env = setup_environment()
    import torch

    torch.set_num_threads(args.threads or 2)
    torch.set_grad_enabled(False)
    rows_list = [int(r) for r in args.rows.split(",") if r.strip()]
    load = busy_fraction()
    meter = LoadMeter()
    peak = measured_peak()
    results = []
    for spec in args.layers.split(","):
        shape, _, act = spec.strip().partition(":")
        k, n = (int(v) for v in shape.split("x"))
        results += measure_layer(k, n, act or None, rows_list, torch, args.repeat, args.rounds)
    during = meter.fraction()
    head, lines = table(results, peak, args.stat)
    what = "medians" if args.stat == "median" else "best samples"
    text = (f"dense act(x @ W.T + b), float32, weights as parameters, {what} of {args.rounds} interleaved rounds "
            f"x {args.repeat}; measured peak (numpy 1024^3) {peak:.0f} GFLOP/s; other load: {load:.0%} at start, "
            f"{during:.0%} during the run (of 2 cores)\n" + format_table(head, lines, left=1))
    print("\n" + text, flush=True)
    if not args.no_json:
        rows = [Row(f"{r['layer']} rows={r['rows']} {name}", tm, r["flops"], r["errors"].get(name))
                for r in results for name, tm in r["timings"].items()]
        path = write_json("dense", rows, env=env, baselines=(),
                          config={"rows": rows_list, "layers": args.layers, "repeat": args.repeat,
                                  "rounds": args.rounds, "measured_peak_gflops": peak,
                                  "other_load_at_start": load, "other_load_during": during},
                          extra={"table": text})
        print(f"wrote {path}")
    return text


if __name__ == "__main__":
    main()
