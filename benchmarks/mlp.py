"""The TVM quick-start MLP (784 -> 256 -> ReLU -> 10, float32) written with
``relax.frontend.nn``: compile time and run latency, minitvm VM vs numpy vs torch, same run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mlp.py [--batch 1 64] [--repeat 20]

Compile time, per batch size (median of ``--compile-repeat`` fresh compiles):

* ``export``   -- ``model.export_tvm(spec)``: tracing the nn.Module into Relax;
* ``pipeline`` -- ``relax.get_pipeline("zero")(mod)``: LegalizeOps + the VM lowering passes;
* ``codegen``  -- ``minitvm.compile(mod, "llvm")``: TIR lowering, LLVM, bytecode.

Run latency rows (inputs already in each library's array type; the VM row includes
allocating its output, as ``vm["forward"](...)`` does):

* ``numpy``      -- ``np.maximum(x @ W1.T + b1, 0) @ W2.T + b2`` (OpenBLAS);
* ``torch``      -- the same in eager torch, ``torch.set_num_threads(2)``, no grad;
* ``minitvm vm`` -- the exported module compiled for that batch size;
* ``minitvm vm (n)`` -- the module exported with a symbolic batch ``"n"``, compiled once.

The "zero" pipeline applies no schedule: each kernel is the plain loop nest TOPI describes
(single-threaded, unvectorized), so expect minitvm to trail the BLAS libraries by a wide
margin until fusion and default CPU schedules land.  Benchmarks are never tests.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

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


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, nargs="+", default=[1, 64])
    p.add_argument("--repeat", type=int, default=20, help="timed runs per row and round (median reported)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--compile-repeat", type=int, default=3, help="fresh compiles timed per stage")
    p.add_argument("--wait-idle", type=float, default=30.0,
                   help="wait up to this many seconds for other processes to leave the cores idle")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--no-json", action="store_true")
    return p.parse_args(argv)


def mlp_model():
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


def _timing(samples: list[float]) -> Timing:
    s = sorted(samples)
    return Timing(s[len(s) // 2], s[0], s[-1], len(s), samples)


def compile_mlp(batch, repeat: int):
    """Export, pipeline and codegen ``repeat`` times; the last executable and each stage's timing."""
    import minitvm
    from minitvm import relax
    from minitvm.relax.frontend import nn

    stages: dict[str, list[float]] = {"export": [], "pipeline": [], "codegen": []}
    for _ in range(repeat):
        t0 = time.perf_counter()
        mod, param_spec = mlp_model().export_tvm(spec={"forward": {"x": nn.spec.Tensor((batch, IN), "float32")}})
        t1 = time.perf_counter()
        lowered = relax.get_pipeline("zero")(mod)
        t2 = time.perf_counter()
        ex = minitvm.compile(lowered, minitvm.target.Target("llvm"))
        t3 = time.perf_counter()
        for name, dt in zip(stages, (t1 - t0, t2 - t1, t3 - t2)):
            stages[name].append(dt)
    return ex, param_spec, {k: _timing(v) for k, v in stages.items()}


def run_fns(ex, vm_dyn, param_spec, batch: int, rng, torch) -> tuple[dict, dict]:
    """The functions to time at ``batch`` (inputs prepared once) and each one's max |error|."""
    import numpy as np

    import minitvm
    from minitvm import relax

    vm = relax.VirtualMachine(ex, minitvm.cpu())
    x = rng.standard_normal((batch, IN), dtype=np.float32)
    params = [(rng.standard_normal(p.shape) * 0.05).astype("float32") for _, p in param_spec]
    w1, b1, w2, b2 = params
    ref = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2

    nd_args = [minitvm.nd.array(a) for a in (x, *params)]
    fns = {"numpy": lambda: np.maximum(x @ w1.T + b1, 0) @ w2.T + b2}
    outs = {"numpy": fns["numpy"]}
    if torch is not None:
        tx, tw1, tb1, tw2, tb2 = (torch.from_numpy(a) for a in (x, *params))
        fns["torch"] = lambda: torch.nn.functional.linear(
            torch.relu(torch.nn.functional.linear(tx, tw1, tb1)), tw2, tb2)
        outs["torch"] = lambda: fns["torch"]().numpy()
    fns["minitvm vm"] = lambda: vm["forward"](*nd_args)
    outs["minitvm vm"] = lambda: fns["minitvm vm"]().numpy()
    fns["minitvm vm (n)"] = lambda: vm_dyn["forward"](*nd_args)
    outs["minitvm vm (n)"] = lambda: fns["minitvm vm (n)"]().numpy()
    errors = {name: float(np.max(np.abs(get() - ref))) for name, get in outs.items()}

    return fns, errors


def main(argv: list[str] | None = None) -> list[Row]:
    args = parse_args(argv)
    setup_environment(omp_wait_policy="passive")
    import numpy as np

    import minitvm
    from minitvm import relax

    torch = None
    if not args.no_torch:
        try:
            import torch
        except ImportError:
            print("torch not installed: no torch row", file=sys.stderr)
        else:
            torch.set_num_threads(2)
            torch.set_grad_enabled(False)

    rng = np.random.default_rng(0)
    all_rows: list[Row] = []
    tables: list[str] = []
    compile_json: dict = {}
    busy = wait_until_idle(args.wait_idle)

    ex_dyn, _, dyn_compile = compile_mlp("n", args.compile_repeat)
    vm_dyn = relax.VirtualMachine(ex_dyn, minitvm.cpu())
    compile_json["n"] = {k: vars(v) for k, v in dyn_compile.items()}

    for batch in args.batch:
        ex, param_spec, stage_t = compile_mlp(batch, args.compile_repeat)
        compile_json[str(batch)] = {k: vars(v) for k, v in stage_t.items()}
        fns, errors = run_fns(ex, vm_dyn, param_spec, batch, rng, torch)
        flops = 2.0 * batch * (IN * HIDDEN + HIDDEN * OUT)
        timings = time_interleaved(fns, args.repeat, args.rounds, args.warmup)
        rows = [Row(name, t, flops, errors[name], extra={"batch": batch}) for name, t in timings.items()]
        rows[-1].note = "symbolic batch n, compiled once for every batch size"
        tables.append(print_table(rows, baselines=("numpy", "torch"),
                                  title=f"\nrun latency, batch {batch} (forward of the MLP)"))
        all_rows += [Row(f"{r.name} b={batch}", r.timing, r.flops, r.max_abs_err, r.note, extra=r.extra)
                     for r in rows]

    compile_rows = [Row(f"{stage} b={b}", Timing(**t))
                    for b, stages in compile_json.items() for stage, t in stages.items()]
    tables.append(print_table(compile_rows, baselines=(),
                              title="\ncompile time (export_tvm | get_pipeline('zero') | minitvm.compile)"))

    env = environment_info()
    passes = [q.info.name for q in getattr(relax.get_pipeline("zero"), "passes", [])]
    kernels = sorted(gv.name_hint for gv, f in ex_dyn.ir_module.items() if not isinstance(f, relax.Function))
    print(f"\nget_pipeline('zero') = {' -> '.join(passes)}\nkernels (batch n): {', '.join(kernels)}")
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
                                  "other_load_at_start": busy, "model": [IN, HIDDEN, OUT],
                                  "zero_pipeline": passes, "kernels": kernels},
                          extra={"compile_seconds": compile_json, "tables": tables})
        print(f"\nwrote {path}")
    return all_rows


if __name__ == "__main__":
    main()
