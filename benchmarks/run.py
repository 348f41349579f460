"""minitvm's benchmark suite: one command, one table, measured in the same run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/run.py [--quick] \
        [--only matmul,tensorize,mlp,zoo]

Sections (``--only`` picks some; ``--section tuning [tuning.py's flags]`` runs the MetaSchedule
tuning benchmark of ``tuning.py`` instead, which takes minutes to an hour):

* ``matmul`` -- float32 1024^3 matmul in GFLOP/s: the unscheduled kernel (``naive``), the
  rule-based ``default`` schedule (``tir.transform.DefaultCPUSchedule``, what ``minitvm.compile``
  applies) and the ``best`` hand schedule of ``matmul.py``, against numpy and torch.
* ``tensorize`` -- the same 1024^3 matmul: the plain vectorized schedule (``tiled``, a 4x32
  register tile), an 8x32 tile vectorized, and that tile tensorized with the AVX-512 FMA
  micro-kernel of ``minitvm.tir.tensor_intrin.x86``; then the u8 x s8 -> int32 matmul (case
  ``1024^3 u8s8``, B packed [N/16, K/4, 16, 4]): numpy (int32, no int8 GEMM), ``torch._int_mm``,
  an 8x32 int8 tile vectorized and the same tile tensorized with ``dot_16x4_vnni``
  (``vpdpbusd``).  Both run on every x86-64 CPU; without AVX-512F (or VNNI) the row's note says
  that LLVM emulates the intrinsic with narrower instructions.
* ``mlp`` -- the quick-start MLP (784 -> 256 -> 10, ``relax.frontend.nn``) at batch 1 and 64:
  ``minitvm default`` (``minitvm.compile``'s default pipeline), ``minitvm zero`` (the zero
  pipeline, no schedules: for reference), numpy and torch eager; plus compile time
  (pipeline + codegen, warm process) per pipeline.
* ``conv`` -- single convolution layers (``convs.py``: resnet_small's, batch 1 and 8) in
  GFLOP/s and share of the machine's nominal peak: the default pipeline's packed x86 kernel,
  the generic kernel, torch eager.
* ``zoo`` -- every ``minitvm.testing.zoo`` model at batch 1 and 8: import time
  (``from_exported_program``), compile time (pipeline + codegen), latency vs torch eager and
  the serving peers of ``peers.py`` -- ONNX Runtime (``torch.onnx.export(..., dynamo=True)``,
  2 intra-op threads) and ``torch.compile`` (inductor) -- timed in the same interleaved rounds
  (``--peers`` picks them; ``none``: no peers).  A model or peer that fails gets a row naming
  the stage and the error's first line.  Under the table: the geometric mean over the zoo
  rows of minitvm's time / the best peer's (and / each peer's).
* ``compile``, ``overhead``, ``busy`` (only when named in ``--only``; each prints its own
  table after the main one): compile time per model, cold and cached (``compile_time.py``);
  Python -> model call overhead, native entry vs bytecode (``call_overhead.py``); every zoo
  model quiet vs with one core kept busy by another process (``busy.py``).
* ``tvm zero`` rows -- Apache TVM's zero pipeline on the MLP and the zoo, run in a child
  process by ``tvm_ref.py`` when a Python with TVM is found (this one, ``--tvm-python`` or
  ``$MINITVM_BENCH_TVM_PYTHON``); otherwise the table says "not installed".  TVM runs after
  all torch measurements, in its own process, with TVM_NUM_THREADS=2 and the CPU named.

Threads: torch and minitvm run 2 threads each, torch on its libgomp, whose wait policy is left
as the environment has it (``--omp-wait-policy`` overrides; ``passive`` slows torch eager), and
minitvm on its own thread pool.

Columns: ``x torch`` / ``x numpy`` are time / baseline time of the same case (lower is
better; 0.5x = twice as fast); ``x best`` is a minitvm row's time / the fastest peer's of
the same case (torch, numpy, onnxruntime, torch.compile).  ``target`` / ``status``: the issue-8 goal of the row, met or
not.  Results go to ``benchmarks/results/latest.json`` (and a timestamped copy) and the ratios
to the bar chart ``benchmarks/results/latest.png``.  Speed is never asserted by a test; other
processes share the 2 cores, so check the min..max spread and the load line before trusting a
ratio.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convs as conv_bench  # noqa: E402
import matmul as matmul_bench  # noqa: E402
import mlp as mlp_bench  # noqa: E402
import peers as peers_bench  # noqa: E402
import tvm_ref  # noqa: E402
import zoo as zoo_bench  # noqa: E402
from common import (  # noqa: E402
    RESULTS_DIR,
    Timing,
    busy_fraction,
    environment_info,
    fmt_time,
    format_table,
    setup_environment,
    wait_until_idle,
)

SECTIONS = ("matmul", "tensorize", "mlp", "conv", "zoo")
#: sections with tables of their own, run only when ``--only`` names them
EXTRA_SECTIONS = ("compile", "overhead", "busy")
#: zoo models held to the "<= 1.5x torch at batch 8" target (the CNNs and the transformers)
ZOO_TARGET_MODELS = ("lenet", "mlc_mnist", "resnet_block", "depthwise_separable", "transformer_sdpa",
                     "transformer_explicit")
ZOO_TARGET_BATCH = 8
#: rows that are peers (baselines), not minitvm: ``x best`` compares a minitvm row with the fastest
PEER_IMPLS = ("torch", "numpy", *peers_bench.PEERS)


# -- rows, targets, the table ---------------------------------------------------------------------


@dataclass(frozen=True)
class Goal:
    """An issue-8 target for one row: ``x_torch`` (time / torch's <= limit), ``share_numpy``
    (numpy's time / time, i.e. share of numpy's GFLOP/s, >= limit) or ``seconds`` (median <= limit)."""

    kind: str
    limit: float

    @property
    def text(self) -> str:
        if self.kind == "x_torch":
            return f"<= {self.limit:.1f}x torch"
        if self.kind == "share_numpy":
            return f">= {self.limit:.0%} numpy GFLOP/s"
        return f"<= {self.limit:g} s"

    def value(self, entry: Entry) -> float | None:
        """The measured quantity the goal is about (None when it could not be measured)."""
        if self.kind == "x_torch":
            return entry.x_torch
        if self.kind == "share_numpy":
            return None if not entry.x_numpy else 1.0 / entry.x_numpy
        return None if entry.timing is None else entry.timing.median

    def met(self, entry: Entry) -> bool | None:
        v = self.value(entry)
        if v is None:
            return None
        return v >= self.limit if self.kind == "share_numpy" else v <= self.limit


@dataclass
class Entry:
    """One row of the table: a (section, case, impl) and what was measured for it.  ``error``
    says why there is no measurement (a failed stage, "not installed"); ``correct`` is False
    when the output differed from the reference beyond tolerance."""

    section: str
    case: str
    impl: str
    timing: Timing | None = None
    flops: float | None = None
    import_s: float | None = None
    compile_s: float | None = None
    max_abs_err: float | None = None
    correct: bool | None = None
    goal: Goal | None = None
    error: str = ""
    note: str = ""
    x_torch: float | None = None
    x_numpy: float | None = None
    x_best: float | None = None
    status: str = ""

    @property
    def gflops(self) -> float | None:
        return None if self.flops is None or self.timing is None else self.flops / self.timing.median / 1e9

    @property
    def label(self) -> str:
        return f"{self.section} {self.case} {self.impl}"

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in dataclasses.asdict(self).items() if k not in ("timing", "goal")}
        d["timing"] = None if self.timing is None else dataclasses.asdict(self.timing)
        d["target"] = None if self.goal is None else {"kind": self.goal.kind, "limit": self.goal.limit,
                                                      "text": self.goal.text, "met": self.goal.met(self)}
        d["gflops"] = self.gflops
        return d


def finish(entries: list[Entry]) -> list[Entry]:
    """Fill each row's ratios against the torch / numpy rows of its case, and its status."""
    base = {(e.section, e.case, e.impl): e for e in entries if e.timing is not None}
    for e in entries:
        for name in ("torch", "numpy"):
            b = base.get((e.section, e.case, name))
            ratio = None if b is None or e.timing is None or e.impl == name else e.timing.median / b.timing.median
            setattr(e, f"x_{name}", ratio)
        peers = [b.timing.median for (s, c, i), b in base.items() if (s, c) == (e.section, e.case) and i in PEER_IMPLS]
        if e.impl not in PEER_IMPLS and e.timing is not None and peers:
            e.x_best = e.timing.median / min(peers)
        e.status = status_of(e)
    return entries


def geomean(values: list[float]) -> float | None:
    """The geometric mean of positive ``values`` (None for none)."""
    import math

    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def zoo_summary(entries: list[Entry], impl: str = "minitvm default") -> dict[str, Any]:
    """Over the zoo cases where ``impl`` and a peer both have a time: the geometric mean of
    ``impl``'s time / the best peer's, and / each peer's, with how many cases went in."""
    times = {(e.case, e.impl): e.timing.median for e in entries if e.section == "zoo" and e.timing is not None}
    cases = sorted({c for c, i in times if i == impl})
    out: dict[str, Any] = {}
    best = [times[c, impl] / min(t for (c2, i), t in times.items() if c2 == c and i in PEER_IMPLS)
            for c in cases if any((c, p) in times for p in PEER_IMPLS)]
    out["best peer"] = {"geomean": geomean(best), "cases": len(best)}
    for p in ("torch", *peers_bench.PEERS):
        ratios = [times[c, impl] / times[c, p] for c in cases if (c, p) in times]
        out[p] = {"geomean": geomean(ratios), "cases": len(ratios)}
    return out


def summary_text(summary: dict[str, Any], impl: str = "minitvm default") -> str:
    """The geometric-mean line(s) under the table."""
    if not summary:
        return ""
    parts = [f"{k}: {v['geomean']:.2f}x ({v['cases']} cases)" for k, v in summary.items() if v["geomean"]]
    return f"zoo geometric mean of {impl} time / peer time -- " + ("; ".join(parts) or "no cases")


def status_of(e: Entry) -> str:
    """What the status column says: the failure, a wrong result, or whether the goal is met."""
    if e.error:
        return e.error
    if e.correct is False:
        return f"WRONG RESULT (max|err| {e.max_abs_err:.2g})"
    if e.goal is None:
        return ""
    met = e.goal.met(e)
    if met is None:
        return "not measured"
    shown = e.goal.value(e)
    detail = f"{shown:.0%}" if e.goal.kind == "share_numpy" else ""
    return ("met" if met else "NOT MET") + (f" ({detail})" if detail else "")


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


#: the machine's nominal float32 peak (GFLOP/s), shown beside the conv rows' GFLOP/s
PEAK_GFLOPS = conv_bench.peak_gflops()


def _gflops_cell(e: Entry) -> str:
    """GFLOP/s, with the share of the machine's peak for the conv rows."""
    if e.gflops is None:
        return "-"
    if e.section == "conv" and PEAK_GFLOPS:
        return f"{e.gflops:.1f} ({e.gflops / PEAK_GFLOPS:.0%})"
    return f"{e.gflops:.1f}"


def table_text(entries: list[Entry]) -> str:
    """The one table, as text."""
    head = ["section", "case", "impl", "median", "min..max", "GFLOP/s", "x torch", "x numpy", "x best", "import",
            "compile", "max|err|", "target", "status"]
    lines = []
    for e in entries:
        t = e.timing
        lines.append([e.section, e.case, e.impl,
                      "-" if t is None else fmt_time(t.median),
                      "-" if t is None else f"{fmt_time(t.min)}..{fmt_time(t.max)}",
                      _gflops_cell(e), _fmt(e.x_torch, ".2f") + ("x" if e.x_torch else ""),
                      _fmt(e.x_numpy, ".2f") + ("x" if e.x_numpy else ""),
                      _fmt(e.x_best, ".2f") + ("x" if e.x_best else ""),
                      "-" if e.import_s is None else fmt_time(e.import_s),
                      "-" if e.compile_s is None else fmt_time(e.compile_s),
                      _fmt(e.max_abs_err, ".1e"), e.goal.text if e.goal else "", e.status])
    notes = list(dict.fromkeys(f"  {e.section} {e.impl}: {e.note}" for e in entries if e.note))
    if PEAK_GFLOPS and any(e.section == "conv" for e in entries):
        notes.append(f"  conv: GFLOP/s (share of the nominal peak {PEAK_GFLOPS:.0f} GFLOP/s = cores x clock x 64 "
                     "FLOP/cycle); minitvm default = packed x86 kernel, generic = DefaultCPUSchedule's NCHW kernel")
    return "\n".join([format_table(head, lines, left=3), "notes:", *notes, *FOOTNOTES])


#: printed under every table: how to read the columns
FOOTNOTES = (
    "  x torch / x numpy: time / that baseline's time in the same case (< 1: faster).  import: export_tvm (mlp)"
    " or from_exported_program (zoo); compile: relax pipeline + codegen in a warm process (mlp: median of",
    "  fresh compiles, also shown as the 'compile' rows; zoo: one compile; onnxruntime / torch.compile: export +",
    "  session set-up / the first, compiling call).  x best: time / the fastest peer's (torch, numpy, onnxruntime,",
    "  torch.compile) in the same case.",
)


# -- the sections ---------------------------------------------------------------------------------


@dataclass
class Config:
    """Sizes and repetitions of one run (``--quick`` makes them small)."""

    sections: tuple[str, ...] = SECTIONS
    matmul_size: int = 1024
    matmul_repeat: int = 10
    matmul_rounds: int = 3
    naive_repeat: int = 1  # one unscheduled 1024^3 call takes ~10 s
    mlp_batches: tuple[int, ...] = (1, 64)
    zoo_batches: tuple[int, ...] = (1, 8)
    zoo_models: tuple[str, ...] | None = None
    repeat: int = 20
    rounds: int = 3
    warmup: int = 3
    compile_repeat: int = 3
    wait_idle: float = 30.0
    tvm_python: str | None = None
    use_tvm: bool = True
    busy: dict[str, float] = field(default_factory=dict)
    peers: tuple[str, ...] = peers_bench.PEERS


def run_matmul(cfg: Config) -> list[Entry]:
    """numpy, torch, naive, default and best at ``cfg.matmul_size``^3."""
    n = cfg.matmul_size
    case = f"{n}^3"
    try:
        rows = matmul_bench.measure(n, ("default", "best"), repeat=cfg.matmul_repeat, rounds=cfg.matmul_rounds,
                                    warmup=2, naive_size=n, naive_repeat=cfg.naive_repeat)
    except Exception as exc:
        return [Entry("matmul", case, "minitvm", error=f"failed: {zoo_bench.first_line(exc)}")]
    goals = {"minitvm default": Goal("share_numpy", 0.5), "minitvm best": Goal("share_numpy", 0.75)}
    return [Entry("matmul", case, r.name, r.timing, r.flops, max_abs_err=r.max_abs_err,
                  correct=None if r.max_abs_err is None else True,  # measure() raises on a wrong result
                  goal=goals.get(r.name), note=r.note) for r in rows]


def run_tensorize(cfg: Config) -> list[Entry]:
    """The plain vectorized schedule (``tiled``: 4x32 tile), the same 8x32 register tile
    vectorized, and that tile tensorized with the AVX-512 FMA micro-kernel, against numpy and torch."""
    n = cfg.matmul_size
    case = f"{n}^3"
    try:
        rows = matmul_bench.measure(n, ("tiled", "vectorized", "tensorized"), repeat=cfg.matmul_repeat,
                                    rounds=cfg.matmul_rounds, warmup=2, naive_size=0)
    except Exception as exc:
        return [Entry("tensorize", case, "minitvm", error=f"failed: {zoo_bench.first_line(exc)}")]
    entries = [Entry("tensorize", case, r.name, r.timing, r.flops, max_abs_err=r.max_abs_err,
                     correct=None if r.max_abs_err is None else True, note=r.note) for r in rows]
    return entries + run_tensorize_int8(cfg)


def run_tensorize_int8(cfg: Config) -> list[Entry]:
    """u8 x s8 -> int32 matmul: numpy, torch, the int8 register tile vectorized and the same tile
    tensorized with ``dot_16x4_vnni`` (vpdpbusd; emulated by LLVM, and noted, without AVX-512 VNNI)."""
    n = cfg.matmul_size
    case = f"{n}^3 u8s8"
    try:
        rows = matmul_bench.measure_int8(n, repeat=cfg.matmul_repeat, rounds=cfg.matmul_rounds, warmup=2)
    except Exception as exc:
        return [Entry("tensorize", case, "minitvm int8", error=f"failed: {zoo_bench.first_line(exc)}")]
    return [Entry("tensorize", case, r.name, r.timing, r.flops, max_abs_err=r.max_abs_err,
                  correct=None if r.max_abs_err is None else True, note=r.note) for r in rows]


def _sum_timing(a: Timing, b: Timing) -> Timing:
    """Per-sample sums of two stage timings (pipeline + codegen of the same compiles)."""
    return Timing.of([x + y for x, y in zip(a.samples, b.samples)])


def run_mlp(cfg: Config, torch: Any) -> list[Entry]:
    """The quick-start MLP per batch: numpy, torch, minitvm default / zero; compile time rows."""
    entries: list[Entry] = []
    for batch in cfg.mlp_batches:
        case = f"b={batch}"
        exes, compile_rows, stage_times = {}, [], {}
        for pipeline in ("default", "zero"):
            impl = f"minitvm {pipeline}"
            try:
                exes[impl], stages = mlp_bench.compile_mlp(batch, pipeline, cfg.compile_repeat)
            except Exception as exc:
                entries.append(Entry("mlp", case, impl, error=f"compile failed: {zoo_bench.first_line(exc)}"))
                continue
            total = _sum_timing(stages["pipeline"], stages["codegen"])
            stage_times[impl] = (stages["export"].median, total.median)
            compile_rows.append(Entry("mlp", f"compile {case}", impl, total, import_s=stages["export"].median,
                                      compile_s=total.median,
                                      goal=Goal("seconds", 0.5) if pipeline == "default" else None))
        try:
            rows = mlp_bench.measure_batch(exes, batch, torch, repeat=cfg.repeat, rounds=cfg.rounds,
                                           warmup=cfg.warmup)
        except Exception as exc:
            entries.append(Entry("mlp", case, "minitvm", error=f"run failed: {zoo_bench.first_line(exc)}"))
            rows = []
        for r in rows:
            imp, comp = stage_times.get(r.name, (None, None))
            goal = Goal("x_torch", 1.0 if batch == 1 else 1.5) if r.name == "minitvm default" else None
            entries.append(Entry("mlp", case, r.name, r.timing, r.flops, imp, comp, r.max_abs_err,
                                 correct=r.max_abs_err <= mlp_bench.MLP_ATOL, goal=goal))
        entries += compile_rows
    return entries


def run_zoo(cfg: Config, torch: Any) -> list[Entry]:
    """Each zoo model at each batch: torch eager and minitvm default (import, compile, latency)."""
    try:
        zoo = zoo_bench.load_zoo()
    except Exception as exc:
        return [Entry("zoo", "-", "minitvm default", error=f"zoo unavailable: {zoo_bench.first_line(exc)}")]
    names = cfg.zoo_models or tuple(zoo.MODELS)
    unknown = [n for n in names if n not in zoo.MODELS]
    if unknown:
        raise SystemExit(f"run.py: unknown zoo model(s) {', '.join(unknown)}; known: {', '.join(zoo.MODELS)}")
    entries: list[Entry] = []
    for name in names:
        for batch in cfg.zoo_batches:
            r = zoo_bench.measure_model(zoo.MODELS[name], batch, torch, export=zoo.export, repeat=cfg.repeat,
                                        rounds=cfg.rounds, warmup=cfg.warmup, peers=cfg.peers)
            case = f"{name} b={batch}"
            goal = Goal("x_torch", 1.5) if name in ZOO_TARGET_MODELS and batch == ZOO_TARGET_BATCH else None
            if "torch" in r.timings:
                entries.append(Entry("zoo", case, "torch", r.timings["torch"]))
            entries.append(Entry("zoo", case, "minitvm default", r.timings.get("minitvm default"),
                                 import_s=r.import_s, compile_s=r.compile_s, max_abs_err=r.max_abs_err,
                                 correct=r.correct, goal=goal,
                                 error=f"{r.failed_stage} failed: {r.error}" if r.failed_stage else ""))
            status = "ok" if not r.failed_stage else entries[-1].error
            for peer in cfg.peers if not r.failed_stage else ():
                entries.append(Entry("zoo", case, peer, r.timings.get(peer), compile_s=r.peer_prepare_s.get(peer),
                                     max_abs_err=r.peer_abs_err.get(peer), error=r.peer_errors.get(peer, ""),
                                     note=PEER_NOTES.get(peer, "")))
            print(f"  zoo {case}: {status}", flush=True)
    return entries


#: what each peer row measured (printed once under the table)
PEER_NOTES = {
    "onnxruntime": "torch.onnx.export(dynamo=True) at the row's batch, InferenceSession CPU, intra_op_num_threads=2, "
                   "ORT_ENABLE_ALL; 'compile' = export + session set-up",
    "torch.compile": "torch.compile(module, dynamic=False), inductor default mode; 'compile' = the first call",
}


def run_conv(cfg: Config, torch: Any) -> list[Entry]:
    """Each convolution case at each batch: minitvm default (packed), minitvm generic, torch."""
    entries: list[Entry] = []
    for batch in cfg.zoo_batches:
        for cin, cout, k, stride, hw in conv_bench.CASES:
            case = conv_bench.case_name(cin, cout, k, stride, hw, batch)
            try:
                r = conv_bench.measure_case(cin, cout, k, stride, hw, batch, torch, repeat=cfg.repeat,
                                            rounds=cfg.rounds, warmup=cfg.warmup)
            except Exception as exc:
                entries.append(Entry("conv", case, "minitvm default", error=f"failed: {zoo_bench.first_line(exc)}"))
                continue
            for impl, timing in r.timings.items():
                err = r.errors.get(impl)
                entries.append(Entry("conv", case, impl, timing, r.flops, max_abs_err=err,
                                     correct=None if err is None else err <= 1e-3))
            print(f"  conv {case}: ok", flush=True)
    return entries


def run_extra_sections(cfg: Config, quick: bool) -> str:
    """The sections with tables of their own (compile, overhead, busy), as text after the main table."""
    import busy as busy_bench
    import call_overhead as overhead_bench
    import compile_time as compile_bench

    out = ""
    models = ",".join(cfg.zoo_models or ())
    for section in EXTRA_SECTIONS:
        if section not in cfg.sections:
            continue
        print(f"[{section}] measuring (other load {busy_fraction():.0%})", flush=True)
        if section == "compile":
            results = compile_bench.main(["--repeat", "1" if quick else "3"] + (["--models", models] if models else []))
            out += "\n\n" + compile_bench.table(results)
        elif section == "overhead":
            out += "\n\n" + overhead_bench.main(["--repeat", "50" if quick else "200"] +
                                                (["--models", models] if models else []))
        else:
            out += "\n\n" + busy_bench.main(["--calls", "100" if quick else "300", "--batches",
                                              ",".join(map(str, cfg.zoo_batches))] +
                                             (["--models", models] if models else []))
    return out


def run_tvm(cfg: Config, entries: list[Entry], mcpu: str) -> tuple[list[Entry], dict[str, Any]]:
    """Insert TVM's zero-pipeline rows after the matching MLP / zoo cases (or "not installed")."""
    mlp_batches = list(cfg.mlp_batches) if "mlp" in cfg.sections else []
    zoo_cases = sorted({e.case for e in entries if e.section == "zoo" and e.case != "-"})
    zoo_models = list(dict.fromkeys(c.split(" b=")[0] for c in zoo_cases))
    if not (mlp_batches or zoo_models):
        return entries, {}
    python = tvm_ref.find_tvm_python(cfg.tvm_python) if cfg.use_tvm else None
    if python is None:
        why = "skipped (--no-tvm)" if not cfg.use_tvm else \
            f"not installed ({cfg.tvm_python} not found)" if cfg.tvm_python else "not installed"
        missing = [Entry("mlp", f"b={b}", "tvm zero", error=why) for b in mlp_batches]
        if zoo_models:
            missing.append(Entry("zoo", "all", "tvm zero", error=why))
        return _insert_after_cases(entries, missing), {"status": why}
    print(f"TVM reference rows: {python} (a child process)", flush=True)
    try:
        results = tvm_ref.run_child(python, mcpu=mcpu, mlp_batches=mlp_batches, zoo_models=zoo_models,
                                    zoo_batches=list(cfg.zoo_batches), repeat=cfg.repeat * cfg.rounds,
                                    warmup=cfg.warmup)
    except Exception as exc:
        failed = Entry("zoo" if zoo_models else "mlp", "all", "tvm zero", error=zoo_bench.first_line(exc))
        return entries + [failed], {"status": "failed", "python": python}
    rows = []
    for r in results:
        section, case = ("mlp", f"b={r.batch}") if r.model == tvm_ref.NN_MLP else ("zoo", f"{r.model} b={r.batch}")
        rows.append(Entry(section, case, "tvm zero", r.timings.get("tvm zero"), import_s=r.import_s,
                          compile_s=r.compile_s, max_abs_err=r.max_abs_err, correct=r.correct,
                          error=f"{r.failed_stage} failed: {r.error}" if r.failed_stage else "",
                          note="Apache TVM: relax.get_pipeline('zero') + tvm.compile, TVM_NUM_THREADS=2, "
                               f"mcpu={mcpu}, timed alone in a child process"))
    return _insert_after_cases(entries, rows), {"status": "measured", "python": python}


def _insert_after_cases(entries: list[Entry], extra: list[Entry]) -> list[Entry]:
    """``entries`` with each extra row placed after the last row of its (section, case)."""
    out = list(entries)
    for e in extra:
        last = max((k for k, x in enumerate(out) if (x.section, x.case) == (e.section, e.case)), default=None)
        if last is None:
            last = max((k for k, x in enumerate(out) if x.section == e.section), default=len(out) - 1)
        out.insert(last + 1, e)
    return out


# -- outputs ---------------------------------------------------------------------------------------


def write_results(entries: list[Entry], text: str, cfg: Config, env: dict[str, Any], tvm_info: dict[str, Any],
                  out_dir: Path, summary: dict[str, Any] | None = None) -> Path:
    """``latest.json`` (and ``run-<UTC stamp>.json``) in ``out_dir``; returns latest.json's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.timezone.utc)
    goals = [{"row": e.label, "target": e.goal.text, "met": e.goal.met(e), "status": e.status}
             for e in entries if e.goal is not None]
    payload = {"benchmark": "run", "utc": stamp.isoformat(timespec="seconds"),
               "config": {k: v for k, v in dataclasses.asdict(cfg).items() if k != "busy"},
               "other_load": cfg.busy, "env": env, "tvm": tvm_info, "goals": goals,
               "entries": [e.to_json() for e in entries], "zoo_summary": summary or {}, "table": text}
    data = json.dumps(payload, indent=2, default=str)
    (out_dir / f"run-{stamp.strftime('%Y%m%dT%H%M%SZ')}.json").write_text(data)
    path = out_dir / "latest.json"
    path.write_text(data)
    return path


def plot_ratios(entries: list[Entry], path: Path) -> Path | None:
    """A horizontal bar chart of every non-baseline row's time / torch and time / numpy (log x)."""
    rows = [e for e in entries if e.impl not in ("torch", "numpy") and (e.x_torch or e.x_numpy)]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.5))
    ys = range(len(rows))
    for k, (attr, label) in enumerate((("x_torch", "time / torch"), ("x_numpy", "time / numpy"))):
        vals = [getattr(e, attr) or 0.0 for e in rows]
        ax.barh([y + (k - 0.5) * 0.4 for y in ys], vals, height=0.4, label=label)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks(list(ys), [e.label for e in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time ratio (log scale; < 1: faster than the baseline)")
    ax.set_title("minitvm (and TVM zero) vs torch eager and numpy")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# -- command line ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, few repeats: a short run (seconds)")
    p.add_argument("--only", default=",".join(SECTIONS), help=f"comma list of sections from {','.join(SECTIONS)}")
    p.add_argument("--models", default="", help="comma list of zoo models (default: all)")
    p.add_argument("--matmul-size", type=int, help="n of the n^3 matmul (multiple of 64; default 1024, quick 256)")
    p.add_argument("--mlp-batches", help="comma list (default 1,64)")
    p.add_argument("--zoo-batches", help="comma list (default 1,8; quick 1)")
    p.add_argument("--repeat", type=int, help="timed runs per row and round (default 20, quick 3)")
    p.add_argument("--rounds", type=int, help="interleaved rounds (default 3, quick 1)")
    p.add_argument("--wait-idle", type=float, help="seconds to wait for idle cores first (default 30, quick 0)")
    p.add_argument("--tvm-python", help=f"a Python with apache-tvm (default: this one, or ${tvm_ref.ENV_VAR})")
    p.add_argument("--no-tvm", action="store_true", help="no TVM reference rows")
    p.add_argument("--out-dir", type=Path, default=RESULTS_DIR, help="where latest.json / latest.png go")
    p.add_argument("--no-chart", action="store_true")
    p.add_argument("--peers", default=",".join(peers_bench.PEERS),
                   help=f"comma list of zoo peers from {','.join(peers_bench.PEERS)}, or 'none'")
    p.add_argument("--omp-wait-policy", default="env", choices=["env", "passive", "active"],
                   help="OMP_WAIT_POLICY for torch's libgomp ('env': leave it alone)")
    return p.parse_args(argv)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def make_config(args: argparse.Namespace) -> Config:
    """The run's sizes from the flags (``--quick`` changes the defaults, flags still win)."""
    sections = tuple(s.strip() for s in args.only.split(",") if s.strip())
    bad = [s for s in sections if s not in SECTIONS + EXTRA_SECTIONS]
    if bad:
        raise SystemExit(f"run.py --only: unknown section(s) {', '.join(bad)}; choose from "
                         f"{', '.join(SECTIONS + EXTRA_SECTIONS)}")
    q = args.quick
    cfg = Config(sections=sections, matmul_size=args.matmul_size or (256 if q else 1024),
                 matmul_repeat=3 if q else 10, matmul_rounds=1 if q else 3, naive_repeat=1,
                 mlp_batches=_ints(args.mlp_batches or "1,64"),
                 zoo_batches=_ints(args.zoo_batches or ("1" if q else "1,8")),
                 zoo_models=tuple(m.strip() for m in args.models.split(",") if m.strip()) or None,
                 repeat=args.repeat or (3 if q else 20), rounds=args.rounds or (1 if q else 3),
                 warmup=1 if q else 3, compile_repeat=1 if q else 3,
                 wait_idle=args.wait_idle if args.wait_idle is not None else (0.0 if q else 30.0),
                 tvm_python=args.tvm_python, use_tvm=not args.no_tvm)
    cfg.peers = () if args.peers.strip() == "none" else tuple(x.strip() for x in args.peers.split(",") if x.strip())
    bad_peers = [x for x in cfg.peers if x not in peers_bench.PEERS]
    if bad_peers:
        raise SystemExit(f"run.py --peers: unknown peer(s) {', '.join(bad_peers)}; choose from "
                         f"{', '.join(peers_bench.PEERS)} or none")
    if args.repeat:
        cfg.matmul_repeat = args.repeat
    if args.rounds:
        cfg.matmul_rounds = args.rounds
    return cfg


def import_torch():
    """torch with 2 threads and no grad (the eager baseline), imported before anything TVM."""
    return mlp_bench.import_torch(True)


def warm_up(cfg: Config) -> float:
    """Compile the MLP once (loads LLVM and the passes) and, for the zoo, export and import one
    model (loads torch.export and the importer), so compile and import times are a warm process's."""
    t0 = time.perf_counter()
    if "mlp" in cfg.sections or "zoo" in cfg.sections:
        mlp_bench.compile_mlp(1)
    if "zoo" in cfg.sections:
        try:
            zoo = zoo_bench.load_zoo()
            from minitvm.relax.frontend.torch import from_exported_program

            from_exported_program(zoo.export(zoo.MODELS["mlp"], 1))
        except Exception as exc:  # the zoo section reports it per model
            print(f"warm-up of the zoo failed: {zoo_bench.first_line(exc)}", file=sys.stderr)
    return time.perf_counter() - t0


def header(env: dict[str, Any], cfg: Config) -> str:
    """The line above the table: what the numbers depend on."""
    blas = env.get("blas", {})
    load = ", ".join(f"{k} {v:.0%}" for k, v in cfg.busy.items())
    policy = os.environ.get("OMP_WAIT_POLICY", "unset (libgomp default)")
    return " | ".join([
        f"cpu {env.get('llvm_cpu')} x{env.get('cpus')}",
        f"numpy {env.get('numpy')} (BLAS kernel {blas.get('corename', '?')})",
        f"torch {env.get('torch', '-')} x{env.get('torch_threads', '-')} threads",
        f"OMP_WAIT_POLICY={policy}",
        f"medians of {cfg.rounds} interleaved rounds x {cfg.repeat} runs (matmul {cfg.matmul_rounds} x "
        f"{cfg.matmul_repeat})",
        f"other load at section start: {load or '-'}"])


def main(argv: list[str] | None = None) -> tuple[list[Entry], Path]:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["--section", "tuning"]:
        import tuning

        tuning.main(argv[2:])
        raise SystemExit(0)
    args = parse_args(argv)
    cfg = make_config(args)
    # torch's libgomp keeps the environment's wait policy by default (libgomp's own: spin briefly,
    # then sleep); minitvm's parallel loops run on its own thread pool.  "passive" made torch
    # eager 1.6-1.9x slower on the zoo models (every op's parallel region wakes sleeping
    # workers), which flatters minitvm.
    setup_environment(None if args.omp_wait_policy == "env" else args.omp_wait_policy)
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")  # torch.export's own deprecation noise
    torch = import_torch()
    import numpy  # noqa: F401 - loaded so environment_info reports its BLAS

    import minitvm  # noqa: F401

    wait_until_idle(cfg.wait_idle, streak=6)  # 3 s of quiet, not a gap between two jobs
    warm_s = warm_up(cfg)
    entries: list[Entry] = []
    for section in SECTIONS:
        if section not in cfg.sections:
            continue
        cfg.busy[section] = busy_fraction()
        print(f"[{section}] measuring (other load {cfg.busy[section]:.0%})", flush=True)
        if section == "matmul":
            entries += run_matmul(cfg)
        elif section == "tensorize":
            entries += run_tensorize(cfg)
        elif section == "mlp":
            entries += run_mlp(cfg, torch)
        elif section == "conv":
            entries += run_conv(cfg, torch)
        else:
            entries += run_zoo(cfg, torch)
    env = environment_info()
    env["warm_up_seconds"] = warm_s
    entries, tvm_info = run_tvm(cfg, entries, env.get("llvm_cpu", "generic"))
    finish(entries)
    summary = zoo_summary(entries)
    text = header(env, cfg) + "\n" + table_text(entries)
    if "zoo" in cfg.sections:
        text += "\n" + summary_text(summary)
    if os.environ.get("OPENBLAS_CORETYPE"):
        text += (f"\nwarning: OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} is set: numpy runs that kernel; "
                 "run with `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE` to compare fairly")
    print("\n" + text, flush=True)
    text += run_extra_sections(cfg, args.quick)
    path = write_results(entries, text, cfg, env, tvm_info, args.out_dir, summary)
    print(f"\nwrote {path}")
    if not args.no_chart:
        chart = plot_ratios(entries, args.out_dir / "latest.png")
        if chart is not None:
            print(f"wrote {chart}")
    return entries, path


if __name__ == "__main__":
    main()
