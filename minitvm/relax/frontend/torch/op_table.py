"""The table of supported operators, rendered from the converter tables for ``docs/torch_ops.md``
(the command in ``REGENERATE`` rewrites it)."""

from __future__ import annotations

from typing import Any

from .exported_program import CONVERTER_KINDS
from .fx_translator import _METHODS, _function_adapters, _module_adapters

__all__ = ["supported_ops_markdown", "REGENERATE"]

#: the command that rewrites the committed table, run from the project root
REGENERATE = ('.venv/bin/python -c "from minitvm.relax.frontend.torch import supported_ops_markdown as t; '
              "open('docs/torch_ops.md', 'w').write(t())\"")


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


def _aten_section() -> list[str]:
    lines = []
    for kind, module in CONVERTER_KINDS.items():
        groups = _overloads(list(module.CONVERTERS))
        lines += [f"## {kind[0].upper() + kind[1:]} ({len(groups)})", "",
                  f"`minitvm/relax/frontend/torch/{module.__name__.rsplit('.', 1)[-1]}.py`", "",
                  "| operator | overloads |", "| --- | --- |"]
        for op, overloads in groups:
            lines.append(f"| `{op}` | {', '.join(overloads) if overloads else '(Python call on sizes or tuples)'} |")
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


def supported_ops_markdown() -> str:
    """The Markdown of ``docs/torch_ops.md``: every converted ATen operator grouped by kind,
    then the calls ``from_fx`` understands."""
    count = sum(len(m.CONVERTERS) for m in CONVERTER_KINDS.values())
    head = ["# Supported PyTorch operators", "",
            "`relax.frontend.torch.from_exported_program` converts these ATen operators "
            f"({count} overloads). By default the program is first decomposed "
            "(`ep.run_decompositions()`), which turns many operators into the core ones listed "
            "here; `run_ep_decomposition=False` keeps the high-level ones, which are listed too. "
            "Anything else is reported in one error that names every missing operator with its "
            "source line; `custom_convert_map` adds converters.", "",
            f"Generated from the converter tables; regenerate with `{REGENERATE}`.", ""]
    return "\n".join(head + _aten_section() + _fx_section())
