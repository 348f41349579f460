"""The ONNX importer measured on ONNX's own backend cases (``onnx.backend.test.case.node``: a
model and expected outputs per operator case, written by ONNX, shipped inside the ``onnx`` wheel,
computed in Python so nothing is downloaded; ``--light``: the wheel's ``light`` models).

Each case is imported with ``from_onnx``, compiled with the zero pipeline, run on the VM with
every data set, and compared with the expected outputs (floats to rtol 1e-3, atol 1e-5).  A case
ends in one of the outcomes of :mod:`.onnx_backend_cases`: ``pass``, ``unsupported operator``
(``OpNotImplemented``), ``refused`` (a converter's clear ``from_onnx: ...`` error: a variant or a
run-time shape it does not take), ``error`` (anything else), ``wrong dtype or shape``,
``wrong values``, ``timeout`` (and, for another interpreter, ``crash``).

    python -m minitvm.testing.onnx_node_cases              # the tally and every failure
    python -m minitvm.testing.onnx_node_cases --op Resize  # cases whose graph uses Resize
    python -m minitvm.testing.onnx_node_cases --freeze-int-inputs
        # axes, shapes and sizes the cases pass as inputs made constants first (importers, TVM's
        # too, want them known while importing)
    python -m minitvm.testing.onnx_node_cases --tvm-python /path/to/tvm-venv/bin/python
        # the same cases through Apache TVM's importer, in that interpreter
    python -m minitvm.testing.onnx_node_cases --light   # the light models (ResNet-50 ...)
    python -m minitvm.testing.onnx_node_cases --zoo     # every zoo model exported by torch.onnx
"""

from __future__ import annotations

import argparse
import json
import subprocess
import warnings
from collections import Counter
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from .. import compile as _compile
from .. import cpu, nd
from ..relax import VirtualMachine, get_pipeline
from ..relax.frontend.onnx import CONVERTERS, from_onnx
from . import onnx_backend_cases as _cases
from . import zoo as _zoo

__all__ = ["run_case", "minitvm_prepare", "zoo_case", "sweep", "tvm_sweep", "main"]

#: a zoo model's outputs through ONNX match eager torch to these (as benchmarks/zoo.py's rows)
ZOO_RTOL, ZOO_ATOL = 1e-4, 1e-4


def minitvm_prepare(model: Any) -> Callable[[list], list]:
    """minitvm's importer, the zero pipeline, LLVM and the VM on ``model``."""
    vm = VirtualMachine(_compile(get_pipeline("zero")(from_onnx(model)), target="llvm", relax_pipeline=None), cpu())

    def run(inputs: list) -> list:
        got = vm["main"](*(nd.array(np.asarray(v)) for v in inputs))
        return [g.numpy() for g in got] if isinstance(got, (list, tuple)) else [got.numpy()]
    return run


def run_case(case: Any, seconds: int = 30, freeze_int_inputs: bool = False) -> tuple[str, str]:
    """(outcome, detail) of one backend case through minitvm; ``freeze_int_inputs`` first makes
    its small integer inputs constants (see :func:`.onnx_backend_cases.frozen`)."""
    return _cases.run_case(case, minitvm_prepare, seconds, freeze_int_inputs)


def zoo_case(name: str, batch: int = 2) -> SimpleNamespace:
    """Zoo model ``name`` as a case: exported by ``torch.onnx.export`` (torch's dynamo exporter,
    which needs onnxscript) on its seeded inputs for ``batch``, expected to give eager torch's output."""
    import torch  # lazy: torch is an optional extra, heavy to import

    model = _zoo.MODELS[name]
    module, args = model.build(), model.example_inputs(batch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's own notes
        proto = torch.onnx.export(module, args, dynamo=True, verbose=False).model_proto
        with torch.no_grad():
            want = module(*args)
    want = [w.numpy() for w in (want if isinstance(want, (tuple, list)) else [want])]
    return SimpleNamespace(name=f"zoo_{name}", model=proto, data_sets=[([a.numpy() for a in args], want)],
                           rtol=ZOO_RTOL, atol=ZOO_ATOL)


def _cases_of(light: bool, op: str | None, zoo: bool = False) -> list[Any]:
    if zoo:
        cases = [zoo_case(name) for name in _zoo.MODELS]
    else:
        cases = _cases.light_cases() if light else _cases.node_cases()
    return [c for c in cases if op is None or op in {n.op_type for n in c.model.graph.node}]


def _ops(case: Any) -> list[str]:
    return sorted({n.op_type for n in case.model.graph.node})


def sweep(op: str | None = None, freeze_int_inputs: bool = False, light: bool = False, zoo: bool = False
          ) -> list[tuple[str, list[str], str, str]]:
    """(case name, its operators, outcome, detail) for every case (those using ``op``)."""
    return [(c.name, _ops(c), *run_case(c, seconds=300 if light or zoo else 30, freeze_int_inputs=freeze_int_inputs))
            for c in _cases_of(light, op, zoo)]


def tvm_sweep(python: str, op: str | None = None, freeze_int_inputs: bool = False, light: bool = False,
              timeout: int = 120) -> list[tuple[str, list[str], str, str]]:
    """:func:`sweep` through Apache TVM's importer in the interpreter ``python`` (which has
    ``tvm`` and ``onnx``): it runs :mod:`.onnx_backend_cases` as a script, case after case; a
    case that kills that interpreter is a ``crash`` and the run resumes after it."""
    cases = _cases.node_cases() if not light else _cases.light_cases()
    wanted = {c.name for c in _cases_of(light, op)}
    results: dict[int, tuple[str, str]] = {}
    start = 0
    while start < len(cases):
        # the worker runs every case from ``start`` on (one JSON line each, indexed in all cases)
        argv = [python, _cases.__file__, "--start", str(start)] + ["--freeze-int-inputs"] * freeze_int_inputs \
            + ["--light"] * light + (["--op", op] if op else [])
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout * (len(cases) - start))
            out, code = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as err:
            out, code = (err.stdout or b"").decode() if isinstance(err.stdout, bytes) else (err.stdout or ""), -1
        for line in out.splitlines():
            if line.startswith("["):
                index, _, outcome, detail = json.loads(line)
                results[index] = (outcome, detail)
        if code == 0:
            break
        # the case after the last reported one killed the interpreter: note it, go on after it
        start = max(results, default=start - 1) + 1
        while start < len(cases) and cases[start].name not in wanted:
            start += 1
        if start < len(cases):
            results[start] = ("crash", f"the interpreter exited with {code}")
        start += 1
    return [(c.name, _ops(c), *results.get(i, ("crash", "no result"))) for i, c in enumerate(cases)
            if c.name in wanted]


