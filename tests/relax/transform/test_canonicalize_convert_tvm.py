"""CanonicalizeBindings and ConvertToDataflow as TVM defines them.

Each test writes a small module in TVMScript, checks the structure the pass leaves (against
a module written by hand where the result is easy to state) and, where the module runs,
that it computes the same numbers as numpy on seeded random data."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import assert_structural_equal
from minitvm.relax import transform
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T

RNG = np.random.default_rng(2026)


def rand(*shape):
    return RNG.uniform(-1, 1, shape).astype("float32")


def run(mod, *args):
    vm = relax.VirtualMachine(minitvm.compile(mod, relax_pipeline="zero"))
    return vm["main"](*[minitvm.nd.array(a) for a in args]).numpy()


def bindings(func):
    return [b for block in func.body.blocks for b in block.bindings]


def test_the_pass_module_path_of_tvm():
    from minitvm.relax.transform.transform import CanonicalizeBindings, ConvertToDataflow

    assert CanonicalizeBindings is transform.CanonicalizeBindings
    assert ConvertToDataflow is transform.ConvertToDataflow
    assert "FoldConstant" in dir(transform.transform)
    with pytest.raises(AttributeError, match="NoSuchPass"):
        transform.transform.NoSuchPass  # noqa: B018


def test_copies_and_tuple_items_fold_away():
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((3, 4), "float32"), y: R.Tensor((3, 4), "float32")):
            a = x
            t = (a, y)
            b = t[1]
            c = R.add(a, b)
            d = c
            return d

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((3, 4), "float32"), y: R.Tensor((3, 4), "float32")):
            t = (x, y)  # noqa: F841  (kept: CanonicalizeBindings does not remove bindings)
            c = R.add(x, y)
            return c

    after = transform.CanonicalizeBindings()(Before)
    assert_structural_equal(after, Expected)
    x, y = rand(3, 4), rand(3, 4)
    np.testing.assert_allclose(run(after, x, y), x + y, rtol=1e-6)


def test_constants_are_inlined_where_used():
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            c = R.const([1.5, -2.0], "float32")
            y = R.multiply(x, c)
            return y

    after = transform.CanonicalizeBindings()(Before)
    (c_binding, y_binding) = bindings(after["main"])
    # the binding of c stays (DeadCodeElimination removes it), its use reads the constant
    assert isinstance(y_binding.value.args[1], relax.Constant)
    x = rand(2)
    np.testing.assert_allclose(run(after, x), x * np.array([1.5, -2.0], "float32"), rtol=1e-6)


def test_output_var_used_only_in_its_block_becomes_a_dataflow_var():
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                a = R.exp(x)
                b = R.add(a, x)
                R.output(a, b)
            return b

    after = transform.CanonicalizeBindings()(Before)
    a, b = bindings(after["main"])
    assert isinstance(a.var, relax.DataflowVar) and not isinstance(b.var, relax.DataflowVar)
    x = rand(4)
    np.testing.assert_allclose(run(after, x), np.exp(x) + x, rtol=1e-5)


def test_copy_to_output_takes_the_dataflow_binding():
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                lv = R.exp(x)
                gv = lv
                R.output(gv)
            return gv

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                gv = R.exp(x)
                R.output(gv)
            return gv

    assert_structural_equal(transform.CanonicalizeBindings()(Before), Expected)


def test_match_cast_pins_a_symbolic_dimension():
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor(("n", 4), "float32")):
            m = T.int64()
            y = R.match_cast(x, R.Tensor((m, 4), "float32"))
            z = R.add(y, y)
            return z

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor(("n", 4), "float32")):
            z = R.add(x, x)
            return z

    after = transform.CanonicalizeBindings()(Before)
    assert_structural_equal(after, Expected)
    # the function's result is now known to be (n, 4)
    (n, _) = after["main"].params[0].struct_info.shape.values
    assert_structural_equal(after["main"].ret_struct_info.shape.values[0], n)


def test_match_casts_that_disagree_are_an_error():
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((8,), "float32"), y: R.Tensor((16,), "float32")):
            n = T.int64()
            a = R.match_cast(x, R.Tensor((n,), "float32"))  # noqa: F841
            b = R.match_cast(y, R.Tensor((n,), "float32"))
            return b

    with pytest.raises(ValueError, match="MatchCast statements must be consistent: a says symbolic variable n is "
                       "T.int64.8., but the later b says it is T.int64.16."):
        transform.CanonicalizeBindings()(Before)


def test_convert_to_dataflow_then_canonicalize():
    @I.ir_module
    class Before:
        @R.function(pure=False)
        def main(x: R.Tensor((3,), "float32")):
            a = R.exp(x)
            b = R.add(a, x)
            _ = R.print(b, format="b = {}")
            c = R.multiply(b, b)
            return c

    @I.ir_module
    class Expected:
        @R.function(pure=False)
        def main(x: R.Tensor((3,), "float32")):
            with R.dataflow():
                a = R.exp(x)
                b = R.add(a, x)
                R.output(b)
            _ = R.print(b, format="b = {}")
            c = R.multiply(b, b)
            return c

    after = transform.ConvertToDataflow()(Before)
    assert_structural_equal(after, Expected)
    # min_size=1: the single binding after the print is a block of its own
    one = transform.ConvertToDataflow(min_size=1)(Before)
    assert [type(b).__name__ for b in one["main"].body.blocks] == ["DataflowBlock", "BindingBlock",
                                                                   "DataflowBlock"]


def test_convert_to_dataflow_grows_an_existing_block_and_wraps_local_functions():
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((3,), "float32")):
            @R.function
            def twice(v: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
                w = R.add(v, v)
                return w

            with R.dataflow():
                a = R.exp(x)
                R.output(a)
            b = twice(a)
            return b

    after = transform.ConvertToDataflow()(Before)
    (block,) = after["main"].body.blocks
    assert isinstance(block, relax.DataflowBlock)
    assert [type(b.value).__name__ for b in block.bindings] == ["Function", "Call", "Call"]
    text = after.script()
    assert_structural_equal(minitvm.script.from_source(text), after)


def test_if_is_never_inside_a_dataflow_block_but_its_branches_are_converted():
    @I.ir_module
    class Before:
        @R.function
        def main(c: R.Prim("bool"), x: R.Tensor((3,), "float32")):
            if c:
                a = R.exp(x)
                y = R.add(a, x)
            else:
                a = R.negative(x)
                y = R.multiply(a, x)
            return y

    after = transform.ConvertToDataflow()(Before)
    (if_binding,) = bindings(after["main"])
    assert isinstance(if_binding.value, relax.If)
    for branch in (if_binding.value.true_branch, if_binding.value.false_branch):
        assert [type(b).__name__ for b in branch.blocks] == ["DataflowBlock"]


def test_fold_constant_folds_operators_only_inside_dataflow_blocks():
    data = RNG.uniform(-1, 1, (3, 2)).astype("float32")
    outside = relax.BlockBuilder()
    with outside.function("main", []):
        gv = outside.emit(relax.op.add(relax.const(data), relax.const(data)))
        outside.emit_func_output(gv)
    mod = outside.get()
    assert transform.FoldConstant()(mod) is mod  # TVM leaves calls outside dataflow alone

    inside = relax.BlockBuilder()
    with inside.function("main", []):
        with inside.dataflow():
            lv = inside.emit(relax.op.add(relax.const(data), relax.const(data)))
            gv = inside.emit_output(relax.op.multiply(lv, relax.const(data)))
        inside.emit_func_output(gv)
    folded = transform.FoldConstant()(inside.get())
    assert isinstance(folded["main"].body.body, relax.Constant)
    np.testing.assert_allclose(folded["main"].body.body.data.numpy(), (data + data) * data, rtol=1e-6)
