"""MergeCompositeFunctions: neighbouring composite calls of one backend in one offloaded function."""

from __future__ import annotations

import pytest

import minitvm
from minitvm import relax
from minitvm.relax.dpl import is_op, wildcard
from minitvm.relax.transform import FuseOpsByPattern, MergeCompositeFunctions
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Chain:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w1: R.Tensor((8, 8), "float32"), w2: R.Tensor((8, 6), "float32")):
        with R.dataflow():
            lv = R.matmul(x, w1)
            h = R.nn.relu(lv)
            out = R.matmul(h, w2)
            R.output(out)
        return out


@I.ir_module
class ChainMerged:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w1: R.Tensor((8, 8), "float32"),
             w2: R.Tensor((8, 6), "float32")) -> R.Tensor((4, 6), "float32"):
        cls = ChainMerged
        with R.dataflow():
            out: R.Tensor((4, 6), "float32") = cls.fused_relax_matmul_relax_nn_relu_relax_matmul_ccompiler(x, w1, w2)
            R.output(out)
        return out

    @R.function
    def fused_relax_matmul_relax_nn_relu_relax_matmul_ccompiler(
            x: R.Tensor((4, 8), "float32"), w1: R.Tensor((8, 8), "float32"),
            w2: R.Tensor((8, 6), "float32")) -> R.Tensor((4, 6), "float32"):
        R.func_attr({"Codegen": "ccompiler",
                     "global_symbol": "fused_relax_matmul_relax_nn_relu_relax_matmul_ccompiler"})

        @R.function
        def relu_part(x_1: R.Tensor((4, 8), "float32"),
                      w1_1: R.Tensor((8, 8), "float32")) -> R.Tensor((4, 8), "float32"):
            R.func_attr({"Composite": "ccompiler.matmul_relu"})
            with R.dataflow():
                lv: R.Tensor((4, 8), "float32") = R.matmul(x_1, w1_1)
                gv: R.Tensor((4, 8), "float32") = R.nn.relu(lv)
                R.output(gv)
            return gv

        h: R.Tensor((4, 8), "float32") = relu_part(x, w1)

        @R.function
        def plain_part(h_1: R.Tensor((4, 8), "float32"),
                       w2_1: R.Tensor((8, 6), "float32")) -> R.Tensor((4, 6), "float32"):
            R.func_attr({"Composite": "ccompiler.matmul"})
            with R.dataflow():
                gv1: R.Tensor((4, 6), "float32") = R.matmul(h_1, w2_1)
                R.output(gv1)
            return gv1

        out: R.Tensor((4, 6), "float32") = plain_part(h, w2)
        return out


def test_chain_merges_into_one_function():
    fused = FuseOpsByPattern([
        ("ccompiler.matmul_relu", is_op("relax.nn.relu")(is_op("relax.matmul")(wildcard(), wildcard()))),
        ("ccompiler.matmul", is_op("relax.matmul")(wildcard(), wildcard())),
    ])(Chain)
    merged = MergeCompositeFunctions()(fused)
    minitvm.ir.assert_structural_equal(merged, ChainMerged)
    assert relax.analysis.well_formed(merged)
    minitvm.ir.assert_structural_equal(minitvm.script.from_source(merged.script()), merged)


def test_a_group_is_not_merged_through_another_backend():
    """relu [A] -> exp [not offloaded] -> gelu [A] -> add(relu, gelu) [A]: merging relu with the
    rest would make a cycle through exp, so A gets two functions: {relu} and {gelu, add}."""

    @I.ir_module
    class Diamond:
        @R.function
        def main(x: R.Tensor((10,), "float32")):
            with R.dataflow():
                a = R.nn.relu(x)
                b = R.exp(a)
                c = R.nn.gelu(b)
                out = R.add(a, c)
                R.output(out)
            return out

    patterns = [("compiler_A.relu", is_op("relax.nn.relu")(wildcard())),
                ("compiler_A.gelu", is_op("relax.nn.gelu")(wildcard())),
                ("compiler_A.add", is_op("relax.add")(wildcard(), wildcard()))]
    merged = MergeCompositeFunctions()(FuseOpsByPattern(patterns)(Diamond))
    assert relax.analysis.well_formed(merged)
    offloaded = {gv.name_hint: f for gv, f in merged.functions.items() if "Codegen" in f.attrs}
    assert sorted(offloaded) == ["fused_relax_nn_gelu_relax_add_compiler_A", "fused_relax_nn_relu1_compiler_A"]
    for name, func in offloaded.items():
        assert func.attrs["global_symbol"] == name and "Primitive" not in func.attrs
    locals_ = [b.value.attrs["Composite"] for b in offloaded["fused_relax_nn_gelu_relax_add_compiler_A"].body.blocks[0]
               .bindings if isinstance(b.value, relax.Function)]
    assert locals_ == ["compiler_A.gelu", "compiler_A.add"]
    # no composite function is left at module level; main keeps the exp between the two
    assert sorted(gv.name_hint for gv in merged.functions) == sorted([*offloaded, "main"])
    main_ops = [b.value.op.name for b in merged["main"].body.blocks[0].bindings
                if isinstance(b.value.op, minitvm.ir.Op)]
    assert main_ops == ["relax.exp"]


def test_needs_main():
    mod = minitvm.IRModule({"forward": Chain["main"]})
    with pytest.raises(ValueError, match="'main'"):
        MergeCompositeFunctions()(mod)
