"""TopologicalSort (TVM's relax.transform.TopologicalSort): each order and direction, and a
CompareBeforeAfter subclass whose base names the transform as a method."""

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


def _module():
    @I.ir_module
    class Mod:
        @R.function
        def main(a: R.Tensor((4,), "float32"), b: R.Tensor((4,), "float32")):
            with R.dataflow():
                d = R.multiply(a, b)
                c = R.add(a, b)
                e = R.exp(c)
                f = R.subtract(e, d)
                R.output(f)
            return f
    return Mod


def _names(mod):
    return [b.var.name_hint for b in mod["main"].body.blocks[0].bindings]


def test_orders_and_directions():
    mod = _module()
    sort = relax.transform.TopologicalSort
    # the orders TVM 0.27 gives this module
    assert _names(sort("depth-first", "from-inputs")(mod)) == ["d", "c", "e", "f"]
    assert _names(sort("breadth-first", "from-inputs")(mod)) == ["d", "c", "e", "f"]
    assert _names(sort("depth-first", "from-outputs")(mod)) == ["c", "e", "d", "f"]
    assert _names(sort("breadth-first", "from-outputs")(mod)) == ["c", "d", "e", "f"]


def test_sorted_module_computes_the_same():
    mod = _module()
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(4).astype("float32") for _ in range(2))
    out = []
    for m in (mod, relax.transform.TopologicalSort("depth-first", "from-inputs")(mod)):
        vm = relax.VirtualMachine(relax.build(m, "llvm"), minitvm.cpu())
        out.append(vm["main"](minitvm.nd.array(a), minitvm.nd.array(b)).numpy())
    np.testing.assert_allclose(out[1], np.exp(a + b) - a * b, rtol=1e-6)
    np.testing.assert_allclose(out[0], out[1])


class _Base(minitvm.testing.CompareBeforeAfter):
    def transform(self):
        return relax.transform.TopologicalSort(order="breadth-first", direction="from-outputs")


class TestInheritedTransformMethod(_Base):
    # the base's method-made fixture is reused by the subclass (TVM's `_transform_orig`)
    before = _module()

    @I.ir_module
    class expected:  # noqa: N801 - the name CompareBeforeAfter reads
        @R.function
        def main(a: R.Tensor((4,), "float32"), b: R.Tensor((4,), "float32")):
            with R.dataflow():
                c = R.add(a, b)
                d = R.multiply(a, b)
                e = R.exp(c)
                f = R.subtract(e, d)
                R.output(f)
            return f
