"""RunCodegen end to end: the ccompiler backend's C, compiled by gcc, run by the VM against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.relax.backend import get_patterns_with_prefix
from minitvm.relax.dpl import is_op, wildcard
from minitvm.relax.transform import FuseOpsByPattern, MergeCompositeFunctions, RunCodegen
from minitvm.runtime.module import Module
from minitvm.runtime.registry import register_func, remove_global_func
from minitvm.script import ir as I
from minitvm.script import relax as R

RNG = np.random.default_rng(7)


@I.ir_module
class MLP:
    @R.function
    def main(x: R.Tensor((8, 16), "float32"), w1: R.Tensor((16, 32), "float32"), b1: R.Tensor((32,), "float32"),
             w2: R.Tensor((10, 32), "float32"), b2: R.Tensor((1, 10), "float32")):
        with R.dataflow():
            lv = R.matmul(x, w1)
            lv1 = R.add(lv, b1)
            h = R.nn.relu(lv1)
            lv2 = R.matmul(h, R.permute_dims(w2))
            lv3 = R.add(b2, lv2)
            out = R.nn.softmax(lv3, axis=-1)  # no ccompiler pattern: compiled by minitvm
            R.output(out)
        return out


def _data():
    shapes = [(8, 16), (16, 32), (32,), (10, 32), (1, 10)]
    return [RNG.standard_normal(s).astype("float32") for s in shapes]


def _reference(x, w1, b1, w2, b2):
    z = np.maximum(x @ w1 + b1, 0) @ w2.T + b2
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _run(mod, args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), minitvm.cpu())
    return vm["main"](*[minitvm.nd.array(a) for a in args]).numpy()


def test_annotate_codegen_path_matches_numpy():
    mod = FuseOpsByPattern(get_patterns_with_prefix("ccompiler"), annotate_codegen=True)(MLP)
    mod = RunCodegen()(mod)
    calls = [b.value for b in mod["main"].body.blocks[0].bindings
             if isinstance(b.value, relax.Call) and b.value.op == minitvm.ir.Op.get("relax.call_dps_packed")]
    assert [c.args[0].global_symbol for c in calls] == [
        "fused_relax_matmul_relax_add_relax_nn_relu_ccompiler",
        "fused_relax_permute_dims_relax_matmul_relax_add_ccompiler"]
    assert list(mod.keys()) == ["main"]  # the offloaded functions left with their code
    (ext,) = mod.attrs["external_mods"]
    assert "ccompiler_gemm(" in ext.get_source() and ext.type_key == "c"
    args = _data()
    np.testing.assert_allclose(_run(mod, args), _reference(*args), rtol=1e-5, atol=1e-6)


def test_merge_path_with_bound_weights_matches_numpy():
    x, w1, b1, w2, b2 = _data()
    mod = relax.transform.BindParams("main", {"w1": w1, "b1": b1, "w2": w2, "b2": b2})(MLP)
    mod = FuseOpsByPattern(get_patterns_with_prefix("ccompiler"))(mod)
    mod = MergeCompositeFunctions()(mod)
    offloaded = [f for f in mod.functions.values() if "Codegen" in f.attrs]
    assert len(offloaded) == 1  # both products in one function
    mod = RunCodegen()(mod)
    assert len(mod.attrs["const_name_to_constant"]) == 4  # the weights went into the C function's arguments
    np.testing.assert_allclose(_run(mod, [x]), _reference(x, w1, b1, w2, b2), rtol=1e-5, atol=1e-6)


def test_registered_codegen_gets_functions_options_and_constants():
    seen = {}

    def fake_codegen(functions, options, constant_names):
        seen.update(symbols=[f.attrs["global_symbol"] for f in functions], options=options,
                    constants=sorted(constant_names.values()))

        def exp_plus_one(a, out):  # the function's meaning, in numpy
            out.copyfrom(np.exp(a.numpy()) + 1)

        return [Module({seen["symbols"][0]: exp_plus_one})]

    @I.ir_module
    class Exp:
        @R.function
        def main(x: R.Tensor((3, 4), "float32")):
            with R.dataflow():
                out = R.add(R.exp(x), R.const(1.0, "float32"))
                R.output(out)
            return out

    register_func("relax.ext.testbyoc", fake_codegen, override=True)
    try:
        pattern = is_op("relax.add")(is_op("relax.exp")(wildcard()), wildcard())
        mod = FuseOpsByPattern([("testbyoc.exp_add", pattern)], annotate_codegen=True)(Exp)
        mod = RunCodegen(target_options={"testbyoc": {"level": 3}})(mod)
    finally:
        remove_global_func("relax.ext.testbyoc")
    assert seen == {"symbols": ["fused_relax_exp_relax_add_testbyoc"], "options": {"level": 3},
                    "constants": ["fused_relax_exp_relax_add_testbyoc_testbyoc_const_0"]}
    x = RNG.standard_normal((3, 4)).astype("float32")
    np.testing.assert_allclose(_run(mod, [x]), np.exp(x) + 1, rtol=1e-6)


def test_unknown_codegen_is_a_clear_error():
    pattern = is_op("relax.matmul")(wildcard(), wildcard())
    mod = FuseOpsByPattern([("nosuchbackend.matmul", pattern)], annotate_codegen=True)(MLP)
    with pytest.raises(ValueError, match=r"no codegen registered for 'nosuchbackend'.*'relax.ext.nosuchbackend'"):
        RunCodegen()(mod)


def test_unsupported_target_option_is_named():
    mod = FuseOpsByPattern(get_patterns_with_prefix("ccompiler"), annotate_codegen=True)(MLP)
    with pytest.raises(NotImplementedError, match="target option.*unroll"):
        RunCodegen(target_options={"ccompiler": {"unroll": 4}})(mod)
