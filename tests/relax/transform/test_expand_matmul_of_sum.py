"""ExpandMatmulOfSum (TVM's relax.transform.ExpandMatmulOfSum): x @ (A + B)^T split in two
products, bound in TVM's order, with the same numbers."""

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((3, 16), "float32"), A: R.Tensor((8, 16), "float32"), B: R.Tensor((8, 16), "float32")):
        w = R.add(A, B)
        wt = R.permute_dims(w)
        out = R.matmul(x, wt)
        return out


def test_split_in_tvm_binding_order_and_same_numbers():
    after = relax.transform.ExpandMatmulOfSum()(Before)
    ops = [b.value.op.name for b in after["main"].body.blocks[0].bindings]
    # a rewriter's nested calls are bound depth-first, each operand just before its user
    assert ops == ["relax.permute_dims", "relax.matmul", "relax.permute_dims", "relax.matmul", "relax.add"]
    rng = np.random.default_rng(0)
    x, a, b = (rng.standard_normal(s).astype("float32") for s in ((3, 16), (8, 16), (8, 16)))
    vm = relax.VirtualMachine(relax.build(after, "llvm"), minitvm.cpu())
    got = vm["main"](*(minitvm.nd.array(v) for v in (x, a, b))).numpy()
    np.testing.assert_allclose(got, x @ (a + b).T, rtol=1e-5, atol=1e-5)
