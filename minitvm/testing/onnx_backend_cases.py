"""ONNX's own backend test cases run through an ONNX importer, by any interpreter.

This file needs only numpy and onnx (never minitvm), so that another interpreter -- one with
Apache TVM installed -- can run it as a script and measure TVM's importer on exactly the cases,
comparison and outcomes :mod:`minitvm.testing.onnx_node_cases` uses for minitvm's::

    /path/to/tvm-venv/bin/python minitvm/testing/onnx_backend_cases.py [--freeze-int-inputs]
        [--light] [--start K]     # one JSON line per case: [index, name, outcome, detail]

The cases: ``onnx.backend.test.case.node`` (a model and expected outputs per operator case,
computed by ONNX in Python) and the ``light`` models of ``onnx/backend/test/data/light`` (ResNet-50,
DenseNet-121, ... with constant weights; their input is ``arange(n) / n`` and their expected
output is stored beside them, as ONNX's backend runner does).

Outcomes: ``pass``, ``unsupported operator`` (the importer's ``OpNotImplemented``), ``refused`` (a
converter's clear ``from_onnx: ...`` error: a variant it does not take), ``error`` (anything else),
``wrong dtype or shape``, ``wrong values``, ``timeout``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterator

import numpy as np

__all__ = ["OUTCOMES", "node_cases", "light_cases", "frozen", "compare", "run_case", "tvm_prepare"]

OUTCOMES = ("pass", "unsupported operator", "refused", "error", "wrong dtype or shape", "wrong values",
            "timeout", "crash")

#: an engine: ``prepare(model) -> run(inputs) -> list of numpy outputs``
Prepare = Callable[[Any], Callable[[list], list]]


class _Timeout(Exception):
    pass


class _WrongLayout(AssertionError):
    """An output of another dtype, shape or count than expected."""


def node_cases() -> list[Any]:
    """ONNX's per-operator backend cases (``.name``, ``.model``, ``.data_sets``)."""
    from onnx.backend.test.case.node import collect_testcases  # onnx is an optional extra

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cases' own numpy overflow warnings
        return list(collect_testcases(None))


def light_cases() -> list[Any]:
    """The wheel's ``light`` models as cases: the input ONNX's runner feeds them (``arange(n) / n``
    over every input that is not an initializer), the stored expected output, its tolerances."""
    import onnx  # onnx is an optional extra
    from onnx import numpy_helper
    from onnx.backend.test.case.model import collect_testcases

    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    cases = []
    for test in collect_testcases():
        path = light / f"light_{test.model_name}.onnx"
        if not path.exists():
            continue
        model = onnx.load(str(path))
        inits = {i.name for i in model.graph.initializer}
        inputs = []
        for info in model.graph.input:
            if info.name not in inits:
                shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in info.type.tensor_type.shape.dim)
                n = int(np.prod(shape))
                inputs.append((np.arange(n).reshape(shape) / n).astype(np.float32))
        outputs = []
        for k in range(len(model.graph.output)):
            tensor = onnx.TensorProto()
            tensor.ParseFromString((light / f"light_{test.model_name}_output_{k}.pb").read_bytes())
            outputs.append(numpy_helper.to_array(tensor))
        cases.append(SimpleNamespace(name=test.name, model=model, data_sets=[(inputs, outputs)],
                                     rtol=test.rtol, atol=test.atol))
    return cases


def compare(got: list, want: list, rtol: float = 1e-3, atol: float = 1e-5) -> None:
    """Every output of ``want``'s dtype and shape (else :class:`_WrongLayout`), floats close."""
    if len(got) != len(want):
        raise _WrongLayout(f"{len(got)} outputs, expected {len(want)}")
    for g, w in zip(got, want):
        w = np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            raise _WrongLayout(f"{g.shape} {g.dtype}, expected {w.shape} {w.dtype}")
        if np.issubdtype(w.dtype, np.floating):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)


def frozen(model: Any, inputs: list) -> tuple[Any, list]:
    """``model`` with its 0-d and 1-d integer inputs (axes, shapes, sizes: what the cases pass
    as inputs and importers want known) made initializers holding ``inputs``' values."""
    from onnx import numpy_helper  # onnx is an optional extra

    out = type(model)()
    out.CopyFrom(model)
    keep, rest = [], []
    del out.graph.input[:]
    for info, value in zip(model.graph.input, map(_array, inputs)):
        if isinstance(value, np.ndarray) and value.dtype.kind in "iu" and value.ndim <= 1:
            out.graph.initializer.append(numpy_helper.from_array(value, info.name))
        else:
            keep.append(info)
            rest.append(value)
    out.graph.input.extend(keep)
    return out, rest


