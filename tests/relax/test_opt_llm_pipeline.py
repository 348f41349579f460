"""TVM's optimize_llm.py pipeline (its pass list, less the dlight line) through ``minitvm.compile``:
a pipeline that does the VM lowering itself is not lowered again, as a user Pass and as a
registered name, on a model with a symbolic row count run at two sizes against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.relax.vm_build import is_vm_lowered
from minitvm.runtime.module import Module
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


@I.ir_module
class MLP:
    @R.function
    def main(x: R.Tensor(("n", 16), "float32"), w0: R.Tensor((32, 16), "float32"), b0: R.Tensor((32,), "float32"),
             w1: R.Tensor((8, 32), "float32")):
        n = T.int64()
        with R.dataflow():
            h = R.nn.relu(R.add(R.matmul(x, R.permute_dims(w0)), b0))
            r = R.reshape(R.reshape(h, R.shape([n, 4, 8])), R.shape([n, 32]))  # views, after RewriteDataflowReshape
            y = R.nn.softmax(R.matmul(r, R.permute_dims(w1)), axis=-1)
            R.output(y)
        return y


def tutorial_passes(ext_mods=None) -> list:
    """optimize_llm.py's list, in its order, without ``dlight.ApplyDefaultSchedule(...)``."""
    t = relax.transform
    return [t.FuseTransposeMatmul(), t.LegalizeOps(), t.AnnotateTIROpPattern(), t.FoldConstant(), t.FuseOps(),
            t.FuseTIR(), t.DeadCodeElimination(), t.RewriteDataflowReshape(), t.ToNonDataflow(),
            t.RemovePurityChecking(), t.CallTIRRewrite(), t.StaticPlanBlockMemory(), t.RewriteCUDAGraph(),
            t.LowerAllocTensor(), t.KillAfterLastUse(), t.LowerRuntimeBuiltin(), t.VMShapeLower(),
            t.AttachGlobalSymbol(), t.AttachExternModules(ext_mods or [])]


def _tutorial_pipeline(ext_mods=None) -> minitvm.transform.Pass:
    # the tutorial's shape: a module pass running a Sequential
    @minitvm.transform.module_pass(opt_level=0)
    def _pipeline(mod: minitvm.IRModule, _ctx: minitvm.transform.PassContext) -> minitvm.IRModule:
        return minitvm.transform.Sequential(tutorial_passes(ext_mods))(mod)

    return _pipeline


