# Generated from solutions/ch06.py by `python -m minitvm.grade.make_stubs`: edit the bodies that raise.
"""Chapter 6 exercises: graph optimization, write your own passes (to solve).

Each function takes a Relax ``IRModule`` or function (the starting programs are below; the
graders pass their own copies, sometimes at other sizes) and returns the rewritten one, a
pattern, a pass, an instrument, a number or a module of your own, as its docstring says. Try them here or in a
notebook::

    from exercises import ch06
    ch06.ewise_fma_rewrite(ch06.MulAdd).show()

The graders (``tests/grade/test_ch06.py``) compare the result with a target module
(``assert_structural_equal``, whose message says where they first differ) and run it on
random data against numpy; exercise 6.9 has no target: any module with the same numbers
whose memory plan fits passes. Run them with ``minitvm grade ch06`` or
``minitvm.grade.check("ch06")``.
"""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax
from minitvm.ir import IRModule
from minitvm.relax.dpl import is_const, is_op, rewrite_call, wildcard
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.transform import PassInstrument

# ---------------------------------------------------------------- starting programs


@I.ir_module
class MulAdd:
    @R.function
    def main(x: R.Tensor((3, 4), "float32"), y: R.Tensor((3, 4), "float32"), z: R.Tensor((3, 4), "float32")):
        with R.dataflow():
            lv0 = R.multiply(x, y)
            lv1 = R.add(lv0, z)
            gv = R.nn.relu(lv1)
            R.output(gv)
        return gv


@I.ir_module
class MLP:
    @R.function
    def main(x: R.Tensor((4, 16), "float32"), w0: R.Tensor((16, 32), "float32"), b0: R.Tensor((32,), "float32"),
             w1: R.Tensor((32, 10), "float32"), b1: R.Tensor((10,), "float32")):
        with R.dataflow():
            lv0 = R.matmul(x, w0)
            lv1 = R.add(lv0, b0)
            lv2 = R.nn.relu(lv1)
            lv3 = R.matmul(lv2, w1)
            gv = R.add(lv3, b1)
            R.output(gv)
        return gv


@I.ir_module
class Chain:
    @R.function
    def main(x: R.Tensor((8, 8), "float32")):
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.exp(a)
            c = R.add(a, b)
            d = R.nn.relu(c)
            e = R.multiply(d, b)
            gv = R.add(e, x)
            R.output(gv)
        return gv


@I.ir_module
class Branches:
    @R.function
    def main(x: R.Tensor((64, 64), "float32")):
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.exp(x)
            c = R.sigmoid(x)
            d = R.negative(x)
            ab = R.add(a, b)
            cd = R.multiply(c, d)
            gv = R.add(ab, cd)
            R.output(gv)
        return gv


def plan_memory(mod: IRModule) -> IRModule:
    """The module as ``relax.build`` plans its memory (without fusion): operators legalized to
    kernels, outputs allocated explicitly, then ``StaticPlanBlockMemory``."""
    mod = relax.transform.LegalizeOps()(mod)
    mod = relax.transform.CallTIRRewrite()(relax.transform.ToNonDataflow()(mod))
    return relax.transform.StaticPlanBlockMemory()(mod)


def tidy(func: relax.Function) -> relax.Function:
    """``func`` without trivial bindings (``lv = x``: later uses read ``x``; a variable bound to
    a constant is replaced by the constant) and without unused bindings:
    ``CanonicalizeBindings`` and ``remove_all_unused``, the clean-up TVM runs after a rewrite."""
    func = relax.transform.CanonicalizeBindings()(IRModule({"main": func}))["main"]
    return relax.analysis.remove_all_unused(func)


# ---------------------------------------------------------------- exercises


def ewise_fma_rewrite(mod: IRModule) -> IRModule:
    """Exercise 6.1: with a ``relax.PyExprMutator`` (decorated ``@relax.expr_functor.mutator``),
    rewrite every ``R.add(R.multiply(a, b), c)`` in ``mod["main"]`` -- the multiply bound to a
    variable of its own, as in ``MulAdd`` -- into ``R.ewise_fma(a, b, c)``, drop the bindings
    nothing uses any more (``relax.analysis.remove_all_unused``), and return the new module.
    Hints: ``self.lookup_binding(var)``, ``minitvm.ir.Op.get("relax.add")``."""
    raise NotImplementedError("exercise 6.1: write ewise_fma_rewrite")


