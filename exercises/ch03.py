# Generated from solutions/ch03.py by `python -m minitvm.grade.make_stubs`: edit the bodies that raise.
"""Chapter 3 exercises: from PyTorch to native code (to solve).

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
    raise NotImplementedError("exercise 3.1: write import_model")


def relax_ops(mod: IRModule) -> list[str]:
    """Exercise 3.2: the Relax operators that ``mod["main"]`` calls, in order.

    Walk the bindings of main's dataflow block (``mod["main"].body.blocks[0].bindings``);
    each binding has a ``var`` and a ``value``. Where the value is a ``relax.Call`` whose
    ``op`` is an operator, collect ``value.op.name`` (such as ``"relax.matmul"``). Skip
    other values (a variable bound to a variable, a tuple, ...).
    """
    raise NotImplementedError("exercise 3.2: write relax_ops")


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
    raise NotImplementedError("exercise 3.3: write convert_hypot")


def compile_dynamic_batch(model: torch.nn.Module, example: torch.Tensor) -> relax.VirtualMachine:
    """Exercise 3.4: compile ``model`` once for any batch size.

    Export it with dimension 0 of ``example`` dynamic (``torch.export.Dim``, passed as
    ``dynamic_shapes``), import it (``unwrap_unit_return_tuple=True``), compile it with
    ``minitvm.compile(mod, "llvm")`` and return a ``relax.VirtualMachine`` on ``minitvm.cpu()``
    whose ``main`` accepts inputs of every batch size.
    """
    raise NotImplementedError("exercise 3.4: write compile_dynamic_batch")


def missing_ops(model: torch.nn.Module, example: torch.Tensor) -> list[str]:
    """Exercise 3.5: the ATen operators of ``model`` that minitvm has no converter for, sorted.

    Export the model on ``example`` and call ``run_decompositions()`` on the result: that graph
    is what ``from_exported_program`` converts. Its ``call_function`` nodes call the operators
    (``str(node.target)`` is a name such as ``"aten.addmm.default"``; count only names starting
    with ``"aten."``: Python's ``getitem``, which picks one output of an operator, is not one).
    Those that are not keys of ``minitvm.relax.frontend.torch.CONVERTERS`` are missing. Each
    name once.
    """
    raise NotImplementedError("exercise 3.5: write missing_ops")


def fused_kernels(mod: IRModule) -> list[str]:
    """Exercise 3.6: run the ``"zero"`` pipeline (``relax.get_pipeline("zero")``) on ``mod`` and
    return the names of the TensorIR functions it produced that FuseOps/FuseTIR made from more
    than one operator (their names start with ``"fused_"``), sorted.
    """
    raise NotImplementedError("exercise 3.6: write fused_kernels")
