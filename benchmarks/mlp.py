"""The TVM quick-start MLP (784 -> 256 -> ReLU -> 10, float32) written with
``relax.frontend.nn``: compile time and run latency, minitvm VM vs numpy vs torch, same run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mlp.py [--batch 1 64] [--repeat 20]

Compile time, per pipeline and batch size (median of ``--compile-repeat`` fresh compiles in a
warm process):

* ``export``   -- ``model.export_tvm(spec)``: tracing the nn.Module into Relax;
* ``pipeline`` -- ``relax.get_pipeline(name)(mod)``: ``"default"`` (LegalizeOps + fusion +
  DefaultCPUSchedule, what ``minitvm.compile`` runs) or ``"zero"`` (LegalizeOps + fusion, no
  schedule: TVM's zero pipeline);
* ``codegen``  -- ``minitvm.compile(lowered, "llvm", relax_pipeline=None)``: the lowering to
  the VM, TIR lowering, LLVM, bytecode.

Run latency rows (inputs already in each library's array type; the VM rows include
allocating the output, as ``vm["forward"](...)`` does):

* ``numpy``   -- ``np.maximum(x @ W1.T + b1, 0) @ W2.T + b2`` (OpenBLAS);
* ``torch``   -- the same in eager torch, ``torch.set_num_threads(2)``, no grad;
* ``minitvm default`` / ``minitvm zero`` -- the exported module compiled for that batch size
  with that pipeline;
* ``minitvm default (n)`` -- exported with a symbolic batch ``"n"``, compiled once.

``benchmarks/run.py`` reuses these functions for the MLP rows of the one-table benchmark.
Benchmarks are never tests.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    Row,
    Timing,
    environment_info,
    print_table,
    setup_environment,
    time_interleaved,
    wait_until_idle,
    write_json,
)

IN, HIDDEN, OUT = 784, 256, 10
#: (name, shape) of the MLP's parameters, in the order export_tvm lists them
PARAM_SHAPES = (("fc1.weight", (HIDDEN, IN)), ("fc1.bias", (HIDDEN,)), ("fc2.weight", (OUT, HIDDEN)),
                ("fc2.bias", (OUT,)))
#: |minitvm - numpy| allowed on the MLP's outputs (float32, 784-term dot products of ~N(0, 0.05^2))
MLP_ATOL = 1e-4


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, nargs="+", default=[1, 64])
    p.add_argument("--pipelines", nargs="+", default=["default", "zero"], help="relax pipelines to compile with")
    p.add_argument("--repeat", type=int, default=20, help="timed runs per row and round (median reported)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--compile-repeat", type=int, default=3, help="fresh compiles timed per stage")
    p.add_argument("--wait-idle", type=float, default=30.0,
                   help="wait up to this many seconds for other processes to leave the cores idle")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--no-json", action="store_true")
    return p.parse_args(argv)


def mlp_model(nn: Any = None):
    """The quick-start MLP as an ``nn.Module`` of ``nn`` (minitvm's ``relax.frontend.nn`` by
    default; TVM's has the same API, which is how the TVM reference builds the same model)."""
    if nn is None:
        from minitvm.relax.frontend import nn

    class MLPModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(IN, HIDDEN)
            self.relu1 = nn.ReLU()
            self.fc2 = nn.Linear(HIDDEN, OUT)

        def forward(self, x):
            return self.fc2(self.relu1(self.fc1(x)))

    return MLPModel()


def export_mlp(batch: int | str, nn: Any = None):
    """``export_tvm`` of the MLP for input shape ``(batch, 784)``: (IRModule, param spec)."""
    if nn is None:
        from minitvm.relax.frontend import nn
    mod, param_spec = mlp_model(nn).export_tvm(spec={"forward": {"x": nn.spec.Tensor((batch, IN), "float32")}})
    shapes = [tuple(int(d) for d in p.shape) for _, p in param_spec]
    if shapes != [s for _, s in PARAM_SHAPES]:
        raise AssertionError(f"export_mlp: parameter shapes {shapes} differ from PARAM_SHAPES {PARAM_SHAPES}")
    return mod, param_spec


def mlp_data(batch: int, seed: int = 0):
    """Seeded input ``x``, parameters (PARAM_SHAPES order) and the numpy reference output."""
    import numpy as np

    rng = np.random.default_rng(seed + batch)
    x = rng.standard_normal((batch, IN), dtype=np.float32)
    params = [(rng.standard_normal(shape) * 0.05).astype("float32") for _, shape in PARAM_SHAPES]
    return x, params, mlp_numpy(x, params)


def mlp_numpy(x, params):
    """The MLP in numpy: relu(x @ W1.T + b1) @ W2.T + b2."""
    import numpy as np

    w1, b1, w2, b2 = params
    return np.maximum(x @ w1.T + b1, 0) @ w2.T + b2


def compile_mlp(batch: int | str, pipeline: str = "default", repeat: int = 1):
    """Export, run ``pipeline`` and codegen ``repeat`` times: the last executable and each
    stage's Timing ("export", "pipeline", "codegen")."""
    import minitvm
    from minitvm import relax

    stages: dict[str, list[float]] = {"export": [], "pipeline": [], "codegen": []}
    ex = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        mod, _ = export_mlp(batch)
        t1 = time.perf_counter()
        lowered = relax.get_pipeline(pipeline)(mod)
        t2 = time.perf_counter()
        ex = minitvm.compile(lowered, minitvm.target.Target("llvm"), relax_pipeline=None)
        t3 = time.perf_counter()
        for name, dt in zip(stages, (t1 - t0, t2 - t1, t3 - t2)):
            stages[name].append(dt)
    return ex, {k: Timing.of(v) for k, v in stages.items()}


def run_fns(exes: dict[str, Any], batch: int, torch: Any) -> tuple[dict[str, Callable[[], Any]], dict[str, float]]:
    """The functions to time at ``batch`` (inputs prepared once): numpy, torch, then one per
    executable in ``exes`` (row name -> VM Executable), and each one's max |error| vs numpy."""
    import numpy as np

    import minitvm
    from minitvm import relax

    x, params, ref = mlp_data(batch)
    fns: dict[str, Callable[[], Any]] = {"numpy": lambda: mlp_numpy(x, params)}
    outs: dict[str, Callable[[], Any]] = {"numpy": fns["numpy"]}
    if torch is not None:
        tx, tw1, tb1, tw2, tb2 = (torch.from_numpy(a) for a in (x, *params))
        fns["torch"] = lambda: torch.nn.functional.linear(
            torch.relu(torch.nn.functional.linear(tx, tw1, tb1)), tw2, tb2)
        outs["torch"] = lambda: fns["torch"]().numpy()
    nd_args = [minitvm.nd.array(a) for a in (x, *params)]
    for name, ex in exes.items():
        forward = relax.VirtualMachine(ex, minitvm.cpu())["forward"]
        fns[name] = lambda forward=forward: forward(*nd_args)
        outs[name] = lambda f=fns[name]: f().numpy()
    errors = {name: float(np.max(np.abs(get() - ref))) for name, get in outs.items()}
    return fns, errors


def measure_batch(exes: dict[str, Any], batch: int, torch: Any, *, repeat: int = 20, rounds: int = 3,
                  warmup: int = 3) -> list[Row]:
    """numpy, torch and each executable at ``batch``, timed in interleaved rounds; rows carry
    max |error| vs numpy (check it against MLP_ATOL)."""
    fns, errors = run_fns(exes, batch, torch)
    flops = 2.0 * batch * (IN * HIDDEN + HIDDEN * OUT)
    timings = time_interleaved(fns, repeat, rounds, warmup)
    return [Row(name, t, flops, errors[name], extra={"batch": batch}) for name, t in timings.items()]


def import_torch(use_torch: bool = True):
    """torch set up for benchmarking (2 threads, no grad), or None if absent or not wanted."""
    if not use_torch:
        return None
    try:
        import torch
    except ImportError:
        print("torch not installed: no torch row", file=sys.stderr)
        return None
    torch.set_num_threads(2)
    torch.set_grad_enabled(False)
    return torch


def main(argv: list[str] | None = None) -> list[Row]:
    args = parse_args(argv)
    # torch's libgomp is left at its default wait policy (forcing "passive" slows torch eager; see
    # run.py); minitvm's parallel loops run on its own thread pool
    setup_environment(omp_wait_policy=None)
    torch = import_torch(not args.no_torch)
    from minitvm import relax
    all_rows: list[Row] = []
    tables: list[str] = []
    compile_json: dict = {}
    busy = wait_until_idle(args.wait_idle)
    compile_mlp(1)  # warm the process up: the first compile loads LLVM and the passes

    ex_dyn, stage_t = compile_mlp("n", "default", args.compile_repeat)
    compile_json["default b=n"] = {k: vars(v) for k, v in stage_t.items()}
    for batch in args.batch:
        exes = {}
        for pipeline in args.pipelines:
            exes[f"minitvm {pipeline}"], stage_t = compile_mlp(batch, pipeline, args.compile_repeat)
            compile_json[f"{pipeline} b={batch}"] = {k: vars(v) for k, v in stage_t.items()}
        exes["minitvm default (n)"] = ex_dyn
        rows = measure_batch(exes, batch, torch, repeat=args.repeat, rounds=args.rounds, warmup=args.warmup)
        rows[-1].note = "symbolic batch n, compiled once for every batch size"
        tables.append(print_table(rows, baselines=("numpy", "torch"),
                                  title=f"\nrun latency, batch {batch} (forward of the MLP)"))
        all_rows += [Row(f"{r.name} b={batch}", r.timing, r.flops, r.max_abs_err, r.note, extra=r.extra)
                     for r in rows]

    compile_rows = [Row(f"{stage} {key}", Timing(**t))
                    for key, stages in compile_json.items() for stage, t in stages.items()]
    tables.append(print_table(compile_rows, baselines=(),
                              title="\ncompile time (export_tvm | get_pipeline(name) | minitvm.compile)"))

    env = environment_info()
    passes = {name: [q.info.name for q in getattr(relax.get_pipeline(name), "passes", [])] for name in args.pipelines}
    for name, names in passes.items():
        print(f"get_pipeline({name!r}) = {' -> '.join(names)}")
    print(f"\ncpu {env.get('llvm_cpu')} x{env.get('cpus')} | numpy {env.get('numpy')} | torch "
          f"{env.get('torch', '-')} threads {env.get('torch_threads', '-')} | OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY')} | {args.rounds} rounds x {args.repeat} runs (median) | "
          f"other load at start {busy:.0%}")
    if busy > 0.1:
        print("warning: other processes were using the CPU when timing started; numbers are noisy")
    if not args.no_json:
        path = write_json("mlp", all_rows + compile_rows, env=env,
                          config={"batch": args.batch, "repeat": args.repeat, "rounds": args.rounds,
                                  "warmup": args.warmup, "compile_repeat": args.compile_repeat,
                                  "other_load_at_start": busy, "model": [IN, HIDDEN, OUT], "pipelines": passes},
                          extra={"compile_seconds": compile_json, "tables": tables})
        print(f"\nwrote {path}")
    return all_rows


if __name__ == "__main__":
    main()