def _array(value: Any) -> np.ndarray:
    """A case's input or output as numpy (some cases hold a ``TensorProto``, as ONNX's runner allows)."""
    if type(value).__name__ == "TensorProto":
        from onnx import numpy_helper  # onnx is an optional extra

        return numpy_helper.to_array(value)
    return value if isinstance(value, (list, tuple)) else np.asarray(value)  # a sequence stays a list


def _first_line(err: BaseException, limit: int = 160) -> str:
    return ((str(err).strip().splitlines() or [type(err).__name__])[0])[:limit]


def _run_once(case: Any, prepare: Prepare, seconds: int) -> tuple[str, str]:
    def expire(*_: Any) -> None:
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = prepare(case.model)
            for inputs, outputs in case.data_sets:
                compare(run([_array(v) for v in inputs]), [_array(w) for w in outputs], getattr(case, "rtol", 1e-3),
                        max(getattr(case, "atol", 1e-5), 1e-5))
        return "pass", ""
    except _Timeout:
        return "timeout", f"over {seconds} s"
    except _WrongLayout as err:
        return "wrong dtype or shape", _first_line(err)
    except AssertionError as err:
        lines = [s for s in str(err).strip().splitlines() if s.startswith(("Mismatched", "Max abs"))]
        return "wrong values", "; ".join(lines)[:160] or _first_line(err)
    except Exception as err:  # noqa: BLE001 - every other failure is tallied, not raised
        if type(err).__name__ == "OpNotImplemented":  # minitvm's and TVM's (tvm.error) alike
            return "unsupported operator", _first_line(err).split(": ", 1)[-1]
        text = _first_line(err)
        return ("refused" if text.startswith("from_onnx:") else "error"), f"{type(err).__name__}: {text}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_case(case: Any, prepare: Prepare, seconds: int = 30, freeze_int_inputs: bool = False) -> tuple[str, str]:
    """(outcome, detail) of one case run by ``prepare``'s engine (the first data set that does
    not pass decides); ``freeze_int_inputs`` first makes its small integer inputs constants."""
    if not freeze_int_inputs:
        return _run_once(case, prepare, seconds)
    for inputs, outputs in case.data_sets:
        model, rest = frozen(case.model, inputs)
        result = _run_once(SimpleNamespace(model=model, data_sets=[(rest, outputs)]), prepare, seconds)
        if result[0] != "pass":
            return result
    return "pass", ""


def tvm_prepare(model: Any) -> Callable[[list], list]:
    """Apache TVM's importer and VM on ``model``, run the way TVM's own ONNX tests run it
    (``from_onnx``, ``DecomposeOpsForInference``, ``LegalizeOps``, ``tvm.compile`` for llvm at
    opt_level 3)."""
    import tvm  # lazy: only the interpreter measuring Apache TVM has it
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    mod = from_onnx(model)
    mod = relax.transform.LegalizeOps()(relax.transform.DecomposeOpsForInference()(mod))
    with tvm.transform.PassContext(opt_level=3):
        vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    to_tensor = getattr(tvm.runtime, "tensor", None) or tvm.nd.array

    def as_array(value: Any) -> np.ndarray:
        # a Shape op's output comes back as a shape, a scalar as a Python number (TVM's tests take both)
        if hasattr(value, "numpy"):
            return value.numpy()
        if "Shape" in type(value).__name__:
            return np.array([int(d) for d in value], dtype="int64")
        return np.array(value)

    def run(inputs: list) -> list:
        out = vm["main"](*(to_tensor(v) for v in inputs))
        single = hasattr(out, "numpy") or "Shape" in type(out).__name__ or isinstance(out, (int, float, bool))
        return [as_array(out)] if single else [as_array(o) for o in out]
    return run


def _lines(cases: list, prepare: Prepare, start: int, freeze: bool, op: str | None, seconds: int
           ) -> Iterator[str]:
    for index in range(start, len(cases)):
        if op is not None and op not in {n.op_type for n in cases[index].model.graph.node}:
            continue
        outcome, detail = run_case(cases[index], prepare, seconds, freeze_int_inputs=freeze)
        yield json.dumps([index, cases[index].name, outcome, detail])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="ONNX's backend cases through Apache TVM's importer")
    parser.add_argument("--freeze-int-inputs", action="store_true")
    parser.add_argument("--light", action="store_true", help="the light models instead of the node cases")
    parser.add_argument("--start", type=int, default=0, help="the index of the first case to run")
    parser.add_argument("--op", help="only the cases whose graph uses this operator")
    args = parser.parse_args(argv)
    cases = light_cases() if args.light else node_cases()
    for line in _lines(cases, tvm_prepare, args.start, args.freeze_int_inputs, args.op,
                       300 if args.light else 30):
        print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
