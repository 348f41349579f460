"""``torch.compile(model, backend="minitvm")`` against torch eager, ``torch.compile`` with inductor
and minitvm's own path (``torch.export`` -> ``from_exported_program`` -> VM) on zoo models and the
realistic-size models of ``realistic.py``.

    .venv/bin/python benchmarks/dynamo.py [--models resnet_small,transformer_sdpa,bert_encoder | zoo |
                                           realistic | all | resnet18,gpt2_mini ...]
                                          [--batches 1,8] [--repeat 10] [--rounds 3] [--tiny]

``--models`` takes zoo names (``minitvm.testing.zoo``), the realistic section's names (``resnet18``,
``mobilenet_v2``, ``vit_tiny``, ``bert_mini``, ``gpt2_mini``: built by ``realistic.py``'s own
builders), ``zoo``, ``realistic`` or ``all`` (both).  ``--tiny`` is a smoke run: the realistic
models at their tiny configs, 2 samples in 1 round unless ``--repeat``/``--rounds`` say otherwise.

Every row runs under ``torch.no_grad()`` (dynamo guards on the grad mode, so each is compiled
and timed in the same one), is compiled by one call before timing (the seconds are printed; the
two minitvm rows compile cold, kernel caches cleared first), checked against eager torch with
the zoo's or the realistic section's tolerance (``WRONG`` after the error when outside it), and
timed in interleaved rounds.  ``minitvm dynamo`` is ``relax_dynamo()``, the backend the name
``"minitvm"`` stands for; a graph it ran in eager torch is counted in its error cell
(``N eager``), since the row then times torch, not minitvm.  It differs from ``minitvm VM`` by
dynamo's guards, the backend's shape/weight-version lookup, the torch <-> numpy views of the
inputs and the copy of the outputs.  Load (``/proc/loadavg`` and the share of the CPU other
processes used during the run) is printed with the table: on a busy machine the ratios move, so
compare rows of one run.  Nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import realistic  # noqa: E402
import zoo as zoo_bench  # noqa: E402
from common import LoadMeter, _loadavg, fmt_time, format_table, setup_environment, time_interleaved  # noqa: E402
from compile_time import clear_caches  # noqa: E402

DEFAULT_MODELS = "resnet_small,transformer_sdpa,bert_encoder"
ROWS = ("torch eager", "inductor", "minitvm dynamo", "minitvm VM")


def _zoo_names() -> list[str]:
    from minitvm.testing import zoo

    return list(zoo.MODELS)


def model_names(spec: str) -> list[str]:
    """``--models``: names from the zoo and the realistic section, ``zoo``, ``realistic``, ``all``."""
    groups = {"zoo": _zoo_names(), "realistic": list(realistic.MODELS)}
    groups["all"] = groups["zoo"] + groups["realistic"]
    names: list[str] = []
    for item in (s.strip() for s in spec.split(",") if s.strip()):
        names += groups.get(item, [item])
    unknown = [n for n in names if n not in groups["all"]]
    if unknown:
        raise SystemExit(f"dynamo.py --models: unknown model(s) {', '.join(unknown)}; known: "
                         f"{', '.join(groups['all'])}, or zoo, realistic, all")
    return list(dict.fromkeys(names))


def bench_model(name: str, tiny: bool) -> tuple[Any, Callable[[Any, int], Any], float, float]:
    """The model as a ``zoo.ZooModel``, its ``export(model, batch)`` and its tolerance (atol,
    rtol of max |eager|): a realistic model's from ``realistic.py``, a zoo model's as the zoo's."""
    from minitvm.testing import zoo

    if name in realistic.MODELS:
        return realistic.MODELS[name].zoo_model(tiny), realistic.export, realistic.ATOL, realistic.RTOL
    return zoo.MODELS[name], zoo.export, zoo_bench.ATOL, zoo_bench.RTOL


def _flat(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in _flat(o)]
    return [out.detach().numpy() if hasattr(out, "detach") else out.numpy()]


