"""ONNX Runtime's per-node times inside a model call, beside minitvm's per-kernel times.

ORT's own profiler (``SessionOptions.enable_profiling``) records every node's kernel time in
every run; :func:`node_times` keeps the median per node over ``calls`` runs, in run order.
:func:`side_by_side` sets minitvm's kernel calls (from its native profile, in call order) beside
ORT's nodes: the convolutions, matmuls, pooling and means of both, in order, when the two have
as many of them (a CNN: one kernel per conv on both sides); otherwise ORT's slowest nodes alone
(a transformer: ORT fuses attention and layer norm into nodes of its own).  Both are in-model
times: weights and activations in the caches the neighbouring calls leave.  ORT's profiler adds
a few microseconds to each node (a tiny model's nodes read 4-7 us), so the small ones favour
minitvm.  Benchmark-only.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from dataclasses import dataclass
from typing import Any

#: ORT node types that do the work of a minitvm kernel named with one of MINITVM_HEAVY
ORT_HEAVY = ("Conv", "FusedConv", "Gemm", "MatMul", "FusedMatMul", "MaxPool", "ReduceMean", "GlobalAveragePool")
MINITVM_HEAVY = ("conv2d", "matmul", "max_pool", "mean")


@dataclass(frozen=True)
class NodeTime:
    """One ORT node: its name, type, input and output shapes, median microseconds per run."""

    name: str
    op: str
    inputs: str
    output: str
    us: float


def _shapes(listed: Any) -> str:
    """ORT's ``[{"float": [1, 3, 224, 224]}, ...]`` as ``1x3x224x224 ...``."""
    try:
        return " ".join("x".join(str(d) for d in next(iter(item.values()))) for item in listed)
    except (AttributeError, StopIteration, TypeError):
        return ""


def node_times(module: Any, inputs: tuple[Any, ...], calls: int = 20, warmup: int = 5) -> list[NodeTime]:
    """The median time of each node of ``module`` run by ORT as the peer runs it, in run order."""
    from peers import onnx_session

    with tempfile.TemporaryDirectory() as tmp:
        session, feed = onnx_session(module, inputs, profile_prefix=os.path.join(tmp, "ort"))
        for _ in range(warmup + calls):
            session.run(None, feed)
        with open(session.end_profiling()) as f:
            events = json.load(f)
    runs, current, meta = [], [], {}
    for ev in events:
        if ev.get("cat") == "Node" and ev.get("name", "").endswith("_kernel_time"):
            name, args = ev["name"][:-len("_kernel_time")], ev.get("args", {})
            meta[name] = (args.get("op_name", "?"), _shapes(args.get("input_type_shape")),
                          _shapes(args.get("output_type_shape")))
            current.append((name, ev["dur"]))
        elif ev.get("cat") == "Session" and ev.get("name") == "model_run":  # recorded when a run ends
            runs.append(current)
            current = []
    runs = [r for r in runs[-calls:] if [n for n, _ in r] == [n for n, _ in runs[-1]]]
    return [NodeTime(name, *meta[name], statistics.median(r[k][1] for r in runs))
            for k, (name, _) in enumerate(runs[-1])]


def side_by_side(ours: list[tuple[str, float]], theirs: list[NodeTime], top: int | None = 15) -> str:
    """minitvm's kernel calls (name, seconds; in call order) beside ORT's nodes, as text."""
    mine = [(n, t * 1e6) for n, t in ours if any(w in n for w in MINITVM_HEAVY)]
    heavy = [n for n in theirs if n.op in ORT_HEAVY]
    total_ours, total_theirs = sum(t for _, t in ours) * 1e6, sum(n.us for n in theirs)
    head = (f"in-model per-call times: minitvm kernels {total_ours:.0f} us, ORT nodes {total_theirs:.0f} us "
            f"(ORT's profiler, median of each node)")
    if len(mine) == len(heavy) and mine:
        pairs = sorted(zip(mine, heavy), key=lambda p: p[0][1] - p[1].us, reverse=True)
        lines = [head, f"the {len(mine)} convolutions / matmuls / pools of both, in call order, paired; "
                       "furthest behind ORT first:",
                 f"{'minitvm us':>10}  {'ORT us':>8}  {'ratio':>6}  {'minitvm kernel':44}  ORT node (inputs -> output)"]
        for (name, us), node in pairs[:top]:
            lines.append(f"{us:10.1f}  {node.us:8.1f}  {us / max(node.us, 1e-9):5.2f}x  {name[:44]:44}  "
                         f"{node.op} {node.inputs[:48]} -> {node.output}")
        behind = sum(max(us - node.us, 0.0) for (_, us), node in pairs)
        lines.append(f"paired sums: minitvm {sum(us for _, us in mine):.0f} us, ORT {sum(n.us for n in heavy):.0f} us; "
                     f"where minitvm is behind, by {behind:.0f} us in all")
        return "\n".join(lines)
    slow = sorted(theirs, key=lambda n: -n.us)[:top]
    lines = [head, f"ORT's slowest nodes ({len(heavy)} heavy ORT nodes against {len(mine)} minitvm kernels: "
                   "not paired):", f"{'ORT us':>8}  node"]
    lines += [f"{n.us:8.1f}  {n.op} {n.name[:30]} {n.inputs[:48]} -> {n.output}" for n in slow]
    return "\n".join(lines)
