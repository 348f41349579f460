"""``nn.op.sort``/``argsort``/``topk`` in an exported ``nn.Module``, run against numpy."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax
from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn import op


def test_sort_argsort_topk_in_a_module():
    class Model(nn.Module):
        def forward(self, x):
            values, indices = op.topk(x, k=2, axis=-1)
            return op.sort(x, descending=True), op.argsort(x, axis=0), values, indices

    mod, _ = Model().export_tvm(spec={"forward": {"x": nn.spec.Tensor([3, 5], "float32")}})
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    x = np.random.default_rng(0).uniform(-1, 1, (3, 5)).astype("float32")
    desc, order, values, indices = (t.numpy() for t in vm["forward"](minitvm.nd.array(x)))
    np.testing.assert_array_equal(desc, -np.sort(-x, axis=-1))
    np.testing.assert_array_equal(order, np.argsort(x, axis=0, kind="stable"))
    np.testing.assert_array_equal(values, desc[:, :2])
    np.testing.assert_array_equal(indices, np.argsort(-x, axis=-1, kind="stable")[:, :2])
