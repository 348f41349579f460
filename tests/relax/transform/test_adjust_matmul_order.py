"""AdjustMatmulOrder (TVM's relax.transform.AdjustMatmulOrder): a matmul chain re-associated
to the cheaper order, the compile-time pair grouped, and the same numbers as before."""

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Chain:
    @R.function
    def main(x: R.Tensor((3, 16), "float32"), A: R.Tensor((16, 2), "float32"),
             B: R.Tensor((2, 32), "float32")):
        weight = R.matmul(A, B)  # x @ (A @ B): 16*2*32 + 3*16*32 multiply-adds
        out = R.matmul(x, weight)  # (x @ A) @ B: 3*16*2 + 3*2*32, far fewer
        return out


def _ops(mod):
    return [(b.value.args[0].name_hint, b.value.args[1].name_hint) for b in mod["main"].body.blocks[0].bindings]


def test_cheaper_order_and_same_numbers():
    after = relax.transform.AdjustMatmulOrder()(Chain)
    assert _ops(after)[0] == ("x", "A")
    rng = np.random.default_rng(0)
    x, a, b = (rng.standard_normal(s).astype("float32") for s in ((3, 16), (16, 2), (2, 32)))
    vm = relax.VirtualMachine(relax.build(after, "llvm"), minitvm.cpu())
    got = vm["main"](*(minitvm.nd.array(v) for v in (x, a, b))).numpy()
    np.testing.assert_allclose(got, x @ (a @ b), rtol=1e-5, atol=1e-5)


def test_weights_known_at_compile_time_stay_grouped():
    # with num_input=1, A and B are weights: A @ B is kept so it can be lifted out
    func = Chain["main"].with_attr("num_input", 1)
    mod = minitvm.IRModule({"main": func})
    after = relax.transform.AdjustMatmulOrder()(mod)
    assert _ops(after)[0] == ("A", "B")


@I.ir_module
class BatchedChain:
    @R.function
    def main(x: R.Tensor(("b", 1, 16), "float32"), A: R.Tensor((16, "r"), "float32"),
             B: R.Tensor(("r", 32), "float32")):
        weight = R.matmul(A, B)
        out = R.matmul(x, weight)
        return out


def test_batch_axes_not_counted_as_tvm():
    # per matrix, (x @ A) @ B costs 48*r against 512*r + 512 for x @ (A @ B); TVM leaves the
    # batch axis out of the count, so the activations go first whatever b is
    after = relax.transform.AdjustMatmulOrder()(BatchedChain)
    assert _ops(after)[0] == ("x", "A")
    rng = np.random.default_rng(1)
    x, a, b = (rng.standard_normal(s).astype("float32") for s in ((5, 1, 16), (16, 3), (3, 32)))
    vm = relax.VirtualMachine(relax.build(after, "llvm"), minitvm.cpu())
    got = vm["main"](*(minitvm.nd.array(v) for v in (x, a, b))).numpy()
    np.testing.assert_allclose(got, x @ (a @ b), rtol=1e-5, atol=1e-5)
