"""``te.Tensor`` arithmetic (``A + 1``, ``A * B``): the broadcasting topi ops, as in TVM."""

import numpy as np

import minitvm
from minitvm import te, topi  # noqa: F401 - importing topi installs the operators, as TVM's does


def test_tensor_arithmetic_broadcasts_like_numpy():
    x = te.placeholder((2, 3), "float32", name="x")
    y = te.placeholder((3,), "float32", name="y")
    f = minitvm.build(te.create_prim_func([x, y, (x + 1) * y - 2 / (y + 3)]), target="llvm")
    rng = np.random.default_rng(1)
    a, b = rng.random((2, 3), dtype="float32"), rng.random(3, dtype="float32")
    out = minitvm.nd.array(np.zeros((2, 3), "float32"))
    f(minitvm.nd.array(a), minitvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), (a + 1) * b - 2 / (b + 3), rtol=1e-6)
