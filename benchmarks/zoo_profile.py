"""Where a zoo model's time goes: the VM's per-kernel profile (``VirtualMachine.profile``) of
each ``minitvm.testing.zoo`` model compiled with the default pipeline.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/zoo_profile.py [--models a,b]

For each (model, batch): the median time of a plain call (``--repeat`` calls), then the profile:
per kernel the median over ``--profiles`` profiled calls after a warm-up, with its floating-point
operations (counted on its scheduled TIR loop nest by the tuner's ``workload_flops``: a block
without arithmetic, such as an init or a copy, counts one per iteration), its GFLOP/s and its
share of the machine's measured peak (``common.measured_peak_gflops``).  The models run as native
entries, so the profile times each kernel inside the entry's machine code (its timed twin), on
the arena a plain call uses; "(VM overhead)" is what the call costs outside the kernels (Python,
the argument checks).  The profiled call is a plain call plus a clock read per kernel.  Nothing
here is a test.
``benchmarks/realistic.py --profile`` prints the same table for the realistic-size models.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import LoadMeter, format_table, measured_peak_gflops, setup_environment  # noqa: E402
from ort_profile import side_by_side  # noqa: E402


def kernel_flops(lowered: Any) -> dict[str, float]:
    """Floating-point operations of one call of each PrimFunc of ``lowered`` (by name)."""
    import minitvm
    from minitvm import tir
    from minitvm.meta_schedule.tune import workload_flops

    return {gv.name_hint: workload_flops(minitvm.IRModule({"main": f}))
            for gv, f in lowered.functions_items() if isinstance(f, tir.PrimFunc)}


def compile_for_profile(mod: Any) -> tuple[Any, Any]:
    """``mod`` through the default pipeline: (the lowered IRModule, a VirtualMachine of it)."""
    import minitvm
    from minitvm import relax

    lowered = relax.get_pipeline("default")(mod)
    ex = minitvm.compile(lowered, minitvm.target.Target("llvm"), relax_pipeline=None)
    return lowered, relax.VirtualMachine(ex, minitvm.cpu())


def profile_reports(vm: Any, inputs: list[Any], profiles: int = 3) -> list[Any]:
    """``profiles`` profiles of ``main`` after one untimed profile (first-touch of the profiler's
    state)."""
    vm.profile("main", *inputs)
    return [vm.profile("main", *inputs) for _ in range(max(1, profiles))]


def by_callee(reports: list[Any]) -> tuple[float, dict[str, tuple[int, float]]]:
    """(median total seconds, {callee: (calls, median seconds)}) of profile ``reports`` --
    medians per callee, since a burst of other load hits one profiled call, not all."""
    names = {name for r in reports for name, *_ in r.rows}
    out = {}
    for name in names:
        seen = [(c, t) for r in reports for n, c, t, _ in r.rows if n == name]
        out[name] = (seen[0][0], statistics.median(t for _, t in seen))
    out["(VM overhead)"] = (0, statistics.median(r.overhead for r in reports))
    return statistics.median(r.total for r in reports), out


def by_call(reports: list[Any]) -> list[tuple[str, float]]:
    """(callee, median seconds) of each call, in call order, of profile ``reports`` that made
    the same calls."""
    order = [e[2] for e in reports[0].events]
    same = [r for r in reports if [e[2] for e in r.events] == order]
    return [(name, statistics.median(r.events[k][3] for r in same)) for k, name in enumerate(order)]


def median_profile(vm: Any, inputs: list[Any], profiles: int = 3) -> tuple[float, dict[str, tuple[int, float]]]:
    """Profile ``main`` ``profiles`` times after one untimed profile; :func:`by_callee` of them."""
    return by_callee(profile_reports(vm, inputs, profiles))


#: longest callee name shown in full
NAME_WIDTH = 70


def kernel_table(rows: dict[str, tuple[int, float]], flops: dict[str, float], peak_gflops: float | None,
                 top: int | None = None) -> str:
    """One line per callee, slowest first: calls, time (all calls), share, FLOP of one call,
    GFLOP/s (all calls' FLOP over all calls' time), share of peak."""
    total = sum(t for _, t in rows.values())
    lines = []
    for name, (calls, secs) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:top]:
        f = flops.get(name)
        gflops = None if not f or secs <= 0 else f * max(calls, 1) / secs / 1e9
        shown = name if len(name) <= NAME_WIDTH else name[:NAME_WIDTH - 3] + "..."  # fused names run long
        lines.append([shown, str(calls or ""), f"{secs * 1e6:.1f}", f"{100 * secs / total:.1f}" if total else "-",
                      "-" if not f else f"{f / 1e6:.2f}", "-" if gflops is None else f"{gflops:.1f}",
                      "-" if gflops is None or not peak_gflops else f"{100 * gflops / peak_gflops:.1f}"])
    head = ["callee", "calls", "time us", "share %", "MFLOP/call", "GFLOP/s", "% peak"]
    return format_table(head, lines)


def profile_text(label: str, mod: Any, inputs: list[Any], repeat: int = 50, profiles: int = 10,
                 peak_gflops: float | None = None, top: int | None = None, peer_nodes: list[Any] | None = None) -> str:
    """Compile ``mod`` (default pipeline), time ``repeat`` plain calls of ``main`` on ``inputs``
    (numpy arrays), then the per-kernel table of :func:`median_profile`, with the load meanwhile;
    with ``peer_nodes`` (``ort_profile.node_times``), the kernels beside ORT's nodes too."""
    import minitvm

    lowered, vm = compile_for_profile(mod)
    flops = kernel_flops(lowered)
    args = [minitvm.nd.array(x) for x in inputs]
    main = vm["main"]
    for _ in range(3):
        main(*args)
    meter = LoadMeter()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        main(*args)
        samples.append(time.perf_counter() - t0)
    reports = profile_reports(vm, args, profiles)
    total, rows = by_callee(reports)
    kernel_s = sum(t for name, (_, t) in rows.items() if name in flops)
    all_flops = sum(f * max(rows[name][0], 1) for name, f in flops.items() if name in rows)  # every call
    return (f"== {label}: median {statistics.median(samples) * 1e3:.3f} ms per call (other load "
            f"{meter.fraction():.0%}); profiled call {total * 1e3:.3f} ms, kernels {kernel_s * 1e3:.3f} ms, "
            f"{all_flops / 1e9:.3f} GFLOP -> {all_flops / max(kernel_s, 1e-12) / 1e9:.1f} GFLOP/s in kernels"
            + (f" ({100 * all_flops / max(kernel_s, 1e-12) / 1e9 / peak_gflops:.1f}% of peak "
               f"{peak_gflops:.0f})" if peak_gflops else "")
            + "\n" + kernel_table(rows, flops, peak_gflops, top)
            + ("\n" + side_by_side(by_call(reports), peer_nodes, top) if peer_nodes else ""))


