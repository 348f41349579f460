"""The table of supported operators, rendered from the converter tables for ``docs/torch_ops.md``
(the command in ``REGENERATE`` rewrites it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .exported_program import CONVERTER_KINDS, CONVERTERS
from .fx_translator import _METHODS, _function_adapters, _module_adapters

__all__ = ["supported_ops_markdown", "REGENERATE", "SWEEP", "OP_DB_RESULTS", "load_op_db_results"]

#: the command that rewrites the committed table, run from the project root
REGENERATE = ('.venv/bin/python -c "from minitvm.relax.frontend.torch import supported_ops_markdown as t; '
              "open('docs/torch_ops.md', 'w').write(t())\"")
#: the command that reruns PyTorch's op_db samples, rewrites the results file and the table
SWEEP = ".venv/bin/python -m minitvm.testing.torch_op_db --samples 1 --dtypes float32 --docs"
#: per ATen overload, how op_db's samples fared in the last sweep (written by ``SWEEP``)
OP_DB_RESULTS = Path(__file__).with_name("op_db_results.json")


def load_op_db_results() -> dict | None:
    """The last sweep's results (``{"overloads": {name: [passed, total]}, ...}``), or None."""
    if not OP_DB_RESULTS.exists():
        return None
    return json.loads(OP_DB_RESULTS.read_text())


def _overloads(names: list[str]) -> list[tuple[str, list[str]]]:
    """``aten.add.Tensor`` and ``aten.add.Scalar`` as ``("aten.add", ["Scalar", "Tensor"])``;
    Python-level entries (``getitem``, ``mul`` on sizes) keep their name."""
    groups: dict[str, list[str]] = {}
    for name in names:
        if name.startswith("aten."):
            op, overload = name.rsplit(".", 1)
            groups.setdefault(op, []).append(overload)
        else:
            groups.setdefault(name, [])
    return [(op, sorted(groups[op])) for op in sorted(groups)]


def _samples_cell(op: str, overloads: list[str], results: dict | None) -> str:
    """``add.Tensor 12/12`` per overload: op_db samples passed / samples whose graph used it."""
    if results is None:
        return ""
    stats = results["overloads"]
    cells = []
    for o in overloads or [""]:
        name = f"{op}.{o}" if o else op
        if name in stats:
            passed, total = stats[name]
            cells.append(f"{o or op} {passed}/{total}")
    return ", ".join(cells) if cells else "no sample"


def _aten_section(results: dict | None) -> list[str]:
    lines = []
    for kind, module in CONVERTER_KINDS.items():
        groups = _overloads(list(module.CONVERTERS))
        lines += [f"## {kind[0].upper() + kind[1:]} ({len(groups)})", "",
                  f"`minitvm/relax/frontend/torch/{module.__name__.rsplit('.', 1)[-1]}.py`", ""]
        if results is None:
            lines += ["| operator | overloads |", "| --- | --- |"]
        else:
            lines += ["| operator | overloads | op_db samples passed |", "| --- | --- | --- |"]
        for op, overloads in groups:
            row = f"| `{op}` | {', '.join(overloads) if overloads else '(Python call on sizes or tuples)'} |"
            if results is not None:
                row += f" {_samples_cell(op, overloads, results)} |"
            lines.append(row)
        lines.append("")
    return lines


def _op_db_section(results: dict | None) -> list[str]:
    """How the last sweep over PyTorch's op_db went, and the overloads its samples wanted most."""
    if results is None:
        return []
    tally = results["samples"]
    total = sum(tally.values())
    swept, total_infos = results["opinfos"]
    lines = ["## PyTorch's op_db samples", "",
             f"{swept} of the {total_infos} `OpInfo`s of `torch.testing._internal.common_methods_invocations.op_db` "
             f"(torch {results['torch']}; random ones left out), {results['samples_per_dtype']} seeded sample(s) "
             "per op and dtype "
             f"({', '.join(results['dtypes'])}): exported, imported (decomposed, and as exported where that "
             "differs), compiled, run and compared with eager torch. A sample counts for every overload in "
             f"its graph. Rerun with `{SWEEP}`.", "",
             f"Samples: {total} — " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())) + ".", "",
             "Overloads op_db's samples use that minitvm does not convert (samples affected):", ""]

    # (converters added since the sweep are no longer missing)
    missing = sorted(((op, n) for op, n in results["missing"].items() if op not in CONVERTERS),
                     key=lambda kv: (-kv[1], kv[0]))
    lines.append(", ".join(f"`{op}` ({n})" for op, n in missing) + "." if missing else "none.")
    lines.append("")
    return lines


def _function_name(fn: Any) -> str:
    """The spelling a user writes: ``F.relu``, ``torch.cat``, ``operator.add``."""
    import operator

    import torch  # torch is optional and heavy: imported on first use
    import torch.nn.functional as F  # torch is optional and heavy: imported on first use

    name = fn.__name__
    for prefix, namespace in (("F", F), ("torch", torch), ("operator", operator)):
        if getattr(namespace, name, None) is fn:
            return f"{prefix}.{name}"
    return f"{fn.__module__}.{name}"


def _fx_section() -> list[str]:
    """What ``from_fx`` maps onto those converters (needs torch to name the functions)."""

    modules = sorted(f"nn.{t.__name__}" for t in _module_adapters())
    functions = sorted({_function_name(f) for f in _function_adapters()})
    methods = sorted(f".{name}" for name in _METHODS)

    def cell(names: list[str]) -> str:
        return ", ".join(f"`{n}`" for n in names)

    return ["## from_fx", "",
            "`from_fx` restates these calls of a `torch.fx.symbolic_trace` graph as the ATen calls above.", "",
            "| kind | calls |", "| --- | --- |",
            f"| modules | {cell(modules)} |", f"| functions | {cell(functions)} |",
            f"| tensor methods | {cell(methods)} |", ""]


def supported_ops_markdown(results: dict | None = None) -> str:
    """The Markdown of ``docs/torch_ops.md``: every converted ATen operator grouped by kind
    with how PyTorch's op_db samples fared (``results``, default: the last sweep's), then the
    calls ``from_fx`` understands."""
    results = results if results is not None else load_op_db_results()
    count = sum(len(m.CONVERTERS) for m in CONVERTER_KINDS.values())
    head = ["# Supported PyTorch operators", "",
            "`relax.frontend.torch.from_exported_program` converts these ATen operators "
            f"({count} overloads). By default the program is first decomposed "
            "(`ep.run_decompositions()`), which turns many operators into the core ones listed "
            "here; `run_ep_decomposition=False` keeps the high-level ones, which are listed too. "
            "Anything else, and any variant a converter does not take (a 3-D transposed convolution, "
            "an unsupported keyword), is reported in one error before any conversion that names each "
            "with its source line; `custom_convert_map` adds converters "
            "(`{\"aten.erfinv.default\": lambda node, importer: ...}`). A model exported in training mode "
            "is told to call `model.eval()` first.", "",
            f"Generated from the converter tables and the last op_db sweep; regenerate with `{REGENERATE}`.",
            ""]
    return "\n".join(head + _op_db_section(results) + _aten_section(results) + _fx_section())