def fuse_dense_add_pass() -> minitvm.transform.Pass:
    """Exercise 6.2: return a module pass (``@minitvm.transform.module_pass(opt_level=0,
    name="FuseDenseAdd")`` on a class with ``transform_module(self, mod, ctx)``) that replaces
    each ``R.add(R.matmul(x, w), b)`` in every Relax function (not the ones marked
    ``Primitive``) by a call of a new function that does just that: named ``fused_dense_add0``,
    ``fused_dense_add1`` ... in the order met, made with a fresh ``relax.BlockBuilder``
    (``bb.function(name, [x, w, b])`` -- parameters named ``x``, ``w``, ``b`` -- a dataflow
    block binding the matmul, then the add as its output), marked ``.with_attr("Primitive", 1)``
    and added with ``self.builder_.add_func``. Unused bindings go (``remove_all_unused``).
    The grader compares the result with a target module and runs it."""
    raise NotImplementedError("exercise 6.2: write fuse_dense_add_pass")


_FOLDABLE = {"relax.add": np.add, "relax.subtract": np.subtract, "relax.multiply": np.multiply,
             "relax.divide": np.divide}


def fold_constants(func: relax.Function) -> relax.Function:
    """Exercise 6.3: constant folding. Replace every call of ``relax.add``, ``relax.subtract``,
    ``relax.multiply`` or ``relax.divide`` whose two arguments are constants (a
    ``relax.Constant``, or a variable bound to one) by ``relax.const`` of the value numpy
    computes (``_FOLDABLE`` maps each op name to its numpy function; ``c.data.numpy()`` is a
    constant's array), so that chains of constants fold to one; then ``tidy`` the result (above)
    and return it."""
    raise NotImplementedError("exercise 6.3: write fold_constants")


def simplify(func: relax.Function) -> relax.Function:
    """Exercise 6.4: algebraic simplification. ``x * 1``, ``1 * x``, ``x + 0``, ``0 + x`` and
    ``x - 0`` become ``x`` -- where the constant holds only ones (zeros) *and* the result has
    exactly ``x``'s struct info (``x + zeros((4, 8))`` with ``x`` of shape ``(8,)`` broadcasts:
    keep it). Repeat until nothing changes, ``tidy`` the result (above) and return it.
    Compare struct info with ``minitvm.ir.structural_equal``."""
    raise NotImplementedError("exercise 6.4: write simplify")


def dense_add_pattern():
    """Exercise 6.5: a ``relax.dpl`` pattern matching a dense layer with bound weights:
    ``R.add(R.matmul(data, W), B)`` where ``W`` and ``B`` are constants and ``data`` is
    anything. (The grader matches it against bindings with ``var2val``, so a variable bound
    to a matmul, or to a constant, counts as that value.)"""
    raise NotImplementedError("exercise 6.5: write dense_add_pattern")


def remove_double_transpose(func: relax.Function) -> relax.Function:
    """Exercise 6.6: with ``relax.dpl.rewrite_call``, replace ``R.permute_dims(R.permute_dims(x,
    a), b)`` by ``x`` when the two permutations cancel, else by one ``R.permute_dims(x, c)``
    doing both. A call's ``axes`` are ``call.attrs["axes"]`` (None: reverse all axes); element
    ``i`` of ``permute_dims(x, a)`` has axis ``a[i]`` of ``x``. Return the rewritten function."""
    raise NotImplementedError("exercise 6.6: write remove_double_transpose")


def make_call_counter() -> PassInstrument:
    """Exercise 6.7: return a ``PassInstrument`` whose ``counts`` dict says how many times each
    pass (by ``info.name``) ran inside the current ``PassContext`` -- every pass, including
    each ``Sequential`` and the passes inside it; a pass that ``should_run`` refused did not run.
    ``counts`` starts empty each time a ``PassContext`` holding the instrument is entered."""
    raise NotImplementedError("exercise 6.7: write make_call_counter")


def predict_storages() -> int:
    """Exercise 6.8: predict, without running it, how many storages
    (``R.memory.alloc_storage``) ``plan_memory(Chain)`` makes for ``Chain``'s six tensors (all
    8 x 8 float32): a tensor's storage is free again once its last reader has run, and the
    returned tensor gets memory of its own. Then check with ``viz.memory_plan(plan_memory(Chain))``."""
    raise NotImplementedError("exercise 6.8: write predict_storages")


def branches_in_less_memory() -> IRModule:
    """Exercise 6.9 (open): the same numbers in less memory.

    ``plan_memory(Branches)`` plans five storages of 16 KiB (80 KiB) for ``Branches``'s
    intermediate tensors: ``viz.memory_plan`` shows which are alive together. Return a module
    whose ``main`` takes the same ``x`` and computes the same values as ``Branches`` (up to
    float rounding) with Relax operators only (no ``R.call_tir``: fusing into one kernel is
    another lesson), and for which ``plan_memory`` plans at most 48 KiB. Any order of the
    bindings, any rewrite of the arithmetic that keeps the values.
    """
    raise NotImplementedError("exercise 6.9: write branches_in_less_memory")
