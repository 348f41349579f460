"""RemoveUnusedOutputs (TVM's relax.transform.RemoveUnusedOutputs): an internal function stops
returning what no caller reads; the caller's numbers stay the same."""

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        res = Before.helper(x)
        out = R.add(res[0], res[2])
        return out

    @R.function(private=True)
    def helper(x: R.Tensor((4,), "float32")) -> R.Tuple(R.Tensor((4,), "float32"), R.Tensor((4,), "float32"),
                                                        R.Tensor((4,), "float32")):
        a = R.exp(x)
        b = R.sin(x)
        c = R.multiply(x, x)
        return (a, b, c)


def test_unread_output_dropped_and_same_numbers():
    after = relax.transform.RemoveUnusedOutputs()(Before)
    assert len(after["helper"].ret_struct_info.fields) == 2
    ops = [b.value.op.name for b in after["helper"].body.blocks[0].bindings]
    assert "relax.sin" not in ops
    x = np.random.default_rng(0).standard_normal(4).astype("float32")
    vm = relax.VirtualMachine(relax.build(after, "llvm"), minitvm.cpu())
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(x)).numpy(), np.exp(x) + x * x, rtol=1e-5)
