"""AlterOpImpl: a kernel swapped for one working in another layout computes the same numbers
(seeded random inputs through the VM), the layout transforms around it included."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax, te
from minitvm.script import tir as T


def _module(n, uses):
    """main(x, y): ``uses`` chained calls of an ``n``-element kernel a * b + a named mul_add."""
    x, y = (relax.Var(name, relax.TensorStructInfo((n,), "float32")) for name in "xy")
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = x
            for _ in range(uses):
                a = bb.emit_te(lambda p, q: te.compute((n,), lambda i: p[i] * q[i] + p[i], name="T"), a, y,
                               primfunc_name_hint="mul_add", primfunc_attrs={"operator_name": "mul_add"})
            gv = bb.emit_output(a)
        bb.emit_func_output(gv)
    return bb.get()


@T.prim_func(private=True)
def mul_add_2d(a: T.Buffer((T.int64(4), T.int64(4)), "float32"), b: T.Buffer((T.int64(4), T.int64(4)), "float32"),
               out: T.Buffer((T.int64(4), T.int64(4)), "float32")):
    # int64 extents, as the layout_transform kernels around it have (FuseTIR wants one dtype)
    for i, j in T.grid(T.int64(4), T.int64(4)):
        with T.block("T"):
            vi, vj = T.axis.remap("SS", [i, j])
            out[vi, vj] = a[vi, vj] * b[vi, vj] + a[vi, vj]


def _run(mod, arrays):
    vm = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    return vm["main"](*(minitvm.nd.array(a) for a in arrays)).numpy()


def test_padded_layout_replacement_computes_the_same():
    blocked = lambda i: (i // 4, i % 4)  # noqa: E731 - 14 elements padded to 16
    before = _module(14, 1)
    after = relax.transform.AlterOpImpl({"mul_add": mul_add_2d}, {"mul_add": [blocked] * 3})(before)
    names = {gv.name_hint for gv in after.functions}
    assert {"mul_add_replacement", "remove_pad"} <= names
    assert after["mul_add_replacement"].attrs["operator_name"] == "mul_add"
    rng = np.random.default_rng(36)
    x, y = rng.standard_normal(14).astype("float32"), rng.standard_normal(14).astype("float32")
    np.testing.assert_allclose(_run(after, [x, y]), x * y + x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_run(before, [x, y]), x * y + x, rtol=1e-5, atol=1e-6)


def test_optimize_layout_transform_drops_the_round_trip_between_two_kernels():
    blocked = lambda i: (i // 4, i % 4)  # noqa: E731
    altered = relax.transform.AlterOpImpl({"mul_add": mul_add_2d}, {"mul_add": [blocked] * 3})(_module(16, 2))
    after = relax.transform.OptimizeLayoutTransform()(altered)

    def transforms(mod):
        return sum(1 for b in mod["main"].body.blocks[0].bindings
                   if isinstance(b.value, relax.Call) and getattr(b.value.op, "name", "") == "relax.layout_transform")

    # in: x, y, y again for the second kernel; out: back after each kernel.  After: the back-and-forth
    # between the kernels is gone and the two equal transforms of y are bound once
    assert transforms(altered) == 6 and transforms(after) == 3
    rng = np.random.default_rng(37)
    x, y = rng.standard_normal(16).astype("float32"), rng.standard_normal(16).astype("float32")
    first = x * y + x
    np.testing.assert_allclose(_run(after, [x, y]), first * y + first, rtol=1e-5, atol=1e-6)
