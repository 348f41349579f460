"""BundleModelParams (TVM's relax.transform.BundleModelParams): weights after num_input in
one tuple parameter, and the function computes the same given the tuple."""

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Mod:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), w: R.Tensor((3, 4), "float32"), b: R.Tensor((4,), "float32")):
        R.func_attr({"num_input": 1})
        y = R.matmul(x, w)
        z = R.add(y, b)
        return z


def test_weights_bundled_and_same_numbers():
    after = relax.transform.BundleModelParams()(Mod)
    params = after["main"].params
    assert [p.name_hint for p in params] == ["x", "model_params"]
    assert isinstance(params[1].struct_info, relax.TupleStructInfo)
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype("float32") for s in ((2, 3), (3, 4), (4,)))
    vm = relax.VirtualMachine(relax.build(after, "llvm"), minitvm.cpu())
    got = vm["main"](minitvm.nd.array(x), (minitvm.nd.array(w), minitvm.nd.array(b))).numpy()
    np.testing.assert_allclose(got, x @ w + b, rtol=1e-5, atol=1e-5)
