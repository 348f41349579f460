"""TopologicalSort (TVM's relax.transform.TopologicalSort): each order and direction, and a
CompareBeforeAfter subclass whose base names the transform as a method."""

import numpy as np

import minitvm
from minitvm import relax


def _module(order=("d", "c", "e", "f")):
    """main(a, b) = exp(a + b) - a * b, its four bindings emitted in ``order``."""
    bb = relax.BlockBuilder()
    a, b = (relax.Var(n, relax.TensorStructInfo((4,), "float32")) for n in "ab")
    with bb.function("main", [a, b]):
        with bb.dataflow():
            made = {}
            build = {"c": lambda: relax.op.add(a, b), "d": lambda: relax.op.multiply(a, b),
                     "e": lambda: relax.op.exp(made["c"]), "f": lambda: relax.op.subtract(made["e"], made["d"])}
            for name in order:
                made[name] = (bb.emit_output if name == "f" else bb.emit)(build[name](), name)
        bb.emit_func_output(made["f"])
    return bb.get()


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

    expected = _module(("c", "d", "e", "f"))
