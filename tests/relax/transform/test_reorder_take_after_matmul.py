"""ReorderTakeAfterMatmul (TVM's relax.transform.ReorderTakeAfterMatmul): the gather moves
after the product, and both the simple and the batched-LoRA forms compute the same numbers."""

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


def _run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), minitvm.cpu())
    return vm["main"](*(minitvm.nd.array(a) for a in args)).numpy()


def test_take_of_columns_moves_after_matmul():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2, 8), "float32"), W: R.Tensor((8, 6), "float32"), idx: R.Tensor((3,), "int64")):
            w = R.take(W, idx, axis=1)
            out = R.matmul(x, w)
            return out

    after = relax.transform.ReorderTakeAfterMatmul()(Mod)
    assert [b.value.op.name for b in after["main"].body.blocks[0].bindings] == ["relax.matmul", "relax.take"]
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 8)).astype("float32"), rng.standard_normal((8, 6)).astype("float32")
    idx = np.array([4, 0, 2], "int64")
    np.testing.assert_allclose(_run(after, x, w, idx), x @ w[:, idx], rtol=1e-5, atol=1e-5)


def test_batched_lora_table():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2, 3, 4), "float32"), W: R.Tensor((5, 4, 6), "float32"),
                 idx: R.Tensor((2,), "int64")):
            w = R.take(W, idx, axis=0)
            out = R.matmul(x, w)
            return out

    after = relax.transform.ReorderTakeAfterMatmul()(Mod)
    assert "relax.einsum" in [b.value.op.name for b in after["main"].body.blocks[0].bindings]
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 3, 4)).astype("float32"), rng.standard_normal((5, 4, 6)).astype("float32")
    idx = np.array([3, 1], "int64")
    np.testing.assert_allclose(_run(after, x, w, idx), np.matmul(x, w[idx]), rtol=1e-5, atol=1e-5)
