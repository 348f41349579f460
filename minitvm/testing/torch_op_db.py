"""The torch frontend tested on PyTorch's own operator database (``op_db`` of
``torch.testing._internal.common_methods_invocations``), whose sample inputs nobody here wrote.

For each ``OpInfo`` and each of its samples: a small module calling the op on that sample is
exported (``torch.export``), imported with ``from_exported_program`` (with and, where the graph
differs, without ``run_decompositions``), compiled with the zero pipeline, run, and compared
with eager torch.  Every sample gives one :class:`SampleResult` naming the ATen overloads of its
graph, so results add up per overload (:func:`per_overload`).

    python -m minitvm.testing.torch_op_db --samples 4            # a summary on the terminal
    python -m minitvm.testing.torch_op_db --samples 1 --dtypes float32 --docs
        # also write minitvm/relax/frontend/torch/op_db_results.json and docs/torch_ops.md

CI runs a bounded, seeded subset (``tests/relax/frontend/torch/test_op_db.py``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import unittest
import warnings
from collections import Counter
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import numpy as np

from .. import compile as _compile
from .. import cpu, nd
from ..relax import VirtualMachine, get_pipeline
from ..relax.frontend.torch import CONVERTERS, from_exported_program
from ..relax.frontend.torch.decompose import run_decompositions, torch_functions_swapped
from ..relax.frontend.torch.exported_program import op_name
from ..relax.frontend.torch.op_table import OP_DB_RESULTS, supported_ops_markdown

__all__ = ["SampleResult", "OverloadStats", "op_infos", "run_sample", "run_op", "sweep", "per_overload",
           "results_record", "write_docs",
           "VALUE_ARBITRARY", "NONDETERMINISTIC"]

#: ops whose values are unspecified (only shape and dtype are compared)
VALUE_ARBITRARY = frozenset({"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided",
                             "empty_permuted"})
#: ops that draw random numbers: nothing to compare with
NONDETERMINISTIC = ("rand", "normal", "uniform", "bernoulli", "multinomial", "dropout", "exponential",
                    "cauchy", "geometric", "log_normal", "poisson", "random_")

#: the dtypes tried, where the op supports them
DTYPES = ("float32", "int64", "int32", "bool")


@dataclass(frozen=True)
class SampleResult:
    """One op_db sample through minitvm.

    ``status`` is ``pass``, ``unsupported`` (an operator without a converter: ``missing`` names
    them), ``error`` (conversion, compile or run failed: ``message``), ``mismatch`` (ran, but the
    values differ from torch's) or ``skip`` (torch itself cannot export or run it).
    """

    op: str
    dtype: str
    index: int
    decomposed: bool
    status: str
    overloads: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    message: str = ""


@dataclass
class OverloadStats:
    """How the samples whose graph uses one ATen overload fared."""

    passed: int = 0
    total: int = 0
    ops: set[str] = field(default_factory=set)


def op_infos(names: Iterable[str] | None = None) -> list[Any]:
    """op_db's OpInfos (those named, as ``name`` or ``name.variant``), random ones left out."""
    from torch.testing._internal.common_methods_invocations import op_db  # heavy: imported on first use

    wanted = set(names) if names is not None else None
    out = []
    for info in op_db:
        full = _full_name(info)
        if wanted is not None and full not in wanted:
            continue
        if any(word in info.name for word in NONDETERMINISTIC):
            continue
        out.append(info)
    return out


def _full_name(info: Any) -> str:
    return f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name


class _Slot:
    """Where the k-th tensor input goes in the call's arguments."""

    def __init__(self, k: int):
        self.k = k


def _lift(value: Any, tensors: list) -> Any:
    """``value`` with every tensor replaced by a :class:`_Slot` (the tensor appended to ``tensors``)."""
    import torch  # heavy: imported on first use

    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return _Slot(len(tensors) - 1)
    if isinstance(value, (list, tuple)):
        return type(value)(_lift(v, tensors) for v in value)
    if isinstance(value, dict):
        return {k: _lift(v, tensors) for k, v in value.items()}
    return value


def _fill(template: Any, tensors: tuple) -> Any:
    if isinstance(template, _Slot):
        return tensors[template.k]
    if isinstance(template, (list, tuple)):
        return type(template)(_fill(v, tensors) for v in template)
    if isinstance(template, dict):
        return {k: _fill(v, tensors) for k, v in template.items()}
    return template


def _module(fn: Any, template: tuple) -> Any:
    """A module whose ``forward(*tensors)`` calls ``fn`` with the sample's arguments."""
    import torch  # heavy: imported on first use

    class Call(torch.nn.Module):
        def forward(self, *tensors: Any) -> Any:
            args, kwargs = _fill(template, tensors)
            return fn(*args, **kwargs)

    return Call().eval()


def _flat_outputs(value: Any) -> list | None:
    """The tensors of an output (a tensor, or a tuple/list of them), or None for anything else."""
    import torch  # heavy: imported on first use

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    return None


def _ops_of(ep: Any) -> tuple[str, ...]:
    return tuple(sorted({op_name(n) for n in ep.graph.nodes if n.op == "call_function"}))


def _compare(got: list, want: list, values: bool) -> str:
    """Empty when minitvm's outputs equal torch's (floats to a relative 1e-4), else why not."""
    if len(got) != len(want):
        return f"{len(got)} outputs, torch gives {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if g is None or w is None:  # an optional output an operator may leave out
            if (g is None) != (w is None):
                what = {True: "None", False: "a tensor"}
                return f"output {k}: {what[g is None]}, torch gives {what[w is None]}"
            continue
        w = w.detach().contiguous().numpy()
        g = g.numpy()
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {k}: {g.dtype}{list(g.shape)}, torch gives {w.dtype}{list(w.shape)}"
        if not values:
            continue
        if np.issubdtype(w.dtype, np.floating):
            if not np.allclose(g, w, rtol=1e-4, atol=1e-5, equal_nan=True):
                bad = ~np.isclose(g, w, rtol=1e-4, atol=1e-5, equal_nan=True)
                return f"output {k}: {int(bad.sum())} of {w.size} values differ (e.g. {g[bad][0]} vs {w[bad][0]})"
        elif not np.array_equal(g, w):
            return f"output {k}: {int((g != w).sum())} of {w.size} values differ"
    return ""


def _first_line(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}".strip()
    lines = text.splitlines()
    return " ".join(ln.strip() for ln in lines[:3])[:300]


def run_sample(info: Any, sample: Any, dtype: str, index: int) -> list[SampleResult]:
    """One sample, decomposed (as ``from_exported_program`` does by default) and, when the
    graph before decomposition differs, also with ``run_ep_decomposition=False``."""
    import torch  # heavy: imported on first use

    name = _full_name(info)
    tensors: list = []
    template = _lift(((sample.input, *sample.args), dict(sample.kwargs)), tensors)
    tensors = [t.detach() for t in tensors]
    model = _module(info.op, template)

    def result(status: str, decomposed: bool = True, **kw: Any) -> SampleResult:
        return SampleResult(name, dtype, index, decomposed, status, **kw)

    try:
        with torch.no_grad():
            want = _flat_outputs(model(*tensors))
        if want is None:
            return [result("skip", message="the op does not return tensors")]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = torch.export.export(model, tuple(tensors))
            decomposed = run_decompositions(ep)
    except Exception as err:  # torch cannot export it: not ours to judge
        return [result("skip", message=f"torch.export: {_first_line(err)}")]

    out = []
    graphs = [(True, decomposed)]
    if _ops_of(ep) != _ops_of(decomposed):
        graphs.append((False, ep))
    values = info.name not in VALUE_ARBITRARY
    for is_decomposed, graph in graphs:
        ops = _ops_of(graph)
        missing = tuple(op for op in ops if op not in CONVERTERS)
        if missing:
            out.append(result("unsupported", is_decomposed, overloads=ops, missing=missing))
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mod = from_exported_program(graph, run_ep_decomposition=False)
                ex = _compile(get_pipeline("zero")(mod), target="llvm", relax_pipeline=None)
            vm = VirtualMachine(ex, cpu())
            got = vm["main"](*(nd.array(t.contiguous().numpy()) for t in tensors))
            got = list(got) if isinstance(got, (list, tuple)) else [got]
        except Exception as err:
            # the importer's own refusal of a variant (a keyword, a mode) is "unsupported"
            refused = isinstance(err, ValueError) and "unsupported operators" in str(err)
            out.append(result("unsupported" if refused else "error", is_decomposed, overloads=ops,
                              message=_first_line(err)))
            continue
        why = _compare(got, want, values)
        out.append(result("mismatch" if why else "pass", is_decomposed, overloads=ops, message=why))
    return out


def _numel(sample: Any) -> int:
    tensors: list = []
    _lift(((sample.input, *sample.args), dict(sample.kwargs)), tensors)
    return sum(t.numel() for t in tensors)


def _unittest_method_on_the_stack() -> Any:
    """What torch's ``extract_test_fn`` finds -- the method of the ``unittest.TestCase`` running
    on the call stack, if any -- walking the frames without ``inspect.stack()``'s source lookups
    (it reads every frame's file and module: ~4 ms a call deep under pytest, and torch calls it
    once per sample it makes)."""
    frame = sys._getframe(1)
    while frame is not None:
        case = frame.f_locals.get("self")
        if isinstance(case, unittest.TestCase):
            *_, class_name, test_name = case.id().rsplit(".", 2)
            if class_name == type(case).__name__ and test_name.startswith("test"):
                return getattr(case, test_name).__func__
        frame = frame.f_back
    return None


def _quick_test_fn_lookup() -> AbstractContextManager[None]:
    """torch's OpInfo sample generation with :func:`_unittest_method_on_the_stack` in place of
    ``extract_test_fn`` in the two modules that call it (put back after)."""
    import torch.testing._internal.common_utils as common_utils  # heavy: imported on first use
    import torch.testing._internal.opinfo.core as opinfo_core

    return torch_functions_swapped([(module, "extract_test_fn", _unittest_method_on_the_stack)
                                    for module in (common_utils, opinfo_core)])


def _samples(info: Any, dtype: str, limit: int | None, seed: int,
             max_numel: int | None = None) -> Iterator[tuple[int, Any]]:
    """Up to ``limit`` samples of ``info`` for ``dtype``, a seeded choice among all of them
    (among those with at most ``max_numel`` input elements, when any has so few)."""
    import torch  # heavy: imported on first use

    torch.manual_seed(seed)
    with warnings.catch_warnings(), _quick_test_fn_lookup():
        warnings.simplefilter("ignore")
        samples = list(info.sample_inputs("cpu", getattr(torch, dtype), requires_grad=False))
    indices = list(range(len(samples)))
    if max_numel is not None:
        small = [k for k in indices if _numel(samples[k]) <= max_numel]
        indices = small or indices
    if limit is not None and len(indices) > limit:
        indices = sorted(random.Random(seed).sample(indices, limit))
    for k in indices:
        yield k, samples[k]


def run_op(info: Any, samples_per_dtype: int | None = 4, seed: int = 0,
           dtypes: Iterable[str] = DTYPES, max_numel: int | None = None) -> list[SampleResult]:
    """Every chosen sample of one OpInfo, for each of ``dtypes`` the op supports on the CPU
    (``max_numel``: prefer samples with at most that many input elements)."""
    import torch  # heavy: imported on first use

    supported = info.supported_dtypes("cpu")
    out: list[SampleResult] = []
    for dtype in dtypes:
        if getattr(torch, dtype) not in supported:
            continue
        try:
            chosen = list(_samples(info, dtype, samples_per_dtype, seed, max_numel))
        except Exception as err:
            out.append(SampleResult(_full_name(info), dtype, -1, True, "skip", message=_first_line(err)))
            continue
        for k, sample in chosen:
            out += run_sample(info, sample, dtype, k)
    return out


def sweep(names: Iterable[str] | None = None, samples_per_dtype: int | None = 4, seed: int = 0,
          dtypes: Iterable[str] = DTYPES, verbose: bool = False) -> list[SampleResult]:
    """:func:`run_op` over op_db (or the named OpInfos)."""
    results: list[SampleResult] = []
    for info in op_infos(names):
        start = time.perf_counter()
        got = run_op(info, samples_per_dtype, seed, dtypes)
        results += got
        if verbose:
            tally = Counter(r.status for r in got)
            print(f"{_full_name(info):32s} {time.perf_counter() - start:5.1f}s  "
                  + " ".join(f"{k}={v}" for k, v in sorted(tally.items())), flush=True)
    return results


def per_overload(results: Iterable[SampleResult]) -> dict[str, OverloadStats]:
    """For each ATen overload, the samples whose graph uses it: how many there were and how
    many passed (a sample failing because of another op counts against every op in it)."""
    stats: dict[str, OverloadStats] = {}
    for r in results:
        if r.status == "skip":
            continue
        for op in r.overloads:
            s = stats.setdefault(op, OverloadStats())
            s.total += 1
            s.passed += r.status == "pass"
            s.ops.add(r.op)
    return stats


def _summary(results: list[SampleResult]) -> str:
    tally = Counter(r.status for r in results)
    missing = Counter(op for r in results if r.status == "unsupported" for op in r.missing)
    lines = ["samples: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items()))]
    lines += ["most wanted missing overloads: " + ", ".join(f"{op} ({n})" for op, n in missing.most_common(30))]
    bad = [r for r in results if r.status in ("error", "mismatch")]
    lines += [f"  {r.status:8s} {r.op} {r.dtype} #{r.index} {'dec' if r.decomposed else 'raw'}: {r.message}"
              for r in bad]
    return "\n".join(lines)


def results_record(results: list[SampleResult], samples_per_dtype: int | None, dtypes: Iterable[str],
                   swept: int | None = None, total: int | None = None) -> dict:
    """What ``docs/torch_ops.md`` shows of a sweep (the JSON ``op_table.OP_DB_RESULTS`` holds);
    ``swept`` of ``total`` OpInfos were run (all by default)."""
    import torch  # heavy: imported on first use

    stats = per_overload(results)
    ran = len({r.op for r in results})
    return {
        "torch": torch.__version__.split("+")[0], "samples_per_dtype": samples_per_dtype, "dtypes": list(dtypes),
        "opinfos": [swept if swept is not None else ran, total if total is not None else ran],
        "samples": dict(sorted(Counter(r.status for r in results).items())),
        "overloads": {op: [s.passed, s.total] for op, s in sorted(stats.items())},
        "missing": dict(sorted(Counter(op for r in results if r.status == "unsupported" for op in r.missing).items())),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=4, help="samples per op and dtype (a seeded choice)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dtypes", nargs="*", default=list(DTYPES))
    parser.add_argument("--ops", nargs="*", help="OpInfo names (default: all of op_db)")
    parser.add_argument("--docs", action="store_true",
                        help="write the results file of the torch frontend and rewrite docs/torch_ops.md")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    results = sweep(args.ops, args.samples, args.seed, dtypes=args.dtypes, verbose=not args.quiet)
    print(_summary(results))
    if args.docs:
        swept = len(op_infos(args.ops))
        write_docs(results_record(results, args.samples, args.dtypes, swept, swept))


def write_docs(record: dict) -> None:
    """Save a sweep's record beside the converter tables and rewrite ``docs/torch_ops.md``
    (run from the project root)."""
    def block(value: object) -> str:  # one overload per line: small diffs between sweeps
        if isinstance(value, dict) and value and all(isinstance(v, (list, int)) for v in value.values()):
            return "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(value.items())) + "\n }"
        return json.dumps(value, sort_keys=True)

    OP_DB_RESULTS.write_text("{\n" + ",\n".join(f" {json.dumps(k)}: {block(v)}" for k, v in sorted(record.items()))
                             + "\n}\n")
    with open("docs/torch_ops.md", "w") as f:
        f.write(supported_ops_markdown(record))


if __name__ == "__main__":
    main()
