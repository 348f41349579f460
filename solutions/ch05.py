"""Chapter 5 exercises: integrating libraries and frameworks (solved).

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
    # BEGIN SOLUTION
    def scaled_add(a, b, out):
        np.add(np.from_dlpack(a), 2 * np.from_dlpack(b), out=np.from_dlpack(out))

    minitvm.register_func(name, scaled_add, override=True)
    # END SOLUTION


def module_calling(func_name: str, m: int, n: int) -> IRModule:
    """Exercise 5.2: an IRModule whose ``main(a, b)`` (two float32 tensors of shape ``(m, n)``)
    returns ``R.call_dps_packed(func_name, (a, b), out_sinfo=<float32 (m, n)>)``, bound inside
    a dataflow block and output with ``R.output`` (or the BlockBuilder's ``emit_output``).

    Build it with ``relax.BlockBuilder`` (the sizes are arguments), as chapter 5's
    ``lib_linear_module`` does.
    """
    # BEGIN SOLUTION
    bb = relax.BlockBuilder()
    a = relax.Var("a", relax.TensorStructInfo((m, n), "float32"))
    b = relax.Var("b", relax.TensorStructInfo((m, n), "float32"))
    with bb.function("main", [a, b]):
        with bb.dataflow():
            gv = bb.emit_output(relax.call_dps_packed(func_name, [a, b],
                                                      out_sinfo=relax.TensorStructInfo((m, n), "float32")))
        bb.emit_func_output(gv)
    return bb.get()
    # END SOLUTION


def zero_copy_round_trip(t: torch.Tensor) -> tuple[Any, torch.Tensor]:
    """Exercise 5.3: hand the torch tensor ``t`` to minitvm and back without copying.

    Return ``(nd, back)``: ``nd`` a ``minitvm.nd.NDArray`` and ``back`` a ``torch.Tensor``,
    both sharing ``t``'s memory (``t.data_ptr() == nd.data_ptr == back.data_ptr()``).
    """
    # BEGIN SOLUTION
    nd = minitvm.nd.from_dlpack(t)
    return nd, torch.from_dlpack(nd)
    # END SOLUTION


def register_torch_linear(name: str) -> None:
    """Exercise 5.4: register, under ``name``, a destination-passing function
    ``f(x, w, b, out)`` that computes ``out = x @ w.T + b`` with **torch** (x: (n, k),
    w: (m, k), b: (m,), out: (n, m), float32).

    Turn each argument into a torch tensor without a copy (``torch.from_dlpack``) and let
    torch write straight into ``out`` (``torch.addmm(..., out=...)``). Return nothing.
    """
    # BEGIN SOLUTION
    def torch_linear(x, w, b, out):
        torch.addmm(torch.from_dlpack(b), torch.from_dlpack(x), torch.from_dlpack(w).T,
                    out=torch.from_dlpack(out))

    minitvm.register_func(name, torch_linear, override=True)
    # END SOLUTION


def mixed_module(lib_matmul: str, n: int, k: int, m: int) -> IRModule:
    """Exercise 5.5: a module mixing a library call and generated code.

    ``main(x, w)`` (float32, x: (n, k), w: (k, m)) computes ``relu(x @ w)``: the matmul by a
    ``call_dps_packed`` to the registered function ``lib_matmul`` (``f(a, b, out)``, out: (n, m)),
    the ReLU by minitvm (a Relax operator such as ``relax.op.nn.relu``, which the pipeline turns
    into a generated kernel). No ``relax.op.matmul``: the library does the matmul.
    """
    # BEGIN SOLUTION
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((n, k), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((k, m), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(relax.call_dps_packed(lib_matmul, [x, w], out_sinfo=relax.TensorStructInfo((n, m), "float32")))
            gv = bb.emit_output(relax.op.nn.relu(y))
        bb.emit_func_output(gv)
    return bb.get()
    # END SOLUTION


def convert_sinh(node: Any, importer: Any) -> Any:
    """Exercise 5.6: a converter for ``aten.sinh.default``, which minitvm does not have, for
    ``from_exported_program(ep, custom_convert_map={"aten.sinh.default": convert_sinh})``.

    ``sinh(x) = (exp(x) - exp(-x)) / 2``. Read the input with ``importer.arg(node.args[0])``,
    build the expression from ``relax.op`` functions (``exp``, ``negative``, ``subtract``,
    ``multiply``; ``importer.scalar(0.5, x)`` is a constant of x's dtype), emit it with
    ``importer.bb.emit(...)`` and return what ``emit`` returns.
    """
    # BEGIN SOLUTION
    x = importer.arg(node.args[0])
    diff = relax.op.subtract(relax.op.exp(x), relax.op.exp(relax.op.negative(x)))
    return importer.bb.emit(relax.op.multiply(diff, importer.scalar(0.5, x)))
    # END SOLUTION


def fx_softsign_map() -> dict:
    """Exercise 5.7: a ``custom_convert_map`` for ``from_fx`` that converts
    ``torch.nn.functional.softsign`` (``x / (1 + |x|)``), which minitvm does not know.

    ``from_fx`` (as TVM's) looks a called function up by its name (``"softsign"``); the
    converter is ``fn(node, importer)`` as for ``from_exported_program``. Return the dict.
    """
    # BEGIN SOLUTION
    def softsign(node, importer):
        x = importer.arg(node.args[0])
        return importer.bb.emit(relax.op.divide(x, relax.op.add(importer.scalar(1.0, x), relax.op.abs(x))))

    return {"softsign": softsign}
    # END SOLUTION


def import_params_as_input(model: torch.nn.Module, example: torch.Tensor) -> tuple[IRModule, list]:
    """Exercise 5.8: import ``model`` (export it with
    ``torch.export.export(model, (example,))``) with its weights as *inputs* of ``main``.

    Return ``(mod, params)``: ``mod`` without the ``"params"`` attribute, whose ``main`` takes
    the example input then one parameter per weight, and ``params`` the list of weight arrays in
    ``main``'s order (``keep_params_as_input=True``, ``relax.frontend.detach_params``). ``main``
    returns a tensor, not a 1-tuple (``unwrap_unit_return_tuple=True``).
    """
    # BEGIN SOLUTION
    ep = torch.export.export(model, (example,))
    mod = from_exported_program(ep, keep_params_as_input=True, unwrap_unit_return_tuple=True)
    mod, params = detach_params(mod)
    return mod, params["main"]
    # END SOLUTION


def bind_params(mod: IRModule, params: list) -> IRModule:
    """Exercise 5.9: bind the weights back as constants.

    ``mod``'s ``main`` takes ``attrs["num_input"]`` user inputs followed by one parameter per
    array in ``params`` (what exercise 5.8 returns). Return a module whose ``main`` takes only
    the user inputs, the weights bound as constants (``relax.transform.BindParams``, keyed by
    the parameters' names).
    """
    # BEGIN SOLUTION
    func = mod["main"]
    n = int(func.attrs["num_input"])
    names = [v.name_hint for v in func.params[n:]]
    return relax.transform.BindParams("main", dict(zip(names, params)))(mod)
    # END SOLUTION


def register_fused_layer(name: str) -> None:
    """Exercise 5.10 (open): a registered layer that needs no memory of its own.

    Register, under ``name``, a destination-passing function ``f(x, w, b, r, out)`` computing
    ``out = relu(x @ w.T + b) + r`` (float32; x: (n, k), w: (m, k), b: (m,), r and out: (n, m)):
    at no moment during a call may the arrays it creates (numpy's or torch's) hold more than half
    of ``out``'s bytes.

    numpy, torch or both; return nothing. The grader measures what a call allocates (torch
    tensors as they are created, numpy's arrays with ``tracemalloc``) at ``n = m = 256``, ``k = 32``.
    """
    # BEGIN SOLUTION
    def fused_layer(x, w, b, r, out):
        o = torch.from_dlpack(out)  # the VM's buffer, seen by torch: every step below writes into it
        torch.addmm(torch.from_dlpack(b), torch.from_dlpack(x), torch.from_dlpack(w).T, out=o)
        o.relu_()
        o.add_(torch.from_dlpack(r))

    minitvm.register_func(name, fused_layer, override=True)
    # END SOLUTION
