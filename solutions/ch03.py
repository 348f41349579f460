"""Chapter 3 exercises: from PyTorch to native code (solved).

Import a model, read its Relax, find the operators minitvm lacks and add a converter, see
what fusion made of it, and compile once for every batch size. Try them in a notebook::

    import sys; sys.path.insert(0, "..")
    import torch
    from exercises import ch03
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
    mod = ch03.import_model(model, torch.randn(2, 8))
    mod.show()

The graders (``tests/grade/test_ch03.py``) use their own models and fresh random data and
compare with torch. Run them with ``minitvm grade ch03`` or ``minitvm.grade.check("ch03")``.
"""

from __future__ import annotations

from typing import Any

import torch

import minitvm
from minitvm import relax
from minitvm.ir import IRModule
from minitvm.relax.frontend.torch import CONVERTERS, from_exported_program


def import_model(model: torch.nn.Module, example: torch.Tensor) -> IRModule:
    """Exercise 3.1: export ``model`` with ``torch.export.export`` on the single input
    ``example`` and import it with ``from_exported_program``.

    ``main`` must take one tensor of ``example``'s shape and return a tensor (not a 1-tuple:
    ``unwrap_unit_return_tuple=True``); the weights become constants.
    """
    # BEGIN SOLUTION
    ep = torch.export.export(model, (example,))
    return from_exported_program(ep, unwrap_unit_return_tuple=True)
    # END SOLUTION


def relax_ops(mod: IRModule) -> list[str]:
    """Exercise 3.2: the Relax operators that ``mod["main"]`` calls, in order.

    Walk the bindings of main's dataflow block (``mod["main"].body.blocks[0].bindings``);
    each binding has a ``var`` and a ``value``. Where the value is a ``relax.Call`` whose
    ``op`` is an operator, collect ``value.op.name`` (such as ``"relax.matmul"``). Skip
    other values (a variable bound to a variable, a tuple, ...).
    """
    # BEGIN SOLUTION
    names = []
    for binding in mod["main"].body.blocks[0].bindings:
        value = binding.value
        if isinstance(value, relax.Call) and isinstance(value.op, minitvm.ir.Op):
            names.append(value.op.name)
    return names
    # END SOLUTION


def convert_hypot(node: Any, importer: Any) -> Any:
    """Exercise 3.3 (open): a converter for ``aten.hypot`` right for every float32 input.

    ``hypot(x, y) = sqrt(x² + y²)``; yours is used as
    ``custom_convert_map={"aten.hypot.default": convert_hypot}`` and must be right wherever the
    result is a float32 number.

    Section 8's ``convert_hypot`` is right for everyday numbers only. The grader compares yours
    with ``torch.hypot`` (relative error at most 1e-5) on random pairs whose magnitudes range
    from 1e-30 to 1e30, zeros included. Any formula counts. The pattern of a converter:
    ``importer.arg(node.args[i])`` is an input, ``importer.scalar(v, x)`` a constant of ``x``'s
    dtype, ``importer.bb.emit(expr)`` emits a ``relax.op`` expression; return what ``emit`` returns.
    """
    # BEGIN SOLUTION
    x, y = importer.arg(node.args[0]), importer.arg(node.args[1])
    ax, ay = relax.op.abs(x), relax.op.abs(y)
    big = importer.bb.emit(relax.op.maximum(ax, ay))
    # divide by the larger magnitude: the number squared is at most 1, so it cannot overflow, and
    # what underflows is too small to change 1 + r²; 0 / 0 is avoided where both are 0
    nonzero = relax.op.where(relax.op.equal(big, importer.scalar(0.0, x)), importer.scalar(1.0, x), big)
    r = importer.bb.emit(relax.op.divide(relax.op.minimum(ax, ay), nonzero))
    root = relax.op.sqrt(relax.op.add(importer.scalar(1.0, x), relax.op.multiply(r, r)))
    return importer.bb.emit(relax.op.multiply(big, root))
    # END SOLUTION


def compile_dynamic_batch(model: torch.nn.Module, example: torch.Tensor) -> relax.VirtualMachine:
    """Exercise 3.4: compile ``model`` once for any batch size.

    Export it with dimension 0 of ``example`` dynamic (``torch.export.Dim``, passed as
    ``dynamic_shapes``), import it (``unwrap_unit_return_tuple=True``), compile it with
    ``minitvm.compile(mod, "llvm")`` and return a ``relax.VirtualMachine`` on ``minitvm.cpu()``
    whose ``main`` accepts inputs of every batch size.
    """
    # BEGIN SOLUTION
    batch = torch.export.Dim("batch")
    ep = torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
    mod = from_exported_program(ep, unwrap_unit_return_tuple=True)
    return relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    # END SOLUTION


def missing_ops(model: torch.nn.Module, example: torch.Tensor) -> list[str]:
    """Exercise 3.5: the ATen operators of ``model`` that minitvm has no converter for, sorted.

    Export the model on ``example`` and call ``run_decompositions()`` on the result: that graph
    is what ``from_exported_program`` converts. Its ``call_function`` nodes call the operators
    (``str(node.target)`` is a name such as ``"aten.addmm.default"``; count only names starting
    with ``"aten."``: Python's ``getitem``, which picks one output of an operator, is not one).
    Those that are not keys of ``minitvm.relax.frontend.torch.CONVERTERS`` are missing. Each
    name once.
    """
    # BEGIN SOLUTION
    graph = torch.export.export(model, (example,)).run_decompositions().graph
    names = {str(n.target) for n in graph.nodes if n.op == "call_function" and str(n.target).startswith("aten.")}
    return sorted(n for n in names if n not in CONVERTERS)
    # END SOLUTION


def fused_kernels(mod: IRModule) -> list[str]:
    """Exercise 3.6: run the ``"zero"`` pipeline (``relax.get_pipeline("zero")``) on ``mod`` and
    return the names of the TensorIR functions it produced that FuseOps/FuseTIR made from more
    than one operator (their names start with ``"fused_"``), sorted.
    """
    # BEGIN SOLUTION
    lowered = relax.get_pipeline("zero")(mod)
    return sorted(gv.name_hint for gv, f in lowered.items()
                  if isinstance(f, minitvm.tirx.PrimFunc) and gv.name_hint.startswith("fused_"))
    # END SOLUTION
