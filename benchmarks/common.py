"""Shared helpers for minitvm's benchmark scripts (matmul, MLP, model zoo, ...);
``benchmarks/run.py`` runs them all into one table.

Nothing here is a test: benchmarks print a table and write JSON under
``benchmarks/results/`` (gitignored); speed is never asserted.

Usage in a script::

    from common import setup_environment, time_fn, Row, print_table, write_json
    setup_environment()                    # before minitvm builds anything / numpy loads
    t = time_fn(lambda: f(a, b, c), repeat=10)
    rows = [Row("numpy", t, flops=2 * n**3), ...]
    print_table(rows, baselines=("numpy", "torch"))
    write_json("matmul", rows, config={...})

Timing: ``warmup`` untimed calls, then ``repeat`` timed calls; the median is reported
(min and max are kept in the JSON).  Other processes may share the 2 cores, so look at
the spread before trusting a ratio, and rerun when it is wide.
"""

from __future__ import annotations

import ctypes
import datetime as _dt
import json
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"

# `python benchmarks/x.py` puts benchmarks/ (not the repo) first on sys.path, and the
# venv's editable-install finder may point at another checkout: import this checkout.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# -- environment ------------------------------------------------------------------------------


#: libgomp's spin limit with OMP_WAIT_POLICY=active (:func:`setup_environment`): about 66 ms of
#: spinning here (measured: 3M spins ~0.1 s, with torch's call times as with the unbounded spin),
#: well within SETTLE_SECONDS
GOMP_SPIN_COUNT = 2_000_000


def setup_environment(omp_wait_policy: str | None = "active") -> dict[str, Any]:
    """Settings that must be in place before torch's libgomp / OpenBLAS load.

    ``OMP_WAIT_POLICY`` is read by torch's libgomp only (minitvm's parallel loops run on its own
    thread pool).  Benchmarks default to ``active`` (spinning workers) unless the caller's
    environment already chose; pass ``None`` to leave it alone.  Must run before torch loads.

    ``active`` alone makes libgomp's idle workers spin for 30 billion iterations -- minutes: after
    torch's row, its worker kept a core busy through every row timed after it (measured: 0.48 s
    of CPU in a 0.5 s sleep after one call), so minitvm and the other peers ran with one core.
    ``GOMP_SPINCOUNT`` (unless the environment sets it) bounds the spin to ``GOMP_SPIN_COUNT``
    iterations: torch's workers still spin between its calls, and stop before the next row
    (the 0.2 s of ``SETTLE_SECONDS``).
    """
    if omp_wait_policy and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = omp_wait_policy
    if os.environ.get("OMP_WAIT_POLICY", "").lower() == "active" and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = str(GOMP_SPIN_COUNT)
    return environment_info()


def environment_info() -> dict[str, Any]:
    """What the numbers depend on: CPU, thread settings, BLAS kernel, library versions."""
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg_at_start": _loadavg(),
        "env": {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS",
                                               "OPENBLAS_CORETYPE",
                                               "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS")},
    }
    try:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        info["llvm_cpu"] = llvm.get_host_cpu_name()
    except Exception:  # pragma: no cover - informational only
        pass
    if "minitvm" in sys.modules:
        info["minitvm"] = str(Path(sys.modules["minitvm"].__file__).parent)
    if "numpy" in sys.modules:
        import numpy as np

        info["numpy"] = np.__version__
        info["blas"] = blas_info()
    if "torch" in sys.modules:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    return info


def blas_info() -> dict[str, Any]:
    """numpy's BLAS and the kernel it runs (threadpoolctl if installed, else OpenBLAS's own
    ``*_get_corename`` read from the loaded library).  A ``Haswell`` kernel on an AVX-512
    machine means OPENBLAS_CORETYPE forced it: numpy is then slower than it can be."""
    try:
        from threadpoolctl import threadpool_info

        return {"source": "threadpoolctl", "pools": threadpool_info()}
    except ImportError:
        pass
    out: dict[str, Any] = {"source": "ctypes"}
    try:
        paths = sorted({line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line.lower()
                        and line.split()[-1].startswith("/")})
    except OSError:
        return out
    for path in paths:
        lib = ctypes.CDLL(path)
        for prefix in ("scipy_openblas_", "openblas_"):
            for suffix in ("64_", ""):
                name = f"{prefix}get_corename{suffix}"
                if hasattr(lib, name):
                    f = getattr(lib, name)
                    f.restype = ctypes.c_char_p
                    out.update(library=path, corename=f().decode())
                    nt = getattr(lib, f"{prefix}get_num_threads{suffix}", None)
                    if nt is not None:
                        nt.restype = ctypes.c_int
                        out["num_threads"] = nt()
                    return out
    return out


