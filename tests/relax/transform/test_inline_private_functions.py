"""InlinePrivateFunctions (TVM's relax.transform.InlinePrivateFunctions): private helpers
inlined and removed, recursive ones kept, numbers unchanged."""

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Before:
    @R.function
    def main(a: R.Tensor((4,), "float32")):
        b = R.multiply(a, a)
        c = Before.helper(b, a)
        d = Before.helper(c, c)  # inlined twice: each copy has its own variables
        return d

    @R.function(private=True)
    def helper(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        z = R.add(x, y)
        w = R.exp(z)
        return w


def test_helper_inlined_twice_and_same_numbers():
    after = relax.transform.InlinePrivateFunctions()(Before)
    assert [gv.name_hint for gv in after.functions] == ["main"]
    assert relax.analysis.well_formed(after)
    a = np.random.default_rng(0).standard_normal(4).astype("float32") * 0.5
    vm = relax.VirtualMachine(relax.build(after, "llvm"), minitvm.cpu())
    c = np.exp(a * a + a)
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(a)).numpy(), np.exp(c + c), rtol=1e-5)


@I.ir_module
class Caller:
    @R.function
    def main(a: R.Tensor((4,), "float32")):
        with R.dataflow():
            b = R.multiply(a, a)
            c = Caller.helper(b, a)
            R.output(c)
        return c

    @R.function(private=True)
    def helper(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        with R.dataflow():
            z = R.add(x, y)
            w = R.exp(z)
            R.output(w)
        return w


def test_function_inline_functions_by_name_or_gvar():
    """Function.inline_functions: keyed by name or GlobalVar, the dataflow block stays whole,
    the numbers unchanged; a name given both ways, or a recursive set, is refused."""
    gv = Caller.get_global_var("helper")
    for key in (gv, "helper"):
        after = Caller["main"].inline_functions({key: Caller["helper"]})
        blocks = after.body.blocks
        assert len(blocks) == 1 and isinstance(blocks[0], relax.DataflowBlock)
        assert not relax.analysis.all_global_vars(after)
    mod = minitvm.IRModule({"main": after})
    a = np.random.default_rng(1).standard_normal(4).astype("float32")
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), minitvm.cpu())
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(a)).numpy(), np.exp(a * a + a), rtol=1e-5)
    with pytest.raises(ValueError, match="both"):
        Caller["main"].inline_functions({gv: Caller["helper"], "helper": Caller["helper"]})
    looping = Caller["helper"]
    call = relax.Call(gv, [looping.params[0], looping.params[1]])
    recursive = relax.Function(looping.params, relax.SeqExpr([], call), looping.ret_struct_info)
    with pytest.raises(ValueError, match="reaches itself"):
        Caller["main"].inline_functions({"helper": recursive})
