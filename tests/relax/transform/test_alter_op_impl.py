"""AlterOpImpl: a kernel swapped for one working in another layout computes the same numbers
(seeded random inputs through the VM), the layout transforms around it included."""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


@I.ir_module
class Before:
    @T.prim_func(private=True)
    def mul_add(a: T.Buffer((14,), "float32"), b: T.Buffer((14,), "float32"), out: T.Buffer((14,), "float32")):
        T.func_attr({"operator_name": "mul_add"})
        for i in range(14):
            with T.block("T"):
                vi = T.axis.spatial(14, i)
                out[vi] = a[vi] * b[vi] + a[vi]

    @R.function
    def main(x: R.Tensor((14,), "float32"), y: R.Tensor((14,), "float32")) -> R.Tensor((14,), "float32"):
        cls = Before
        with R.dataflow():
            gv = R.call_tir(cls.mul_add, (x, y), out_sinfo=R.Tensor((14,), "float32"))
            R.output(gv)
        return gv


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
    after = relax.transform.AlterOpImpl({"mul_add": mul_add_2d}, {"mul_add": [blocked] * 3})(Before)
    names = {gv.name_hint for gv in after.functions}
    assert {"mul_add_replacement", "remove_pad"} <= names
    assert after["mul_add_replacement"].attrs["operator_name"] == "mul_add"
    rng = np.random.default_rng(36)
    x, y = rng.standard_normal(14).astype("float32"), rng.standard_normal(14).astype("float32")
    np.testing.assert_allclose(_run(after, [x, y]), x * y + x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_run(Before, [x, y]), x * y + x, rtol=1e-5, atol=1e-6)


def test_optimize_layout_transform_drops_the_round_trip_between_two_kernels():
    @I.ir_module
    class Chain:
        @T.prim_func(private=True)
        def mul_add(a: T.Buffer((16,), "float32"), b: T.Buffer((16,), "float32"), out: T.Buffer((16,), "float32")):
            T.func_attr({"operator_name": "mul_add"})
            for i in range(16):
                with T.block("T"):
                    vi = T.axis.spatial(16, i)
                    out[vi] = a[vi] * b[vi] + a[vi]

        @R.function
        def main(x: R.Tensor((16,), "float32"), y: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
            cls = Chain
            with R.dataflow():
                a = R.call_tir(cls.mul_add, (x, y), out_sinfo=R.Tensor((16,), "float32"))
                gv = R.call_tir(cls.mul_add, (a, y), out_sinfo=R.Tensor((16,), "float32"))
                R.output(gv)
            return gv

    blocked = lambda i: (i // 4, i % 4)  # noqa: E731
    altered = relax.transform.AlterOpImpl({"mul_add": mul_add_2d}, {"mul_add": [blocked] * 3})(Chain)
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