def _cpu_times() -> tuple[int, int]:
    with open("/proc/stat") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    idle = vals[3] + vals[4]
    return sum(vals) - idle, sum(vals)


def _own_ticks() -> int:
    """This process's user + system CPU time in clock ticks (all its threads), with that of its
    children once they have ended (a tuner's worker processes, after its pool shut down)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15])


class LoadMeter:
    """Fraction of all cores that *other* processes kept busy since the meter was made: busy time
    in /proc/stat minus this process's own (e.g. OpenMP workers spinning under
    OMP_WAIT_POLICY=active); 0 if unknown.  Made before and read after a long step (a tuning
    run), it tells whether the step ran on a quiet machine."""

    def __init__(self) -> None:
        try:
            self._start: tuple[int, int, int] | None = (*_cpu_times(), _own_ticks())
        except (OSError, ValueError, IndexError):
            self._start = None

    def fraction(self) -> float:
        if self._start is None:
            return 0.0
        b0, t0, s0 = self._start
        try:
            b1, t1, s1 = *_cpu_times(), _own_ticks()
        except (OSError, ValueError, IndexError):
            return 0.0
        return max(0.0, (b1 - b0) - (s1 - s0)) / max(1, t1 - t0)


def busy_fraction(interval: float = 0.5) -> float:
    """Fraction of all cores that other processes kept busy over the next ``interval`` seconds."""
    meter = LoadMeter()
    time.sleep(interval)
    return meter.fraction()


def wait_until_idle(timeout: float = 60.0, threshold: float = 0.1, interval: float = 0.5, streak: int = 1) -> float:
    """Wait (up to ``timeout`` s) until other processes use under ``threshold`` of the CPU for
    ``streak`` intervals in a row; returns the last busy fraction seen, to record with the results.
    On a shared 2-core machine one busy core halves a 2-thread kernel, so time only on an idle
    machine when you can (a streak > 1 skips the short gaps between another agent's jobs)."""
    deadline = time.monotonic() + timeout
    busy = busy_fraction(interval)
    quiet = int(busy <= threshold)
    while quiet < streak and time.monotonic() < deadline:
        busy = busy_fraction(interval)
        quiet = quiet + 1 if busy <= threshold else 0
    return busy


def _loadavg() -> list[float] | None:
    try:
        return [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        return None


# -- timing -----------------------------------------------------------------------------------


@dataclass
class Timing:
    """Seconds per call over ``repeat`` timed calls."""

    median: float
    min: float
    max: float
    repeat: int
    samples: list[float] = field(default_factory=list)

    @classmethod
    def of(cls, samples: list[float]) -> "Timing":
        """The median, min and max of ``samples`` (seconds per call)."""
        if not samples:
            raise ValueError("Timing.of: no samples")
        return cls(statistics.median(samples), min(samples), max(samples), len(samples), list(samples))


def time_fn(fn: Callable[[], Any], repeat: int = 10, warmup: int = 2, number: int = 1) -> Timing:
    """Median seconds per call of ``fn``: ``warmup`` untimed calls, then ``repeat`` samples,
    each the mean of ``number`` back-to-back calls (use ``number`` > 1 for calls of a few us)."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number)
    return Timing.of(samples)


#: seconds to wait before timing the next row: OpenBLAS's worker threads (numpy's matmul)
#: spin for about 0.1 s after a call, and while they spin the next row has a core less --
#: measured: the default-schedule matmul right after numpy 7-9 ms, 0.1 s later 5 ms
SETTLE_SECONDS = 0.2


def time_interleaved(fns: dict[str, Callable[[], Any]], repeat: int = 10, rounds: int = 3,
                     warmup: int = 2, min_sample_seconds: float = 0.0,
                     side_by_side: Iterable[str] = ()) -> dict[str, Timing]:
    """Time several functions in ``rounds`` interleaved rounds (A B C, A B C, ...), ``repeat``
    samples each per round, and report each one's median over all its samples.  A burst of
    load from another process then hits every row alike instead of whichever ran during it;
    each row starts after ``SETTLE_SECONDS``, so that the threads of the row before are idle.
    With ``min_sample_seconds``, a sample is the mean of as many back-to-back calls as fill
    that time (as TVM's ``min_repeat_ms``): single calls of a few microseconds are noise.

    The rows named in ``side_by_side`` share one block a round and take their samples in turn
    (A B A B ...): this machine changes speed every few tenths of a second (a 10 us kernel runs
    at 7.6 us, then at 12 us), and samples taken side by side see the same speed.  Only for
    rows that leave no spinning threads behind (minitvm's pool yields its core while it spins
    and sleeps within about 0.1 ms; OpenBLAS's threads spin for 0.1 s)."""
    numbers = dict.fromkeys(fns, 1)
    for name, fn in fns.items():
        for _ in range(warmup):
            fn()
        if min_sample_seconds:
            numbers[name] = max(1, math.ceil(min_sample_seconds / time_fn(fn, repeat=3, warmup=0).median))
    together = [name for name in fns if name in set(side_by_side)]
    blocks: list[list[str]] = []
    for name in fns:
        block = together if name in together else [name]
        if block not in blocks:
            blocks.append(block)
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for block in blocks:
            time.sleep(SETTLE_SECONDS)
            for name in block:
                fns[name]()
            for _ in range(repeat):
                for name in block:
                    samples[name] += time_fn(fns[name], 1, warmup=0, number=numbers[name]).samples
    return {name: Timing.of(s) for name, s in samples.items()}


# -- results ----------------------------------------------------------------------------------


@dataclass
class Row:
    """One measured implementation.  ``flops`` is per call; ``note`` is printed under the
    table (e.g. "measured at 256^3").  ``baseline=False`` rows get no ratio columns against
    them; a row without comparable work (``comparable=False``, e.g. a different size) gets
    no ratios at all."""

    name: str
    timing: Timing
    flops: float | None = None
    max_abs_err: float | None = None
    note: str = ""
    comparable: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def gflops(self) -> float | None:
        return None if self.flops is None else self.flops / self.timing.median / 1e9


def _ratio(row: Row, base: Row | None) -> float | None:
    """How fast ``row`` is relative to ``base`` (>1: faster), as throughput ratio."""
    if base is None or not row.comparable or not base.comparable:
        return None
    if row.gflops is not None and base.gflops is not None:
        return row.gflops / base.gflops
    return base.timing.median / row.timing.median


def fmt_time(s: float) -> str:
    """Seconds as a short human string (s, ms or us)."""
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def format_table(head: list[str], lines: list[list[str]], left: int = 1) -> str:
    """Align ``lines`` under ``head``: the first ``left`` columns left-aligned, the rest right."""
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(str(c).ljust(w) if k < left else str(c).rjust(w)
                         for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([fmt(head), "  ".join("-" * w for w in widths)] + [fmt(cells) for cells in lines])


def print_table(rows: list[Row], baselines: Iterable[str] = ("numpy", "torch"), title: str = "") -> str:
    """Print (and return) a table: GFLOP/s, median time (min..max), error, ratio vs each baseline."""
    baselines = list(baselines)
    by_name = {r.name: r for r in rows}
    head = ["impl", "GFLOP/s", "median", "min..max", "max|err|"] + [f"vs {b}" for b in baselines]
    lines = []
    for r in rows:
        cells = [r.name,
                 "-" if r.gflops is None else f"{r.gflops:.1f}",
                 fmt_time(r.timing.median),
                 f"{fmt_time(r.timing.min)}..{fmt_time(r.timing.max)}",
                 "-" if r.max_abs_err is None else f"{r.max_abs_err:.1e}"]
        for b in baselines:
            ratio = _ratio(r, by_name.get(b))
            cells.append("-" if ratio is None else f"{ratio:.2f}x")
        lines.append(cells)
    out = [title] if title else []
    out.append(format_table(head, lines))
    notes = [f"  {r.name}: {r.note}" for r in rows if r.note]
    if notes:
        out.append("notes:")
        out += notes
    text = "\n".join(out)
    print(text, flush=True)
    return text


def write_json(name: str, rows: list[Row], config: dict[str, Any] | None = None,
               env: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
               baselines: Iterable[str] = ("numpy", "torch")) -> Path:
    """Write ``benchmarks/results/<name>-<UTC timestamp>.json`` and ``<name>-latest.json``."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    by_name = {r.name: r for r in rows}
    stamp = _dt.datetime.now(_dt.timezone.utc)
    payload = {
        "benchmark": name,
        "utc": stamp.isoformat(timespec="seconds"),
        "config": config or {},
        "env": env if env is not None else environment_info(),
        "rows": [{"name": r.name, "gflops": r.gflops, "flops": r.flops, "max_abs_err": r.max_abs_err,
                  "note": r.note, "comparable": r.comparable, **asdict(r.timing),
                  **{f"ratio_vs_{b}": _ratio(r, by_name.get(b)) for b in baselines}, **r.extra}
                 for r in rows],
        **(extra or {}),
    }
    path = RESULTS_DIR / f"{name}-{stamp.strftime('%Y%m%dT%H%M%SZ')}.json"
    text = json.dumps(payload, indent=2, default=str)
    path.write_text(text)
    (RESULTS_DIR / f"{name}-latest.json").write_text(text)
    return path


# -- the machine's measured peak ----------------------------------------------------------------

#: independent FMA chains in the peak kernel: enough to cover the FMA latency (4-5 cycles) on two
#: pipes, so that the loop is bound by throughput alone
_PEAK_CHAINS = 12


def _peak_kernel_ir(lanes: int) -> str:
    """LLVM IR of ``peak(n, out)``: ``n`` iterations of ``_PEAK_CHAINS`` independent
    ``<lanes x float>`` FMAs, the sum stored to ``out`` (so nothing is dead code)."""
    vec = f"<{lanes} x float>"
    splat = lambda x: "<" + ", ".join([f"float {x}"] * lanes) + ">"  # noqa: E731
    phis, fmas = [], []
    for k in range(_PEAK_CHAINS):
        phis.append(f"  %a{k} = phi {vec} [{splat('1.0')}, %entry], [%b{k}, %loop]")
        fmas.append(f"  %b{k} = call {vec} @llvm.fma.v{lanes}f32({vec} %a{k}, {vec} {splat('0x3FEFFFFFE0000000')}, "
                    f"{vec} {splat('0x3E7AD7F2A0000000')})")
    sums = [f"  %s0 = fadd {vec} %b0, %b1"] + [f"  %s{k - 1} = fadd {vec} %s{k - 2}, %b{k}"
                                                 for k in range(2, _PEAK_CHAINS)]
    return "\n".join([
        f"declare {vec} @llvm.fma.v{lanes}f32({vec}, {vec}, {vec})",
        "define void @peak(i64 %n, ptr %out) {",
        "entry:", "  br label %loop", "loop:", "  %i = phi i64 [0, %entry], [%i1, %loop]",
        *phis, *fmas, "  %i1 = add i64 %i, 1", "  %c = icmp ult i64 %i1, %n", "  br i1 %c, label %loop, label %done",
        "done:", *sums, f"  store {vec} %s{_PEAK_CHAINS - 2}, ptr %out, align 4", "  ret void", "}"])


def measured_peak_gflops(threads: int | None = None, seconds: float = 0.05, tries: int = 5) -> dict[str, Any]:
    """The machine's float32 peak, measured: a JIT-compiled loop of independent vector FMAs
    (512-bit with AVX-512F, else 256-bit) run on ``threads`` threads (default: every core) at
    once, each for about ``seconds``; the best of ``tries`` runs (other processes can only slow
    it down).  ``per_core_gflops`` is one thread's rate over its own CPU time (time on the core,
    so other load barely lowers it).  Returns ``{"gflops", "per_core_gflops", "lanes", "threads", "load"}`` (``load``:
    the fraction of the cores other processes used meanwhile) or ``{"error": ...}``."""
    import threading

    try:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        features = llvm.get_host_cpu_features()
        lanes = 16 if features.get("avx512f") else 8
        mod = llvm.parse_assembly(_peak_kernel_ir(lanes))
        tm = llvm.Target.from_default_triple().create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=features.flatten(), opt=2, jit=True)
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        peak = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p)(engine.get_function_address("peak"))
    except Exception as exc:  # pragma: no cover - informational only
        return {"error": f"{type(exc).__name__}: {exc}"}
    threads = threads or os.cpu_count() or 1
    outs = [ctypes.create_string_buffer(4 * lanes + 64) for _ in range(threads)]
    flop_per_iter = 2 * lanes * _PEAK_CHAINS
    t0 = time.perf_counter()
    peak(100_000, ctypes.addressof(outs[0]))
    iters = max(1000, int(100_000 * seconds / max(time.perf_counter() - t0, 1e-6)))

    cpu_seconds: list[float] = []

    def one(k: int) -> None:
        start = time.thread_time()  # this thread's CPU time: the rate while it held a core
        peak(iters, ctypes.addressof(outs[k]))
        cpu_seconds.append(time.thread_time() - start)

    def run_all(count: int) -> float:
        # ctypes releases the GIL during the call, so the threads run their loops in parallel
        workers = [threading.Thread(target=one, args=(k,)) for k in range(count)]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return count * iters * flop_per_iter / (time.perf_counter() - start) / 1e9

    meter = LoadMeter()
    together = max(run_all(threads) for _ in range(tries))
    # per core from CPU time, not wall time: a core taken by another process for a while does not
    # lower it (no SMT sibling shares the FMA pipes here: one thread per core, see lscpu)
    single = iters * flop_per_iter / min(cpu_seconds) / 1e9
    engine.close()
    return {"gflops": together, "per_core_gflops": single, "lanes": lanes, "threads": threads,
            "load": meter.fraction()}
