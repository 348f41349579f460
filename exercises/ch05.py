# Generated from solutions/ch05.py by `python -m minitvm.grade.make_stubs`: edit the bodies that raise.
"""Chapter 5 exercises: integrating libraries and frameworks (to solve).

Library functions called from Relax, tensors shared with PyTorch through DLPack, converters
for the PyTorch importers, and weights kept as inputs. Try them in a notebook::

    import sys; sys.path.insert(0, "..")
    from exercises import ch05
    ch05.register_scaled_add("my.scaled_add")
    mod = ch05.module_calling("my.scaled_add", 4, 8)
    mod.show()

The graders (``tests/grade/test_ch05.py``) run your code on fresh random data against numpy
and torch, and compare structure where structure is the point. Run them with
``minitvm grade ch05`` or ``minitvm.grade.check("ch05")``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

import minitvm
from minitvm import relax
from minitvm.ir import IRModule
from minitvm.relax.frontend import detach_params
from minitvm.relax.frontend.torch import from_exported_program


def register_scaled_add(name: str) -> None:
    """Exercise 5.1: register, under ``name``, a function ``f(a, b, out)`` in
    destination-passing style that computes ``out = a + 2 * b`` with numpy.

    ``a``, ``b`` and ``out`` arrive as ``minitvm.nd.NDArray`` of the same shape; write the
    result *into* ``out`` (a numpy view of it: ``np.from_dlpack(out)``) and return nothing.
    Use ``minitvm.register_func(name, ..., override=True)`` so that calling this twice works.
    """
    raise NotImplementedError("exercise 5.1: write register_scaled_add")


def module_calling(func_name: str, m: int, n: int) -> IRModule:
    """Exercise 5.2: an IRModule whose ``main(a, b)`` (two float32 tensors of shape ``(m, n)``)
    returns ``R.call_dps_packed(func_name, (a, b), out_sinfo=<float32 (m, n)>)``, bound inside
    a dataflow block and output with ``R.output`` (or the BlockBuilder's ``emit_output``).

    Build it with ``relax.BlockBuilder`` (the sizes are arguments), as chapter 5's
    ``lib_linear_module`` does.
    """
    raise NotImplementedError("exercise 5.2: write module_calling")


def zero_copy_round_trip(t: torch.Tensor) -> tuple[Any, torch.Tensor]:
    """Exercise 5.3: hand the torch tensor ``t`` to minitvm and back without copying.

    Return ``(nd, back)``: ``nd`` a ``minitvm.nd.NDArray`` and ``back`` a ``torch.Tensor``,
    both sharing ``t``'s memory (``t.data_ptr() == nd.data_ptr == back.data_ptr()``).
    """
    raise NotImplementedError("exercise 5.3: write zero_copy_round_trip")


def register_torch_linear(name: str) -> None:
    """Exercise 5.4: register, under ``name``, a destination-passing function
    ``f(x, w, b, out)`` that computes ``out = x @ w.T + b`` with **torch** (x: (n, k),
    w: (m, k), b: (m,), out: (n, m), float32).

    Turn each argument into a torch tensor without a copy (``torch.from_dlpack``) and let
    torch write straight into ``out`` (``torch.addmm(..., out=...)``). Return nothing.
    """
    raise NotImplementedError("exercise 5.4: write register_torch_linear")


def mixed_module(lib_matmul: str, n: int, k: int, m: int) -> IRModule:
    """Exercise 5.5: a module mixing a library call and generated code.

    ``main(x, w)`` (float32, x: (n, k), w: (k, m)) computes ``relu(x @ w)``: the matmul by a
    ``call_dps_packed`` to the registered function ``lib_matmul`` (``f(a, b, out)``, out: (n, m)),
    the ReLU by minitvm (a Relax operator such as ``relax.op.nn.relu``, which the pipeline turns
    into a generated kernel). No ``relax.op.matmul``: the library does the matmul.
    """
    raise NotImplementedError("exercise 5.5: write mixed_module")


def convert_sinh(node: Any, importer: Any) -> Any:
    """Exercise 5.6: a converter for ``aten.sinh.default``, which minitvm does not have, for
    ``from_exported_program(ep, custom_convert_map={"aten.sinh.default": convert_sinh})``.

    ``sinh(x) = (exp(x) - exp(-x)) / 2``. Read the input with ``importer.arg(node.args[0])``,
    build the expression from ``relax.op`` functions (``exp``, ``negative``, ``subtract``,
    ``multiply``; ``importer.scalar(0.5, x)`` is a constant of x's dtype), emit it with
    ``importer.bb.emit(...)`` and return what ``emit`` returns.
    """
    raise NotImplementedError("exercise 5.6: write convert_sinh")


def fx_softsign_map() -> dict:
    """Exercise 5.7: a ``custom_convert_map`` for ``from_fx`` that converts
    ``torch.nn.functional.softsign`` (``x / (1 + |x|)``), which minitvm does not know.

    ``from_fx`` (as TVM's) looks a called function up by its name (``"softsign"``); the
    converter is ``fn(node, importer)`` as for ``from_exported_program``. Return the dict.
    """
    raise NotImplementedError("exercise 5.7: write fx_softsign_map")


def import_params_as_input(model: torch.nn.Module, example: torch.Tensor) -> tuple[IRModule, list]:
    """Exercise 5.8: import ``model`` (export it with
    ``torch.export.export(model, (example,))``) with its weights as *inputs* of ``main``.

    Return ``(mod, params)``: ``mod`` without the ``"params"`` attribute, whose ``main`` takes
    the example input then one parameter per weight, and ``params`` the list of weight arrays in
    ``main``'s order (``keep_params_as_input=True``, ``relax.frontend.detach_params``). ``main``
    returns a tensor, not a 1-tuple (``unwrap_unit_return_tuple=True``).
    """
    raise NotImplementedError("exercise 5.8: write import_params_as_input")


def bind_params(mod: IRModule, params: list) -> IRModule:
    """Exercise 5.9: bind the weights back as constants.

    ``mod``'s ``main`` takes ``attrs["num_input"]`` user inputs followed by one parameter per
    array in ``params`` (what exercise 5.8 returns). Return a module whose ``main`` takes only
    the user inputs, the weights bound as constants (``relax.transform.BindParams``, keyed by
    the parameters' names).
    """
    raise NotImplementedError("exercise 5.9: write bind_params")


def register_fused_layer(name: str) -> None:
    """Exercise 5.10 (open): a registered layer that needs no memory of its own.

    Register, under ``name``, a destination-passing function ``f(x, w, b, r, out)`` computing
    ``out = relu(x @ w.T + b) + r`` (float32; x: (n, k), w: (m, k), b: (m,), r and out: (n, m)):
    at no moment during a call may the arrays it creates (numpy's or torch's) hold more than half
    of ``out``'s bytes.

    numpy, torch or both; return nothing. The grader measures what a call allocates (torch
    tensors as they are created, numpy's arrays with ``tracemalloc``) at ``n = m = 256``, ``k = 32``.
    """
    raise NotImplementedError("exercise 5.10: write register_fused_layer")