def _check(got: Any, want: list[Any], atol: float, rtol: float) -> str:
    """max |got - want| over the outputs, and ``WRONG`` when over ``atol + rtol * max |want|``."""
    import numpy as np

    err = max(float(np.abs(g - w).max()) for g, w in zip(_flat(got), want))
    bound = atol + rtol * max(float(np.abs(w).max()) for w in want)
    return f"{err:.1e}" + ("" if err <= bound else " WRONG")


def _prepare(row: str, module: Any, inputs: tuple, model: Any, export: Callable[[Any, int], Any],
             batch: int) -> tuple[Callable[[], Any], str]:
    """The row's one-call function, compiled by a first call, and a note for its error cell."""
    import torch

    import minitvm
    from minitvm import relax
    from minitvm.relax.frontend.torch import from_exported_program, relax_dynamo

    if row == "torch eager":
        return (lambda: module(*inputs)), ""
    if row.startswith("minitvm"):
        clear_caches()  # a cold compile: no kernel of an earlier row is reused
    if row == "inductor":
        compiled = torch.compile(module, backend="inductor", dynamic=False)
        compiled(*inputs)
        return (lambda: compiled(*inputs)), ""
    if row == "minitvm dynamo":
        backend = relax_dynamo()  # what backend="minitvm" builds, with its record of the builds
        compiled = torch.compile(module, backend=backend, dynamic=False)
        compiled(*inputs)
        eager = sum(1 for b in backend.compiles if b.eager)
        return (lambda: compiled(*inputs)), f" {eager} eager" if eager else ""
    mod = from_exported_program(export(model, batch), unwrap_unit_return_tuple=True)
    main = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())["main"]
    nd_inputs = [minitvm.nd.array(x.numpy()) for x in inputs]
    return (lambda: main(*nd_inputs)), ""


def measure(model_name: str, batch: int, repeat: int, rounds: int, tiny: bool = False) -> list[list[str]]:
    """One table line per row for ``model_name`` at ``batch``."""
    import torch

    model, export, atol, rtol = bench_model(model_name, tiny)
    module, inputs = model.build(), model.example_inputs(batch)
    torch._dynamo.reset()
    want = _flat(module(*inputs))
    fns, info = {}, {}
    for row in ROWS:
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn, note = _prepare(row, module, inputs, model, export, batch)
            err = _check(fn(), want, atol, rtol) + note
        except Exception as exc:  # a row that fails says so; the others are still timed
            info[row] = ("-", f"FAILED {type(exc).__name__}: {str(exc).splitlines()[0][:80]}")
            continue
        info[row] = (f"{time.perf_counter() - t0:.2f}", err)
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


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=DEFAULT_MODELS,
                   help="comma list of zoo and realistic models, or zoo, realistic, all")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--repeat", type=int, default=None, help="timed calls per row and round (10; --tiny 2)")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (3; --tiny 1)")
    p.add_argument("--tiny", action="store_true", help="a smoke run: tiny realistic models, few samples")
    args = p.parse_args(argv)
    repeat = args.repeat or (2 if args.tiny else 10)
    rounds = args.rounds or (1 if args.tiny else 3)
    setup_environment()
    import torch

    import minitvm  # noqa: F401 - registers backend="minitvm"

    names = model_names(args.models)
    torch.set_num_threads(2)
    meter, load_before = LoadMeter(), _loadavg()
    lines = []
    with torch.no_grad():
        for name in names:
            for batch in [int(b) for b in args.batches.split(",")]:
                lines += measure(name, batch, repeat, rounds, args.tiny)
                print("\n".join("  ".join(line) for line in lines[-len(ROWS):]), flush=True)
    head = ["model", "row", "median", "min..max", "vs eager", "compile s", "max|err|"]
    text = (format_table(head, lines, left=2) + f"\nload average before {load_before}, after {_loadavg()}; "
            f"other processes used {meter.fraction():.0%} of the CPU during the run")
    print("\n" + text)
    return text


if __name__ == "__main__":
    main()
