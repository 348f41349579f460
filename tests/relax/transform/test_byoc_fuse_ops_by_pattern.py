"""FuseOpsByPattern and the BYOC pattern registry, against expected IR (as TVM's own tests do)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.relax.backend import get_pattern, get_patterns_with_prefix, pattern_registry, register_patterns
from minitvm.relax.backend.patterns import make_matmul_pattern
from minitvm.relax.dpl import is_op, make_fused_bias_activation_pattern, wildcard
from minitvm.relax.transform import FuseOpsByPattern, FusionPattern, PatternCheckContext
from minitvm.script import ir as I
from minitvm.script import relax as R

MATMUL_RELU = make_fused_bias_activation_pattern("relax.matmul", activation="relax.nn.relu")
MATMUL = make_fused_bias_activation_pattern("relax.matmul")


@I.ir_module
class TwoLayers:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w1: R.Tensor((8, 8), "float32"), w2: R.Tensor((8, 6), "float32")):
        with R.dataflow():
            lv = R.matmul(x, w1)
            h = R.nn.relu(lv)
            lv1 = R.matmul(h, w2)
            out = R.nn.relu(lv1)
            R.output(out)
        return out


@I.ir_module
class TwoLayersPartitioned:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w1: R.Tensor((8, 8), "float32"),
             w2: R.Tensor((8, 6), "float32")) -> R.Tensor((4, 6), "float32"):
        cls = TwoLayersPartitioned
        with R.dataflow():
            h: R.Tensor((4, 8), "float32") = cls.fused_relax_matmul_relax_nn_relu(x, w1)
            out: R.Tensor((4, 6), "float32") = cls.fused_relax_matmul_relax_nn_relu1(h, w2)
            R.output(out)
        return out

    @R.function(private=True)
    def fused_relax_matmul_relax_nn_relu(x: R.Tensor((4, 8), "float32"),
                                         w1: R.Tensor((8, 8), "float32")) -> R.Tensor((4, 8), "float32"):
        R.func_attr({"Composite": "ccompiler.matmul_relu", "Primitive": True})
        with R.dataflow():
            lv: R.Tensor((4, 8), "float32") = R.matmul(x, w1)
            gv: R.Tensor((4, 8), "float32") = R.nn.relu(lv)
            R.output(gv)
        return gv

    @R.function(private=True)
    def fused_relax_matmul_relax_nn_relu1(h: R.Tensor((4, 8), "float32"),
                                          w2: R.Tensor((8, 6), "float32")) -> R.Tensor((4, 6), "float32"):
        R.func_attr({"Composite": "ccompiler.matmul_relu", "Primitive": True})
        with R.dataflow():
            lv1: R.Tensor((4, 6), "float32") = R.matmul(h, w2)
            gv1: R.Tensor((4, 6), "float32") = R.nn.relu(lv1)
            R.output(gv1)
        return gv1


@I.ir_module
class OneLayer:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 6), "float32")):
        with R.dataflow():
            lv = R.matmul(x, w)
            out = R.nn.relu(lv)
            R.output(out)
        return out


@I.ir_module
class OneLayerAnnotated:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 6), "float32")) -> R.Tensor((4, 6), "float32"):
        cls = OneLayerAnnotated
        with R.dataflow():
            out: R.Tensor((4, 6), "float32") = cls.fused_relax_matmul_relax_nn_relu_ccompiler(x, w)
            R.output(out)
        return out

    @R.function
    def fused_relax_matmul_relax_nn_relu_ccompiler(x: R.Tensor((4, 8), "float32"),
                                                   w: R.Tensor((8, 6), "float32")) -> R.Tensor((4, 6), "float32"):
        R.func_attr({"Codegen": "ccompiler", "global_symbol": "fused_relax_matmul_relax_nn_relu_ccompiler"})

        @R.function
        def local_func(x_1: R.Tensor((4, 8), "float32"),
                       w_1: R.Tensor((8, 6), "float32")) -> R.Tensor((4, 6), "float32"):
            R.func_attr({"Composite": "ccompiler.matmul_relu"})
            with R.dataflow():
                lv: R.Tensor((4, 6), "float32") = R.matmul(x_1, w_1)
                gv: R.Tensor((4, 6), "float32") = R.nn.relu(lv)
                R.output(gv)
            return gv

        output: R.Tensor((4, 6), "float32") = local_func(x, w)
        return output


def test_partition_matches_expected_ir():
    after = FuseOpsByPattern([("ccompiler.matmul_relu", MATMUL_RELU)])(TwoLayers)
    minitvm.ir.assert_structural_equal(after, TwoLayersPartitioned)
    assert relax.analysis.well_formed(after)


def test_earlier_pattern_has_priority():
    """matmul first: each matmul is a composite of its own and the relus stay in main."""
    after = FuseOpsByPattern([("ccompiler.matmul", MATMUL), ("ccompiler.matmul_relu", MATMUL_RELU)])(TwoLayers)
    composites = sorted(f.attrs["Composite"] for f in after.functions.values() if "Composite" in f.attrs)
    assert composites == ["ccompiler.matmul", "ccompiler.matmul"]
    relus = [b for b in after["main"].body.blocks[0].bindings
             if isinstance(b.value, relax.Call) and b.value.op == minitvm.ir.Op.get("relax.nn.relu")]
    assert len(relus) == 2


def test_annotate_codegen_matches_expected_ir_and_round_trips():
    after = FuseOpsByPattern([("ccompiler.matmul_relu", MATMUL_RELU)], annotate_codegen=True)(OneLayer)
    minitvm.ir.assert_structural_equal(after, OneLayerAnnotated)
    text = after.script()
    assert 'R.func_attr({"Codegen": "ccompiler"})' in text and '"Composite": "ccompiler.matmul_relu"' in text
    minitvm.ir.assert_structural_equal(minitvm.script.from_source(text), after)
    # a second run finds nothing more to do
    again = FuseOpsByPattern([("ccompiler.matmul_relu", MATMUL_RELU)], annotate_codegen=True)(after)
    minitvm.ir.assert_structural_equal(again, OneLayerAnnotated)


def test_check_function_sees_the_match_and_can_refuse():
    lhs, rhs = wildcard(), wildcard()
    root = is_op("relax.matmul")(lhs, rhs)
    pattern = is_op("relax.nn.relu")(root)
    seen: list[PatternCheckContext] = []

    def refuse(context: PatternCheckContext) -> bool:
        seen.append(context)
        return False

    after = FuseOpsByPattern([("ccompiler.matmul_relu", pattern, {"lhs": lhs, "rhs": rhs, "root": root}, refuse)])(
        OneLayer)
    minitvm.ir.assert_structural_equal(after, OneLayer)  # refused: nothing fused
    (context,) = seen
    assert context.matched_expr.op == minitvm.ir.Op.get("relax.nn.relu")
    assert context.annotated_expr["lhs"].name_hint == "x" and context.annotated_expr["rhs"].name_hint == "w"
    assert context.annotated_expr["root"].op == minitvm.ir.Op.get("relax.matmul")
    assert sorted(v.name_hint for v in context.matched_bindings) == ["lv", "out"]
    lv = next(v for v in context.matched_bindings if v.name_hint == "lv")
    assert [u.name_hint for u in context.var_usages[lv]] == ["out"]
    assert context.value_to_bound_var[context.matched_expr].name_hint == "out"


def test_attrs_getter_adds_attributes_to_the_composite():
    lhs = wildcard()
    pattern = is_op("relax.nn.relu")(is_op("relax.matmul")(lhs, wildcard()))
    getter = lambda annotated: {"lhs_rows": str(int(annotated["lhs"].struct_info.shape.values[0]))}  # noqa: E731
    after = FuseOpsByPattern([FusionPattern("ccompiler.matmul_relu", pattern, {"lhs": lhs}, None, getter)])(OneLayer)
    (fused,) = [f for f in after.functions.values() if "Composite" in f.attrs]
    assert fused.attrs["lhs_rows"] == "4" and fused.attrs["Composite"] == "ccompiler.matmul_relu"


def test_ccompiler_check_keeps_what_c_cannot_compute_in_relax():
    @I.ir_module
    class Mixed:
        @R.function
        def main(x: R.Tensor((2, 4, 8), "float32"), w: R.Tensor((8, 6), "float32"), y: R.Tensor((4, 8), "float32"),
                 b: R.Tensor((6,), "float32")):
            with R.dataflow():
                batched = R.matmul(x, w)  # 3-D: refused
                mm = R.matmul(y, w)
                biased = R.add(mm, b)
                out = R.add(R.sum(batched, axis=[0]), mm)  # mm read outside matmul_bias: only the matmul goes
                R.output(out, biased)
            return (out, biased)

    after = FuseOpsByPattern(get_patterns_with_prefix("ccompiler"))(Mixed)
    composites = {f.attrs["Composite"] for f in after.functions.values() if "Composite" in f.attrs}
    assert composites == {"ccompiler.matmul"}
    main_ops = [b.value.op.name for b in after["main"].body.blocks[0].bindings if isinstance(b.value.op, minitvm.ir.Op)]
    assert main_ops.count("relax.matmul") == 1 and "relax.add" in main_ops


def test_bind_constants_false_makes_constants_parameters():
    weight = np.random.default_rng(0).standard_normal((8, 6)).astype("float32")
    mod = relax.transform.BindParams("main", {"w": weight})(OneLayer)
    for bind, n_params in ((True, 1), (False, 2)):
        after = FuseOpsByPattern([("ccompiler.matmul_relu", MATMUL_RELU)], bind_constants=bind)(mod)
        (fused,) = [f for f in after.functions.values() if "Composite" in f.attrs]
        assert len(fused.params) == n_params
    assert fused.params[1].name_hint == "param_0"


def test_cyclic_group_is_an_error():
    @I.ir_module
    class Branch:
        @R.function
        def main(x: R.Tensor((4, 4), "float32"), w: R.Tensor((4, 4), "float32")):
            with R.dataflow():
                mm = R.matmul(x, w)
                relu = R.nn.relu(mm)
                side = R.exp(mm)
                out = R.add(relu, side)
                R.output(out)
            return out

    pattern = is_op("relax.add")(is_op("relax.nn.relu")(is_op("relax.matmul")(wildcard(), wildcard())), wildcard())
    with pytest.raises(RuntimeError, match="A cyclic dependency detected"):
        FuseOpsByPattern([("ccompiler.bad", pattern)])(Branch)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="invalid pattern"):
        FuseOpsByPattern([MATMUL])
    with pytest.raises(TypeError, match="relax.dpl pattern"):
        FusionPattern("ccompiler.x", "relax.matmul")
    with pytest.raises(ValueError, match="codegen name and a dot"):
        FuseOpsByPattern([("nodot", MATMUL_RELU)], annotate_codegen=True)(OneLayer)
    with pytest.raises(ValueError, match="entry function 'missing'"):
        FuseOpsByPattern([("ccompiler.x", MATMUL_RELU)], entry_functions=["missing"])(OneLayer)


def test_registry_orders_by_priority():
    pattern, annotations = make_matmul_pattern()
    register_patterns([("testbyoc.small", pattern, annotations), FusionPattern("testbyoc.large", MATMUL_RELU)])
    try:
        assert [p.name for p in get_patterns_with_prefix("testbyoc")] == ["testbyoc.large", "testbyoc.small"]
        assert get_pattern("testbyoc.small").annotation_patterns["root"] is annotations["root"]
        assert get_pattern("testbyoc.none") is None
        with pytest.raises(TypeError, match="cannot register"):
            register_patterns(["testbyoc.str"])
    finally:
        pattern_registry.remove_patterns(["testbyoc.small", "testbyoc.large"])
    assert get_patterns_with_prefix("testbyoc") == []
    # the example backend registered its patterns, the largest first
    names = [p.name for p in get_patterns_with_prefix("ccompiler")]
    assert names.index("ccompiler.matmul_bias_relu") < names.index("ccompiler.matmul")
