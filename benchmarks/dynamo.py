"""``torch.compile(model, backend="minitvm")`` against torch eager, ``torch.compile`` with inductor
and minitvm's own path (``torch.export`` -> ``from_exported_program`` -> VM) on zoo models.

    .venv/bin/python benchmarks/dynamo.py [--models resnet_small,transformer_sdpa,bert_encoder | all]
                                          [--batches 1,8] [--repeat 10] [--rounds 3]

Every row runs under ``torch.no_grad()`` (dynamo guards on the grad mode, so each is compiled
and timed in the same one), is compiled by one call before timing (the seconds are printed),
checked against eager torch, and timed in interleaved rounds.  ``minitvm dynamo`` differs from
``minitvm VM`` by dynamo's guards, the backend's shape/weight-version lookup, the torch <-> numpy
views of the inputs and the copy of the outputs.  Load (``/proc/loadavg`` and the share of the
CPU other processes used during the run) is printed with the table: on a busy machine the
ratios move, so compare rows of one run.  Nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import LoadMeter, _loadavg, fmt_time, format_table, setup_environment, time_interleaved  # noqa: E402

DEFAULT_MODELS = "resnet_small,transformer_sdpa,bert_encoder"
ROWS = ("torch eager", "inductor", "minitvm dynamo", "minitvm VM")


def _flat(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in _flat(o)]
    return [out.detach().numpy() if hasattr(out, "detach") else out.numpy()]


def _max_err(got: Any, want: list[Any]) -> float:
    import numpy as np

    return max(float(np.abs(g - w).max()) for g, w in zip(_flat(got), want))


def _prepare(name: str, module: Any, inputs: tuple, zoo_model: Any, batch: int) -> Callable[[], Any]:
    """The row's one-call function, compiled by a first call."""
    import torch

    import minitvm
    from minitvm import relax
    from minitvm.relax.frontend.torch import from_exported_program

    if name == "torch eager":
        return lambda: module(*inputs)
    if name in ("inductor", "minitvm dynamo"):
        compiled = torch.compile(module, backend="inductor" if name == "inductor" else "minitvm", dynamic=False)
        compiled(*inputs)
        return lambda: compiled(*inputs)
    from minitvm.testing import zoo

    mod = from_exported_program(zoo.export(zoo_model, batch), unwrap_unit_return_tuple=True)
    main = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())["main"]
    nd_inputs = [minitvm.nd.array(x.numpy()) for x in inputs]
    return lambda: main(*nd_inputs)


def measure(model_name: str, batch: int, repeat: int, rounds: int) -> list[list[str]]:
    """One table line per row for ``model_name`` at ``batch``."""
    import torch

    from minitvm.testing import zoo

    zoo_model = zoo.MODELS[model_name]
    module, inputs = zoo_model.build(), zoo_model.example_inputs(batch)
    torch._dynamo.reset()
    want = _flat(module(*inputs))
    fns, info = {}, {}
    for row in ROWS:
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn = _prepare(row, module, inputs, zoo_model, batch)
            err = _max_err(fn(), want)
        except Exception as exc:  # a row that fails says so; the others are still timed
            info[row] = ("-", f"FAILED {type(exc).__name__}: {str(exc).splitlines()[0][:80]}")
            continue
        info[row] = (f"{time.perf_counter() - t0:.2f}", f"{err:.1e}")
        fns[row] = fn
    timings = time_interleaved(fns, repeat=repeat, rounds=rounds, warmup=2)
    eager = timings.get("torch eager")
    lines = []
    for row in ROWS:
        t = timings.get(row)
        ratio = f"{t.median / eager.median:.2f}x" if t and eager else "-"
        lines.append([f"{model_name} b{batch}", row, fmt_time(t.median) if t else "-",
                      f"{fmt_time(t.min)}..{fmt_time(t.max)}" if t else "-", ratio, *info[row]])
    return lines


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=DEFAULT_MODELS, help="comma list of zoo models, or all")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    setup_environment()
    import torch

    import minitvm  # noqa: F401 - registers backend="minitvm"

    torch.set_num_threads(2)
    meter, load_before = LoadMeter(), _loadavg()
    lines = []
    with torch.no_grad():
        from minitvm.testing import zoo

        names = list(zoo.MODELS) if args.models == "all" else [m.strip() for m in args.models.split(",") if m.strip()]
        for name in names:
            for batch in [int(b) for b in args.batches.split(",")]:
                lines += measure(name, batch, args.repeat, args.rounds)
    head = ["model", "row", "median", "min..max", "vs eager", "compile s", "max|err|"]
    print(format_table(head, lines, left=2))
    print(f"load average before {load_before}, after {_loadavg()}; other processes used "
          f"{meter.fraction():.0%} of the CPU during the run")


if __name__ == "__main__":
    main()
