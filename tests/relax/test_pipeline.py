"""relax.get_pipeline: the zero pipeline is TVM's (legalize + fusion); relax.build / minitvm.compile
lower to the VM after whatever pipeline ran."""


import re

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.testing.nn_models import export_quick_start_mlp

LOWERING = ["RewriteDataflowReshape", "ToNonDataflow", "CallTIRRewrite", "StaticPlanBlockMemory", "VMBuiltinLower",
            "VMShapeLower"]


def _names(pipeline):
    return [p.info.name for p in pipeline.passes]


def _mlp_inputs(spec, batch=1, seed=5):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, 784)).astype("float32")
    params = [(rng.standard_normal(tuple(int(s) for s in p.shape)) * 0.1).astype("float32") for _, p in spec]
    w1, b1, w2, b2 = params
    return x, params, np.maximum(x @ w1.T + b1, 0) @ w2.T + b2


def _run(ex, x, params):
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    return vm["forward"](minitvm.nd.array(x), *[minitvm.nd.array(p) for p in params]).numpy()


def test_the_named_pipelines_stop_before_the_vm_lowering():
    assert _names(relax.get_pipeline("zero")) == ["LegalizeOps", "AnnotateTIROpPattern", "FoldConstant",
                                                  "FuseOps", "FuseTIR"]
    default = _names(relax.get_pipeline("default"))
    rewrites = [p.info.name for p in relax.pipeline.graph_rewrite_passes()]
    assert "FoldInferenceBatchnormToConv2D" in rewrites
    assert default[:len(rewrites) + 2] == [*rewrites, "FuseTransposeMatmul", "DeadCodeElimination"]
    # the default schedules, between the passes that pack a weight once at compile time
    assert default[-5:] == ["AttachAttrLayoutFreeBuffers", "DefaultCPUSchedule", "SplitLayoutRewritePreproc",
                            "FoldConstant", "DeadCodeElimination"] and "FuseTIR" in default
    assert not set(default) & set(LOWERING) and _names(relax.get_pipeline("default_build")) == default
    # the lowering relax.build runs, in TVM's two stages
    assert [p.info.name for p in relax.pipeline.vm_lowering_passes()] == LOWERING
    assert [p.info.name for p in relax.pipeline.dataflow_lower_passes()] == LOWERING[:3]
    assert [p.info.name for p in relax.pipeline.finalize_passes()] == LOWERING[3:]


def test_zero_pipeline_takes_tvms_keyword_only():
    assert relax.get_pipeline("zero", enable_warning=True).passes[0].info.name == "LegalizeOps"
    with pytest.raises(TypeError):
        relax.get_pipeline("zero", database="tuning_logs")


def test_zero_pipeline_applies_the_tuning_database_in_scope():
    """As TVM's zero pipeline: with a database in scope, each kernel it has a record of is replaced
    by the tuned one (found through the low-floor hook; relax does not import meta_schedule)."""
    from minitvm.transform import tuning_database

    asked = []

    class FakeDatabase:  # answers every workload with itself, marked
        def query_ir_module(self, workload, target, workload_name):
            asked.append(workload["main"].attrs["global_symbol"])
            return minitvm.IRModule({"main": workload["main"].with_attr("from_database", True)})

    mod, _ = export_quick_start_mlp(1)
    plain = relax.get_pipeline("zero")(mod)
    db = FakeDatabase()
    tuning_database.enter(db)
    try:
        tuned = relax.get_pipeline("zero")(mod)
    finally:
        tuning_database.exit(db)
    kernels = {gv.name_hint: f for gv, f in tuned.items() if isinstance(f, minitvm.tir.PrimFunc)}
    assert kernels and set(asked) == {"main"}
    for name, f in kernels.items():
        assert f.attrs["from_database"] and f.attrs["tir.is_scheduled"]
        assert f.attrs.get("global_symbol") == plain[name].attrs.get("global_symbol")