def peak_of(measured: dict[str, Any]) -> float | None:
    """The peak the tables divide by: every core at the best single core's rate, or all cores
    measured at once when that was higher (one core's rate x cores is the quiet machine's peak;
    the all-core run suffers from other processes)."""
    if "gflops" not in measured:
        return None
    return max(measured["gflops"], measured["per_core_gflops"] * measured["threads"])


def peak_line(measured: dict[str, Any]) -> str:
    """The measured peak, as one line above a table."""
    if "gflops" not in measured:
        return f"measured peak: unavailable ({measured.get('error')})"
    return (f"measured float32 peak {peak_of(measured):.0f} GFLOP/s = {measured['per_core_gflops']:.0f} per core "
            f"x {measured['threads']} ({measured['lanes']}-lane FMA loop; all cores at once "
            f"{measured['gflops']:.0f}, other load {measured['load']:.0%})")


def profile_model(name: str, batch: int, repeat: int = 50, peak_gflops: float | None = None,
                  profiles: int = 10) -> str:
    """The median call time and the per-kernel profile of zoo model ``name`` at ``batch``, as text."""
    from minitvm.relax.frontend.torch import from_exported_program
    from minitvm.testing import zoo

    m = zoo.MODELS[name]
    mod = from_exported_program(zoo.export(m, batch), unwrap_unit_return_tuple=True)
    return profile_text(f"{name} b={batch}", mod, [x.numpy() for x in m.example_inputs(batch)], repeat,
                        profiles=profiles, peak_gflops=peak_gflops)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="", help="comma list of zoo models (default: all)")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--profiles", type=int, default=10, help="profiled calls per model (median per kernel)")
    args = p.parse_args(argv)
    setup_environment(None)
    import torch

    torch.set_num_threads(2)
    from minitvm.testing import zoo

    measured = measured_peak_gflops()
    print(peak_line(measured), flush=True)
    names = [n.strip() for n in args.models.split(",") if n.strip()] or list(zoo.MODELS)
    for name in names:
        for batch in (int(b) for b in args.batches.split(",")):
            print(profile_model(name, batch, args.repeat, peak_of(measured), args.profiles), flush=True)


if __name__ == "__main__":
    main()