def _report(rows: list[tuple[str, list[str], str, str]], engine: str) -> None:
    tally = Counter(outcome for _, _, outcome, _ in rows)
    print(f"{engine}: {len(rows)} cases: " + ", ".join(f"{k} {v}" for k, v in tally.most_common()))
    if engine == "minitvm":
        print(f"{len(CONVERTERS)} operators converted")
    missing = Counter(op for _, _, outcome, detail in rows if outcome == "unsupported operator"
                      for op in detail.rstrip(".").split(", "))
    print("operators the unsupported cases use (cases):", ", ".join(f"{k} ({v})" for k, v in missing.most_common()))
    for name, _, outcome, detail in rows:
        if outcome not in ("pass", "unsupported operator"):
            print(f"{outcome:>20}  {name}: {detail}")


Rows = list[tuple[str, list[str], str, str]]


def _tally(rows: Rows) -> str:
    tally = Counter(outcome for _, _, outcome, _ in rows)
    return ", ".join(f"{k} {v}" for k, v in tally.most_common())


def markdown(rows: Rows, frozen: Rows | None = None, tvm: Rows | None = None, tvm_frozen: Rows | None = None) -> str:
    """A Markdown table of ONNX's operators for the docs: each operator ``from_onnx`` converts or
    a backend case uses, its converter kind, and how many of the cases whose graph uses it pass
    (minitvm; with ``--freeze-int-inputs``; Apache TVM in both modes, where given)."""
    from ..relax.frontend.onnx import CONVERTER_KINDS  # lazy: only the docs table names the kinds

    kind_of = {op: kind for kind, module in CONVERTER_KINDS.items() for op in module.CONVERTERS}
    runs = [("minitvm", rows), ("minitvm, frozen", frozen), ("TVM 0.27", tvm), ("TVM 0.27, frozen", tvm_frozen)]
    runs = [(title, {name: outcome for name, _, outcome, _ in r}) for title, r in runs if r]
    uses: dict[str, list[str]] = {}
    for name, ops, _, _ in rows:
        for op in ops:
            uses.setdefault(op, []).append(name)
    lines = ["| operator | minitvm converter | backend cases using it | "
             + " | ".join(f"passed ({title})" for title, _ in runs) + " |",
             "| --- | --- | --- | " + " | ".join("---" for _ in runs) + " |"]
    for op in sorted(set(uses) | set(kind_of), key=str.lower):
        names = uses.get(op, [])
        passed = [str(sum(outcomes.get(n) == "pass" for n in names)) for _, outcomes in runs]
        lines.append(f"| `{op}` | {kind_of.get(op, '—')} | {len(names)} | " + " | ".join(passed) + " |")
    totals = "".join(f"\n- {title}: {len(outcomes)} cases: "
                     + _tally([(n, [], o, "") for n, o in outcomes.items()]) for title, outcomes in runs)
    return (f"{len(rows)} backend cases of onnx (`onnx.backend.test.case.node`); a case counts for every "
            f"operator in its graph.{totals}\n\n" + "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", help="only the cases whose graph uses this operator")
    parser.add_argument("--freeze-int-inputs", action="store_true",
                        help="make the cases' 0-d and 1-d integer inputs (axes, shapes) constants first")
    parser.add_argument("--light", action="store_true", help="the light models (ResNet-50 ...) instead")
    parser.add_argument("--zoo", action="store_true", help="the zoo models exported by torch.onnx instead")
    parser.add_argument("--tvm-python", help="run the cases through Apache TVM in this interpreter instead")
    parser.add_argument("--json", help="also write the rows (name, operators, outcome, detail) to this file")
    parser.add_argument("--markdown", nargs="+", metavar="JSON",
                        help="print the docs table of these --json files instead of running anything (in "
                             "order: minitvm, minitvm frozen, TVM, TVM frozen; the later ones optional)")
    args = parser.parse_args(argv)
    if args.markdown:
        loaded = [json.load(open(f)) for f in args.markdown]
        print(markdown(*loaded))
        return
    if args.tvm_python:
        rows = tvm_sweep(args.tvm_python, args.op, args.freeze_int_inputs, args.light)
    else:
        rows = sweep(args.op, args.freeze_int_inputs, args.light, args.zoo)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=0)
    _report(rows, "Apache TVM" if args.tvm_python else "minitvm")


if __name__ == "__main__":
    main()
