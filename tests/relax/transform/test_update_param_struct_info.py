"""UpdateParamStructInfo (TVM's relax.transform.UpdateParamStructInfo): a parameter's new
shape flows through the bindings and the result; the function runs at the new shape."""

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((16,), "float32"), weight: R.Tensor((32, 16), "float32")) -> R.Tensor((32,), "float32"):
        out = R.matmul(weight, x)
        return out


def test_new_weight_shape_flows_to_the_result():
    def sinfo(var):
        return relax.TensorStructInfo([8, 16], "float32") if var.name_hint == "weight" else None

    after = relax.transform.UpdateParamStructInfo(sinfo)(Before)
    assert [int(d) for d in after["main"].ret_struct_info.shape_values] == [8]
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(16).astype("float32"), rng.standard_normal((8, 16)).astype("float32")
    vm = relax.VirtualMachine(relax.build(after, "llvm"), minitvm.cpu())
    np.testing.assert_allclose(vm["main"](minitvm.nd.array(x), minitvm.nd.array(w)).numpy(), w @ x, rtol=1e-5)
