"""ExpandTupleArguments (TVM's relax.transform.ExpandTupleArguments): a nested tuple parameter
of an internal function becomes its leaves; the results are the same."""

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R

S = R.Tensor((3,), "float32")


@I.ir_module
class Before:
    @R.function
    def main(a: R.Tensor((3,), "float32"), b: R.Tensor((3,), "float32"), c: R.Tensor((3,), "float32")):
        out = Before.helper(((a, b), c))
        return out

    @R.function(private=True)
    def helper(args: R.Tuple(R.Tuple(S, S), S)) -> R.Tensor((3,), "float32"):
        x = R.multiply(args[0][1], args[1])
        y = R.add(x, args[0][0])
        return y


def test_nested_tuple_parameter_flattened_and_same_numbers():
    after = relax.transform.ExpandTupleArguments()(Before)
    assert len(after["helper"].params) == 3
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(3).astype("float32") for _ in range(3))
    vm = relax.VirtualMachine(relax.build(after, "llvm"), minitvm.cpu())
    got = vm["main"](*(minitvm.nd.array(v) for v in (a, b, c))).numpy()
    np.testing.assert_allclose(got, b * c + a, rtol=1e-6)
