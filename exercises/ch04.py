# Generated from solutions/ch04.py by `python -m minitvm.grade.make_stubs`: edit the bodies that raise.
"""Chapter 4 exercises: end-to-end model execution (to solve).

Relax functions over TensorIR kernels, written in TVMScript and with the BlockBuilder,
weights bound as constants, the virtual machine and its instrument, symbolic shapes and
executables on disk; and one open exercise, a whole model made fast any way you like (4.9).
Try them here or in a notebook::

    from exercises import ch04
    mod = ch04.residual_module()
    mod.show()

The graders (``tests/grade/test_ch04.py``) run your modules through ``minitvm.compile`` and
``relax.VirtualMachine`` on fresh random data and compare with numpy, and compare structure
where building the same structure is the lesson. Run them with ``minitvm grade ch04`` or
``minitvm.grade.check("ch04")``.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

import minitvm
from minitvm import relax, te, tirx
from minitvm.ir import IRModule
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tirx as T

# ---------------------------------------------------------------- given: TE kernels (exercises 4.3, 4.6)


def te_linear(X: te.Tensor, W: te.Tensor, B: te.Tensor) -> te.Tensor:
    """``X @ W.T + B`` (a dense layer, as ``nn.Linear``)."""
    k = te.reduce_axis((0, X.shape[1]), "k")
    Y = te.compute((X.shape[0], W.shape[0]), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="Y")
    return te.compute(Y.shape, lambda i, j: Y[i, j] + B[j], name="Z")


def te_relu(X: te.Tensor) -> te.Tensor:
    """``max(X, 0)`` elementwise."""
    return te.compute(X.shape, lambda i, j: te.max(X[i, j], tirx.const(0, X.dtype)), name="Y")


def te_add(X: te.Tensor, Y: te.Tensor) -> te.Tensor:
    """``X + Y`` elementwise (same shapes)."""
    return te.compute(X.shape, lambda i, j: X[i, j] + Y[i, j], name="Z")


# ---------------------------------------------------------------- given: a chain of four kernels (exercise 4.7)


@I.ir_module
class Chain:
    @T.prim_func
    def linear(X: T.Buffer((4, 64), "float32"), W: T.Buffer((64, 64), "float32"),
               B: T.Buffer((64,), "float32"), Z: T.Buffer((4, 64), "float32")):
        T.func_attr({"global_symbol": "linear", "tirx.noalias": True})
        for i, j, k in T.grid(4, 64, 64):
            with T.sblock("Z"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Z[vi, vj] = B[vj]
                Z[vi, vj] = Z[vi, vj] + X[vi, vk] * W[vj, vk]

    @T.prim_func
    def relu(X: T.Buffer((4, 64), "float32"), Y: T.Buffer((4, 64), "float32")):
        T.func_attr({"global_symbol": "relu", "tirx.noalias": True})
        for i, j in T.grid(4, 64):
            with T.sblock("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = T.max(X[vi, vj], T.float32(0))

    @R.function
    def main(x: R.Tensor((4, 64), "float32"), w0: R.Tensor((64, 64), "float32"), b0: R.Tensor((64,), "float32"),
             w1: R.Tensor((64, 64), "float32"), b1: R.Tensor((64,), "float32")) -> R.Tensor((4, 64), "float32"):
        cls = Chain
        with R.dataflow():
            a = R.call_tir(cls.linear, (x, w0, b0), out_sinfo=R.Tensor((4, 64), "float32"))
            b = R.call_tir(cls.relu, (a,), out_sinfo=R.Tensor((4, 64), "float32"))
            c = R.call_tir(cls.linear, (b, w1, b1), out_sinfo=R.Tensor((4, 64), "float32"))
            d = R.call_tir(cls.relu, (c,), out_sinfo=R.Tensor((4, 64), "float32"))
            R.output(d)
        return d


# ---------------------------------------------------------------- given: an MLP straight from TE (exercise 4.9)


def mlp_module(batch: int, features: int, hidden: int, classes: int) -> IRModule:
    """``main(x, w0, b0, w1, b1)``: ``te_linear``, ``te_relu``, ``te_linear`` with the BlockBuilder
    (as chapter 4 builds its MLP): ``x`` is ``(batch, features)``, the result ``(batch, classes)``.
    Its kernels are the TE functions' plain loop nests: nothing is scheduled."""
    x = relax.Var("x", relax.TensorStructInfo((batch, features), "float32"))
    w0 = relax.Var("w0", relax.TensorStructInfo((hidden, features), "float32"))
    b0 = relax.Var("b0", relax.TensorStructInfo((hidden,), "float32"))
    w1 = relax.Var("w1", relax.TensorStructInfo((classes, hidden), "float32"))
    b1 = relax.Var("b1", relax.TensorStructInfo((classes,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w0, b0, w1, b1]):
        with bb.dataflow():
            lv0 = bb.emit_te(te_linear, x, w0, b0)
            lv1 = bb.emit_te(te_relu, lv0)
            out = bb.emit_output(bb.call_te(te_linear, lv1, w1, b1))
        bb.emit_func_output(out)
    return bb.get()


# ---------------------------------------------------------------- exercises


def dps_call(kernel: Callable[..., Any], inputs: tuple, shape: tuple, dtype: str) -> np.ndarray:
    """Exercise 4.1: what ``R.call_tir`` means, in numpy.

    ``kernel`` is in destination-passing style: it takes the inputs, then the output array,
    and writes into the output (it returns nothing). Allocate a numpy array of ``shape`` and
    ``dtype``, call ``kernel(*inputs, out)``, return ``out``. The inputs must stay unchanged.
    """
    raise NotImplementedError("exercise 4.1: write dps_call")


def residual_module() -> IRModule:
    """Exercise 4.2: a residual block as a Relax function in TVMScript.

    Return an ``IRModule`` (``@I.ir_module``) whose Relax function ``main(x, w, b)`` takes
    ``x: R.Tensor((8, 32), "float32")``, ``w: R.Tensor((32, 32), "float32")``,
    ``b: R.Tensor((32,), "float32")`` and returns ``relu(x @ w.T + b) + x``, shape (8, 32).
    Inside one dataflow block, make exactly three ``R.call_tir`` bindings, into three
    PrimFuncs of the module that you write: ``linear`` (``x @ w.T + b``), ``relu`` and
    ``add`` (elementwise sum). End the block with ``R.output``.
    """
    raise NotImplementedError("exercise 4.2: write residual_module")


def residual_bb(batch: int, features: int) -> IRModule:
    """Exercise 4.3: the residual block of 4.2 with ``relax.BlockBuilder``, at any size.

    Build ``main(x, w, b)`` with ``x: (batch, features)``, ``w: (features, features)``,
    ``b: (features,)`` (all float32) returning ``te_add(te_relu(te_linear(x, w, b)), x)``:
    in a dataflow block, ``bb.emit_te`` for the first two kernels, and the last one's
    ``bb.call_te`` passed to ``bb.emit_output``; then ``bb.emit_func_output``. Use the given
    ``te_linear``, ``te_relu``, ``te_add`` above. The grader compares your module with one built
    that way (``assert_structural_equal``), then runs it.
    """
    raise NotImplementedError("exercise 4.3: write residual_bb")


def bind_weights(mod: IRModule, w: np.ndarray, b: np.ndarray) -> IRModule:
    """Exercise 4.4: make the weights of ``main(x, w, b)`` constants of the module.

    ``mod`` has a Relax function ``main`` with parameters ``x``, ``w`` and ``b`` (as in 4.2).
    Return a new module whose ``main`` takes only ``x`` and uses the arrays ``w`` and ``b`` as
    constants (``relax.transform.BindParams``). Leave ``mod`` itself unchanged.
    """
    raise NotImplementedError("exercise 4.4: write bind_weights")


def record_bindings(ex: Any, *args: Any) -> list[tuple[str, np.ndarray]]:
    """Exercise 4.5: the value every kernel computed, read with the VM's instrument.

    Make a ``relax.VirtualMachine`` for the executable ``ex`` (compiled with
    ``relax_pipeline=None``, so that each ``R.call_tir`` is one kernel call), install an
    instrument with ``vm.set_instrument`` (TVM's signature: ``func, func_symbol, before_run,
    ret_value, *args``), run ``vm["main"](*args)``, and return one ``(kernel name, numpy
    array)`` pair per kernel call, in the order the calls ran. A kernel's result is its last
    argument, after it ran. Careful: the VM reuses storage, so a tensor you keep may be
    overwritten later in the run — keep a numpy copy. Calls of ``vm.builtin.*`` functions are
    not kernels: leave them out.
    """
    raise NotImplementedError("exercise 4.5: write record_bindings")


def dynamic_linear_relu() -> IRModule:
    """Exercise 4.6: one function for every batch size.

    Return a module whose ``main(x, w, b)`` takes ``x: R.Tensor(("n", 16), "float32")`` with a
    symbolic batch ``n``, ``w: R.Tensor((32, 16), "float32")``, ``b: R.Tensor((32,), "float32")``
    and returns ``relu(x @ w.T + b)`` of shape ``(n, 32)``. Write it in TVMScript (kernels with
    ``T.handle`` and ``T.match_buffer``) or with the BlockBuilder (``tirx.Var("n", "int64")`` in
    the struct info, and the given TE functions). The grader compiles it once and runs two
    batch sizes.
    """
    raise NotImplementedError("exercise 4.6: write dynamic_linear_relu")


def predict_vm_counts() -> dict[str, int]:
    """Exercise 4.7: predict the bytecode of ``minitvm.compile(Chain, relax_pipeline=None)``.

    ``Chain`` (above) calls four kernels in a row: linear, relu, linear, relu. Before
    compiling, predict for its ``main`` and return as a dict of ints:

    * ``"kernel_calls"``: calls of ``linear`` or ``relu``;
    * ``"alloc_tensor"``: calls of ``vm.builtin.alloc_tensor`` (one per kernel output);
    * ``"alloc_storage"``: calls of ``vm.builtin.alloc_storage``: memory planning lets an
      intermediate reuse the storage of one that is dead by then, but never the result
      that the function returns;
    * ``"instructions"``: all instructions, the final ``ret`` included.

    Then check your numbers against ``print(ex.as_text())``.
    """
    raise NotImplementedError("exercise 4.7: write predict_vm_counts")


def save_load_run(ex: Any, x: np.ndarray, directory: str) -> np.ndarray:
    """Exercise 4.8: an executable on disk.

    Save the executable ``ex`` into a file in ``directory`` (any name; ``ex.export_library``,
    or minitvm's ``ex.save``), load it back with ``minitvm.runtime.load_module`` (or
    ``load_executable``), run the loaded executable's ``main`` on ``x`` with a new
    ``relax.VirtualMachine``, and return the result as a numpy array.
    """
    raise NotImplementedError("exercise 4.8: write save_load_run")


def fast_mlp(mod: IRModule) -> IRModule:
    """Exercise 4.9 (open): the same model, at least 3x faster.

    ``mod`` is ``mlp_module(64, 256, 256, 10)`` (above): a Relax ``main(x, w0, b0, w1, b1)`` over
    kernels that are plain, unscheduled loop nests. Return an ``IRModule`` whose ``main`` takes
    the same parameters and computes the same result, and that runs at least 3 times faster than
    ``mod`` when both are compiled the way section 3 compiled the chapter's module,
    ``minitvm.compile(..., relax_pipeline=None)``: exactly as they are. How is up to you: anything
    chapters 2 and 4 showed that returns a module. The grader checks the numbers against numpy on
    random data, and times both modules on this machine.
    """
    raise NotImplementedError("exercise 4.9: write fast_mlp")