def _reference(x, w0, b0, w1):
    y = np.maximum(x @ w0.T + b0, 0) @ w1.T
    e = np.exp(y - y.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _check_two_sizes(ex) -> None:
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    rng = np.random.default_rng(7)
    w0, b0, w1 = (rng.standard_normal(s).astype("float32") for s in ((32, 16), (32,), (8, 32)))
    for n in (3, 11):
        x = rng.standard_normal((n, 16)).astype("float32")
        got = vm["main"](*(minitvm.nd.array(a) for a in (x, w0, b0, w1))).numpy()
        assert got.shape == (n, 8)
        np.testing.assert_allclose(got, _reference(x, w0, b0, w1), rtol=1e-5, atol=1e-6)


def _count(text: str, name: str) -> int:
    return sum(1 for line in text.splitlines() if f"call  {name} " in line)


def test_tutorial_pipeline_as_a_pass_is_not_lowered_twice():
    lowered = _tutorial_pipeline()(MLP)
    assert is_vm_lowered(lowered) and not is_vm_lowered(MLP)
    ex = minitvm.compile(MLP, "llvm", relax_pipeline=_tutorial_pipeline())
    # what was compiled is the pipeline's output, untouched by relax.build's own lowering
    minitvm.ir.assert_structural_equal(ex.ir_module, lowered)
    text = ex.as_text()
    assert _count(text, "vm.builtin.alloc_shape_heap") == 1  # VMShapeLower ran once
    assert _count(text, "vm.builtin.reshape") == 2  # the reshape kernels became views
    assert _count(text, "vm.builtin.null_value") >= 5  # the kills empty registers
    _check_two_sizes(ex)


def test_tutorial_pipeline_registered_by_name():
    name = "opt_llm_test_pipeline"

    @relax.register_pipeline(name)
    def _pipeline(ext_mods=None):
        return _tutorial_pipeline(ext_mods)

    try:
        with pytest.raises(ValueError, match="already registered"):
            relax.register_pipeline(name)
        target = minitvm.target.Target("llvm")
        with target:
            ex = minitvm.compile(MLP, target, relax_pipeline=relax.get_pipeline(name))
        _check_two_sizes(ex)
        _check_two_sizes(minitvm.compile(MLP, "llvm", relax_pipeline=name, exec_mode="bytecode"))
    finally:
        relax.pipeline._PIPELINES.pop(name, None)


@pytest.mark.parametrize("name", ["zero", "default"])
def test_builtin_pipelines_still_compile(name):
    _check_two_sizes(minitvm.compile(MLP, "llvm", relax_pipeline=relax.get_pipeline(name)))


def test_external_module_functions_are_found_by_the_vm():
    def double(x, out):  # destination-passing style, as an nn.ExternModule's functions
        out.copyfrom(x.numpy() * 2)

    class Ext:  # what nn.ExternModule offers the pass: load() -> a runtime Module
        def load(self):
            return Module({"ext_double": double})

    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            with R.dataflow():
                y = R.call_dps_packed("ext_double", (x,), out_sinfo=R.Tensor((4,), "float32"))
                z = R.add(y, x)
                R.output(z)
            return z

    ex = minitvm.compile(Mod, "llvm", relax_pipeline=_tutorial_pipeline([Ext()]))
    x = np.random.default_rng(3).standard_normal(4).astype("float32")
    got = relax.VirtualMachine(ex, minitvm.cpu())["main"](minitvm.nd.array(x)).numpy()
    np.testing.assert_allclose(got, 3 * x, rtol=1e-6)
    with pytest.raises(TypeError, match="AttachExternModules: expected an nn.ExternModule"):
        relax.transform.AttachExternModules([object()])(Mod)


def test_static_model_keeps_its_native_entry_with_the_kills():
    @I.ir_module
    class Static:
        @R.function
        def main(x: R.Tensor((2, 16), "float32"), w0: R.Tensor((32, 16), "float32"),
                 w1: R.Tensor((8, 32), "float32")):
            with R.dataflow():
                h = R.nn.relu(R.matmul(x, R.permute_dims(w0)))
                y = R.nn.softmax(R.matmul(h, R.permute_dims(w1)), axis=-1)
                R.output(y)
            return y

    ex = minitvm.compile(Static, "llvm", relax_pipeline=_tutorial_pipeline())
    assert _count(ex.as_text(), "vm.builtin.null_value") >= 3
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    assert "main" in vm.native_entries  # a kill is a register write the native entry plans through
    rng = np.random.default_rng(9)
    x, w0, w1 = (rng.standard_normal(s).astype("float32") for s in ((2, 16), (32, 16), (8, 32)))
    got = vm["main"](*(minitvm.nd.array(a) for a in (x, w0, w1))).numpy()
    np.testing.assert_allclose(got, _reference(x, w0, np.zeros(32, "float32"), w1), rtol=1e-5, atol=1e-6)


def test_a_pipeline_that_lowers_part_of_the_way_is_finished_by_build():
    t = relax.transform
    part = minitvm.transform.Sequential(tutorial_passes()[:11])  # up to CallTIRRewrite
    assert not is_vm_lowered(part(MLP))
    _check_two_sizes(minitvm.compile(MLP, "llvm", relax_pipeline=part))
    # up to the kills and LowerRuntimeBuiltin: build adds VMShapeLower
    more = minitvm.transform.Sequential([*tutorial_passes()[:15], t.LowerRuntimeBuiltin()])
    _check_two_sizes(minitvm.compile(MLP, "llvm", relax_pipeline=more))