def test_compile_lowers_what_the_zero_pipeline_leaves():
    mod, spec = export_quick_start_mlp(1)
    fused = relax.get_pipeline("zero")(mod)
    x, params, want = _mlp_inputs(spec)
    for ex in (minitvm.compile(fused, "llvm"),  # default pipeline again: nothing left to fuse
               minitvm.compile(fused, "llvm", relax_pipeline=None),
               relax.build(fused, "llvm", relax_pipeline=None)):
        np.testing.assert_allclose(_run(ex, x, params), want, rtol=1e-4, atol=1e-4)
    # fusing a fused module again changes nothing: the same kernels reach the VM
    ex = minitvm.compile(fused, "llvm")
    assert sorted(gv.name_hint for gv in ex.ir_module.get_global_vars()) == [
        "forward", "fused_matmul1_add1", "fused_matmul_add_relu", "transpose", "transpose1"]
    assert "alloc_storage" in ex.ir_module["forward"].script()


def test_compile_of_a_module_lowered_by_hand_lowers_nothing_twice():
    mod, spec = export_quick_start_mlp(1)
    fused = relax.get_pipeline("zero")(mod)
    lowered = minitvm.transform.Sequential(relax.pipeline.vm_lowering_passes())(fused)
    ex = relax.build(lowered, "llvm", relax_pipeline=None)
    assert minitvm.ir.structural_equal(ex.ir_module, lowered)
    assert ex.as_text() == relax.build(fused, "llvm", relax_pipeline=None).as_text()
    x, params, want = _mlp_inputs(spec, seed=8)
    np.testing.assert_allclose(_run(ex, x, params), want, rtol=1e-4, atol=1e-4)


def test_default_pipeline_on_a_raw_module_and_the_executable_saves(tmp_path):
    mod, spec = export_quick_start_mlp(4)
    ex = minitvm.compile(mod, minitvm.target.Target("llvm"))
    x, params, want = _mlp_inputs(spec, batch=4, seed=9)
    np.testing.assert_allclose(_run(ex, x, params), want, rtol=1e-4, atol=1e-4)
    assert "forward" in ex.as_text() and "vm.builtin.alloc_storage" in ex.as_text()
    path = tmp_path / "mlp.so"
    ex.save(str(path))
    loaded = minitvm.runtime.vm.Executable.load(str(path))
    np.testing.assert_allclose(_run(loaded, x, params), want, rtol=1e-4, atol=1e-4)


