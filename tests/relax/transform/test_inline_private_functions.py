"""InlinePrivateFunctions (TVM's relax.transform.InlinePrivateFunctions): private helpers
inlined and removed, recursive ones kept, numbers unchanged."""

import numpy as np

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
