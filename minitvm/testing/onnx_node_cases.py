"""The ONNX importer measured on ONNX's own per-operator backend cases
(``onnx.backend.test.case.node``: a model and expected outputs per case, written by ONNX, shipped
inside the ``onnx`` wheel, computed in Python so nothing is downloaded).

Each case is imported with ``from_onnx``, compiled with the zero pipeline, run on the VM with
every data set, and compared with the expected outputs (floats to rtol 1e-3, atol 1e-5).  A case
ends in one of: ``pass``, ``unsupported operator`` (``OpNotImplemented``), ``refused`` (a
converter's clear ``from_onnx: ...`` error: a variant or a run-time shape it does not take),
``error`` (anything else), ``wrong result``, ``timeout``.

    python -m minitvm.testing.onnx_node_cases              # the tally and every failure
    python -m minitvm.testing.onnx_node_cases --op Resize  # cases whose graph uses Resize
    python -m minitvm.testing.onnx_node_cases --freeze-int-inputs
        # axes, shapes and sizes the cases pass as inputs made constants first (importers, TVM's
        # too, want them known while importing)
"""

from __future__ import annotations

import argparse
import signal
import warnings
from collections import Counter
from types import SimpleNamespace
from typing import Any

import numpy as np

from .. import compile as _compile
from .. import cpu, nd
from ..relax import VirtualMachine, get_pipeline
from ..relax.frontend.onnx import CONVERTERS, OpNotImplemented, from_onnx

__all__ = ["run_case", "sweep", "main"]


class _Timeout(Exception):
    pass


def _worst(results: Any) -> tuple[str, str]:
    """The first result that is not a pass, else a pass."""
    for result in results:
        if result[0] != "pass":
            return result
    return "pass", ""


def _compare(got: list, want: list) -> None:
    if len(got) != len(want):
        raise AssertionError(f"{len(got)} outputs, expected {len(want)}")
    for g, w in zip(got, want):
        w = np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            raise AssertionError(f"{g.shape} {g.dtype}, expected {w.shape} {w.dtype}")
        if np.issubdtype(w.dtype, np.floating):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)
        else:
            np.testing.assert_array_equal(g, w)


def _frozen(model: Any, inputs: list) -> tuple[Any, list]:
    """``model`` with its 0-d and 1-d integer inputs (axes, shapes, sizes: what the cases pass
    as inputs and importers want known) made initializers holding ``inputs``' values."""
    from onnx import numpy_helper  # onnx is an optional extra

    out = type(model)()
    out.CopyFrom(model)
    keep, rest = [], []
    del out.graph.input[:]
    for info, value in zip(model.graph.input, inputs):
        if isinstance(value, np.ndarray) and value.dtype.kind in "iu" and value.ndim <= 1:
            out.graph.initializer.append(numpy_helper.from_array(value, info.name))
        else:
            keep.append(info)
            rest.append(value)
    out.graph.input.extend(keep)
    return out, rest


def run_case(case: Any, seconds: int = 30, freeze_int_inputs: bool = False) -> tuple[str, str]:
    """(outcome, detail) of one backend case (see the module docstring for the outcomes);
    ``freeze_int_inputs`` first makes its small integer inputs constants (see :func:`_frozen`)."""
    if freeze_int_inputs:
        return _worst(run_case(SimpleNamespace(model=m, data_sets=[(ins, outs)]), seconds)
                      for m, ins, outs in ((*_frozen(case.model, i), o) for i, o in case.data_sets))
    def expire(*_: Any) -> None:
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod = from_onnx(case.model)
        vm = VirtualMachine(_compile(get_pipeline("zero")(mod), target="llvm", relax_pipeline=None), cpu())
        for inputs, outputs in case.data_sets:
            got = vm["main"](*(nd.array(np.asarray(v)) for v in inputs))
            _compare([g.numpy() for g in got] if isinstance(got, (list, tuple)) else [got.numpy()], outputs)
        return "pass", ""
    except OpNotImplemented as err:
        return "unsupported operator", str(err).splitlines()[0].split(": ", 1)[-1]
    except _Timeout:
        return "timeout", f"over {seconds} s"
    except AssertionError as err:
        return "wrong result", (str(err).strip().splitlines() or [""])[0][:160]
    except Exception as err:  # noqa: BLE001 - every other failure is tallied, not raised
        text = (str(err).splitlines() or [type(err).__name__])[0][:160]
        return ("refused" if text.startswith("from_onnx:") else "error"), f"{type(err).__name__}: {text}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def sweep(op: str | None = None, freeze_int_inputs: bool = False) -> list[tuple[str, list[str], str, str]]:
    """(case name, its operators, outcome, detail) for every backend case (those using ``op``)."""
    from onnx.backend.test.case.node import collect_testcases  # onnx is an optional extra

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cases' own numpy overflow warnings
        cases = collect_testcases(None)
    rows = []
    for case in cases:
        ops = sorted({n.op_type for n in case.model.graph.node})
        if op is None or op in ops:
            rows.append((case.name, ops, *run_case(case, freeze_int_inputs=freeze_int_inputs)))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", help="only the cases whose graph uses this operator")
    parser.add_argument("--freeze-int-inputs", action="store_true",
                        help="make the cases' 0-d and 1-d integer inputs (axes, shapes) constants first")
    args = parser.parse_args(argv)
    rows = sweep(args.op, args.freeze_int_inputs)
    tally = Counter(outcome for _, _, outcome, _ in rows)
    print(f"{len(rows)} cases: " + ", ".join(f"{k} {v}" for k, v in tally.most_common()))
    print(f"{len(CONVERTERS)} operators converted")
    missing = Counter(op for _, ops, outcome, _ in rows if outcome == "unsupported operator"
                      for op in ops if op not in CONVERTERS)
    print("operators the unsupported cases use (cases):", ", ".join(f"{k} ({v})" for k, v in missing.most_common()))
    for name, _, outcome, detail in rows:
        if outcome not in ("pass", "unsupported operator"):
            print(f"{outcome:>12}  {name}: {detail}")


if __name__ == "__main__":
    main()
