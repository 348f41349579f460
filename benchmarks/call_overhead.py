"""Python -> model call overhead: microseconds per call of ``vm["main"](...)`` through the native
entry (exec_mode "compiled", one native call per model call) and through the bytecode
interpreter (one Python step per instruction), on an empty-ish model (one 4-element add) and
on every ``minitvm.testing.zoo`` model at batch 1.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/call_overhead.py [--repeat 200]
    .venv/bin/python benchmarks/run.py --only overhead

Both paths run the same executable and the same machine code for the kernels
(``vm.invoke_bytecode`` is the bytecode path), interleaved in rounds; ``saved`` is bytecode minus
native, the Python work the native entry removes.  Medians; other processes share the 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import busy_fraction, format_table, time_interleaved  # noqa: E402


def _tiny() -> tuple[Any, list]:
    """The empty-ish model: ``x + 1`` on 4 floats (one kernel, one allocation)."""
    import numpy as np

    import minitvm
    from minitvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.add(x, relax.const(np.float32(1))))
        bb.emit_func_output(y)
    return minitvm.compile(bb.get()), [minitvm.nd.array(np.arange(4, dtype="float32"))]


def _zoo(name: str) -> tuple[Any, list]:
    import minitvm
    from minitvm.relax.frontend.torch import from_exported_program
    from minitvm.testing import zoo

    model = zoo.MODELS[name]
    ex = minitvm.compile(from_exported_program(zoo.export(model, 1), unwrap_unit_return_tuple=True))
    return ex, [minitvm.nd.array(x.numpy()) for x in model.example_inputs(1)]


def measure(names: list[str], repeat: int = 200, rounds: int = 3) -> list[list[str]]:
    """One row per model: native us, bytecode us, saved us, instructions, kernel calls."""
    import minitvm
    from minitvm import relax

    rows = []
    for name in names:
        ex, inputs = _tiny() if name == "empty-ish (x + 1)" else _zoo(name)
        vm = relax.VirtualMachine(ex, minitvm.cpu())
        main = vm["main"]
        if "main" not in vm.native_entries:
            rows.append([name, "-", "-", "-", "-", "-", f"no native entry: {ex.native_plans().get('main')}"])
            continue
        t = time_interleaved({"native": lambda f=main, a=inputs: f(*a),
                              "bytecode": lambda v=vm, a=inputs: v.invoke_bytecode("main", *a)}, repeat, rounds,
                             warmup=20)
        native, bytecode = t["native"].median * 1e6, t["bytecode"].median * 1e6
        plan = vm.native_entries["main"].plan
        instructions = len(ex.vm_functions["main"].instructions)
        rows.append([name, f"{native:.1f}", f"{bytecode:.1f}", f"{bytecode - native:.1f}",
                     f"{bytecode / native:.2f}x", str(instructions), str(len(plan.calls))])
        print(f"  overhead {name}: native {native:.1f} us, bytecode {bytecode:.1f} us", flush=True)
    return rows


HEAD = ["model (batch 1)", "native us/call", "bytecode us/call", "saved us", "bytecode/native", "instructions",
        "kernel calls"]


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="", help="comma list of zoo models (default: all)")
    p.add_argument("--repeat", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*LeafSpec.*")
    import torch

    torch.set_num_threads(2)
    from minitvm.testing import zoo

    names = ["empty-ish (x + 1)"] + ([m.strip() for m in args.models.split(",") if m.strip()] or list(zoo.MODELS))
    load = busy_fraction()
    rows = measure(names, args.repeat, args.rounds)
    text = (f"call overhead, Python -> model, medians of {args.rounds} x {args.repeat} interleaved calls "
            f"(other load at start {load:.0%})\n" + format_table(HEAD, rows, left=1))
    print("\n" + text)
    return text


if __name__ == "__main__":
    main()