def test_a_reshape_kernel_becomes_a_view_in_the_vm_lowering():
    """As TVM's relax.build: a flatten between two kernels runs as ``vm.builtin.reshape`` (a view of
    the pooled tensor), not as a kernel copying it; the numbers do not change."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2, 3, 4, 4), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((24, 5), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            pooled = bb.emit(relax.op.nn.max_pool2d(relax.op.nn.relu(x), pool_size=(2, 2), strides=(2, 2)))
            flat = bb.emit(relax.op.reshape(pooled, (2, 12)))
            out = bb.emit_output(relax.op.matmul(relax.op.reshape(flat, (1, 24)), w))
        bb.emit_func_output(out)
    ex = minitvm.compile(bb.get(), "llvm")
    main = ex.ir_module["main"].script()
    # the two reshapes are one after RemoveRedundantReshape; no kernel copies the pooled values
    assert main.count("vm.builtin.reshape") == 1 and 'GlobalVar("reshape' not in main
    rng = np.random.default_rng(4)
    xs, ws = rng.standard_normal((2, 3, 4, 4)).astype("float32"), rng.standard_normal((24, 5)).astype("float32")
    kept = xs.copy()
    got = relax.VirtualMachine(ex, minitvm.cpu())["main"](minitvm.nd.array(xs), minitvm.nd.array(ws)).numpy()
    pooled = np.maximum(xs, 0).reshape(2, 3, 2, 2, 2, 2).max(axis=(3, 5))
    np.testing.assert_allclose(got, pooled.reshape(1, 24) @ ws, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(xs, kept)


def test_build_refuses_a_pipeline_that_is_not_one():
    mod, _ = export_quick_start_mlp(1)
    with pytest.raises(TypeError, match=r"relax_pipeline must be a pipeline name, a Pass \(or a function.*got list"):
        relax.build(mod, "llvm", relax_pipeline=[relax.transform.LegalizeOps()])
    with pytest.raises(ValueError, match="unknown pipeline 'fastest'"):
        minitvm.compile(mod, "llvm", relax_pipeline="fastest")
    with pytest.raises(TypeError, match="unexpected arguments exec_mod"):
        minitvm.compile(mod, "llvm", exec_mod="bytecode")


def test_compile_takes_tvms_keywords_and_the_current_target():
    mod, spec = export_quick_start_mlp(2)
    calls = []

    def my_pipeline(m):  # TVM accepts any function of the module as relax_pipeline
        calls.append(minitvm.target.Target.current().kind.name)
        return relax.get_pipeline("zero")(m)

    with minitvm.target.Target("llvm"):
        ex = minitvm.compile(mod, relax_pipeline=my_pipeline, tir_pipeline="default")
    assert calls == ["llvm"]  # the pipeline runs under the build's target
    x, params, want = _mlp_inputs(spec, batch=2, seed=11)
    np.testing.assert_allclose(_run(ex, x, params), want, rtol=1e-4, atol=1e-4)
    with pytest.raises(NotImplementedError, match="only the default TIR pipeline"):
        minitvm.compile(mod, "llvm", tir_pipeline=minitvm.transform.Sequential([]))


def test_build_refuses_a_system_library_by_name():
    mod, _ = export_quick_start_mlp(1)
    with pytest.raises(NotImplementedError, match=r"system_lib=True"):
        relax.build(mod, "llvm", system_lib=True)


@pytest.mark.parametrize("weight_is_constant", [True, False])
def test_a_large_matmuls_constant_weight_is_packed_once_at_compile_time(weight_is_constant):
    """A 128 x 256 x 1024 dense layer packs its right operand into column panels.  A constant
    weight is packed once, at compile time: the kernel reads a constant already in panels (the
    default pipeline splits the copy off and folds it); a weight passed in is packed inside the
    kernel on every call.  numpy's numbers either way, the kernel keeps its name."""
    rng = np.random.default_rng(12)
    w = rng.standard_normal((256, 1024)).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo((128, 256), "float32"))
    wv = relax.Var("w", relax.TensorStructInfo((256, 1024), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x] if weight_is_constant else [x, wv]):
        with bb.dataflow():
            gv = bb.emit_output(relax.op.nn.relu(relax.op.matmul(x, relax.const(w) if weight_is_constant else wv)))
        bb.emit_func_output(gv)
    mod = relax.get_pipeline("default")(bb.get())
    kernels = {gv.name_hint: f for gv, f in mod.functions_items() if not isinstance(f, relax.Function)}
    assert sorted(kernels) == (["fused_matmul_relu_prepacked"] if weight_is_constant else ["fused_matmul_relu"])
    (kernel,) = kernels.values()
    packed_shapes = [c.data.numpy().shape for c in _constants(mod["main"])]
    assert bool(re.search(r'T\.sblock\("\w+_global"\)', kernel.script())) is not weight_is_constant  # the copy
    if weight_is_constant:
        (shape,) = packed_shapes
        assert len(shape) == 3 and shape[0] * shape[2] == 1024 and shape[1] == 256, shape  # panels
    xs = rng.standard_normal((128, 256)).astype("float32")
    vm = relax.VirtualMachine(minitvm.compile(bb.get(), "llvm"), minitvm.cpu())
    got = vm["main"](xs).numpy() if weight_is_constant else vm["main"](xs, w).numpy()
    np.testing.assert_allclose(got, np.maximum(xs @ w, 0), rtol=1e-4, atol=1e-3)


def _constants(func):
    found = []
    relax.analysis.post_order_visit(func, lambda e: found.append(e) if isinstance(e, relax.Constant) else None)
    return found
