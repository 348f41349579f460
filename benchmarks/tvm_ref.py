"""Apache TVM's zero-pipeline numbers for the MLP and the model zoo: the reference rows of
``benchmarks/run.py``.  Optional: nothing needs TVM, and the project never installs it.

TVM runs in a child process (``python benchmarks/tvm_ref.py ...``) started with a Python that
can ``import tvm``: the running one if it can, else ``--tvm-python`` /
``$MINITVM_BENCH_TVM_PYTHON`` (e.g. a venv made with
``python3 -m venv /tmp/tvmvenv && /tmp/tvmvenv/bin/pip install apache-tvm torch==2.13.0 numpy``).
A separate process also keeps TVM's runtime from pinning the benchmark's main thread to one
core (after which torch's threads share that core).

In the child: ``TVM_NUM_THREADS=2`` (else TVM uses one of the 2 cores), a target naming the CPU
(``{"kind": "llvm", "mcpu": <host cpu>}``: ``-mcpu=native`` silently becomes generic x86-64),
models compiled as TVM's quick start does -- ``relax.get_pipeline("zero")`` then
``tvm.compile`` (whose CPU pipeline adds only the VM lowering: kernels stay unscheduled).
Every output is checked against numpy (MLP) or torch (zoo) before it is timed.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, Timing, time_fn  # noqa: E402
from zoo import ZooResult, compare_outputs, run_stage, to_numpy_outputs  # noqa: E402

ENV_VAR = "MINITVM_BENCH_TVM_PYTHON"
#: ZooResult.model of the quick-start MLP rows (the zoo has its own "mlp", built in torch)
NN_MLP = "nn-mlp"
#: the model zoo's source, loaded by path in the child (importing minitvm there is not needed)
ZOO_FILE = ROOT / "minitvm" / "testing" / "zoo.py"


# -- parent side: find a TVM, run the child, read its results -----------------------------------


def find_tvm_python(explicit: str | None = None) -> str | None:
    """A Python that can ``import tvm``: ``explicit``, else $MINITVM_BENCH_TVM_PYTHON, else this
    one if TVM is importable here; None when there is none."""
    candidate = explicit or os.environ.get(ENV_VAR)
    if candidate:
        return candidate if Path(candidate).exists() else None
    return sys.executable if importlib.util.find_spec("tvm") is not None else None


def run_child(python: str, *, mcpu: str, mlp_batches: list[int], zoo_models: list[str], zoo_batches: list[int],
              repeat: int, warmup: int, timeout: float = 1800.0) -> list[ZooResult]:
    """Run this file under ``python`` and return one ZooResult per case (``model`` is NN_MLP
    for the quick-start MLP rows, else the zoo model's name).  RuntimeError if the child fails."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "tvm.json"
        cmd = [python, str(Path(__file__).resolve()), "--out", str(out), "--mcpu", mcpu,
               "--repeat", str(repeat), "--warmup", str(warmup),
               "--mlp-batches", *map(str, mlp_batches), "--zoo-models", *zoo_models,
               "--zoo-batches", *map(str, zoo_batches)]
        env = {**os.environ, "TVM_NUM_THREADS": "2"}
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise RuntimeError(f"TVM reference run ({python}) failed with exit code {proc.returncode}: "
                               + " | ".join(tail))
        return [result_from_json(d) for d in json.loads(out.read_text())["results"]]


def result_from_json(d: dict[str, Any]) -> ZooResult:
    """A ZooResult back from ``dataclasses.asdict`` form."""
    d = dict(d)
    d["timings"] = {k: Timing(**t) for k, t in d.get("timings", {}).items()}
    return ZooResult(**d)


# -- child side: measure with TVM ---------------------------------------------------------------


def tvm_compile(mod, target):
    """TVM's quick start: the zero pipeline, then ``tvm.compile`` (VM lowering, codegen)."""
    import tvm
    from tvm import relax

    return tvm.compile(relax.get_pipeline("zero")(mod), target)


def measure_mlp(batch: int, target, repeat: int, warmup: int) -> ZooResult:
    """The quick-start MLP built with TVM's ``relax.frontend.nn`` (same model as mlp.py)."""
    import tvm
    from mlp import export_mlp, mlp_data
    from tvm import relax
    from tvm.relax.frontend import nn

    result = ZooResult(NN_MLP, batch)
    try:
        mod, result.import_s = run_stage(result, "import", lambda: export_mlp(batch, nn)[0])
        ex, result.compile_s = run_stage(result, "compile", lambda: tvm_compile(mod, target))
        forward = relax.VirtualMachine(ex, tvm.cpu())["forward"]
        x, params, ref = mlp_data(batch)
        args = [tvm.runtime.tensor(a) for a in (x, *params)]
        (result.max_abs_err, result.tolerance), _ = run_stage(
            result, "check", lambda: compare_outputs(to_numpy_outputs(forward(*args)), [ref], f"TVM MLP b={batch}"))
        result.timings = {"tvm zero": time_fn(lambda: forward(*args), repeat, warmup)}
    except Exception:
        pass
    return result


def measure_zoo_model(zoo, name: str, batch: int, target, repeat: int, warmup: int) -> ZooResult:
    """One zoo model through TVM's torch importer and zero pipeline, checked against torch."""
    import torch
    import tvm
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    model = zoo.MODELS[name]
    result = ZooResult(name, batch)
    try:
        ep, result.export_s = run_stage(result, "export", lambda: zoo.export(model, batch))
        mod, result.import_s = run_stage(result, "import",
                                      lambda: from_exported_program(ep, unwrap_unit_return_tuple=True))
        ex, result.compile_s = run_stage(result, "compile", lambda: tvm_compile(mod, target))
        inputs = model.example_inputs(batch)
        with torch.no_grad():
            want = to_numpy_outputs(model.build()(*inputs))
        main = relax.VirtualMachine(ex, tvm.cpu())["main"]
        args = [tvm.runtime.tensor(x.numpy()) for x in inputs]
        (result.max_abs_err, result.tolerance), _ = run_stage(
            result, "check", lambda: compare_outputs(to_numpy_outputs(main(*args)), want, f"TVM {name} b={batch}"))
        result.timings = {"tvm zero": time_fn(lambda: main(*args), repeat, warmup)}
    except Exception:
        pass
    return result


def load_model_zoo():
    """``minitvm/testing/zoo.py`` loaded from its file (it imports only torch)."""
    spec = importlib.util.spec_from_file_location("_minitvm_model_zoo", ZOO_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="TVM zero-pipeline reference numbers (child of run.py)")
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--mcpu", required=True, help="LLVM CPU name for the target (e.g. znver5)")
    p.add_argument("--mlp-batches", type=int, nargs="*", default=[])
    p.add_argument("--zoo-models", nargs="*", default=[])
    p.add_argument("--zoo-batches", type=int, nargs="*", default=[])
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    args = p.parse_args(argv)
    import torch
    import tvm

    torch.set_num_threads(2)
    target = tvm.target.Target({"kind": "llvm", "mcpu": args.mcpu, "num-cores": 2})
    results = [measure_mlp(b, target, args.repeat, args.warmup) for b in args.mlp_batches]
    if args.zoo_models:
        zoo = load_model_zoo()
        results += [measure_zoo_model(zoo, name, b, target, args.repeat, args.warmup)
                    for name in args.zoo_models for b in args.zoo_batches]
    info = {"tvm": tvm.__version__, "torch": torch.__version__, "target": str(target),
            "TVM_NUM_THREADS": os.environ.get("TVM_NUM_THREADS")}
    Path(args.out).write_text(json.dumps({"info": info, "results": [dataclasses.asdict(r) for r in results]},
                                         default=str))


if __name__ == "__main__":
    main()
