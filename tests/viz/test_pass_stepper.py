"""PassStepper: one position per pass, the IR after it, the diff, a picture; driven from Python."""

import numpy as np

import minitvm
from minitvm import relax, tir, transform, viz
from minitvm.ir import IRModule
from minitvm.testing.programs import mm_relu
from minitvm.tir.transform import lower_pipeline
from minitvm.viz.render import svg_html


def test_one_step_per_lowering_pass():
    stepper = viz.PassStepper(IRModule({"mm_relu": mm_relu}), lower_pipeline())
    assert stepper.names == [p.info.name for p in lower_pipeline().passes]
    flatten = stepper.names.index("tir.FlattenBuffer")
    assert "T.Buffer((16384,)" in stepper.ir_after(flatten).script()
    d = stepper.diff(stepper.names.index("tir.LowerOpaqueBlock"))
    assert d.changed and "T.block" in "\n".join(d.before) and "T.block" not in "\n".join(d.after)
    assert "tir.LowerInitBlock" in stepper.summary()


def test_widget_slider_changes_the_shown_ir():
    stepper = viz.PassStepper(IRModule({"mm_relu": mm_relu}), lower_pipeline())
    box = stepper.widget()
    ir_panel, diff_panel, picture_panel = box.panels
    first = ir_panel.value
    assert "<svg" in picture_panel.value and "tir.OOBChecker" in box.header.value  # the first pass
    box.slider.value = stepper.names.index("tir.FlattenBuffer")
    assert ir_panel.value != first and "16384" in ir_panel.value
    assert "minitvm-diff" in diff_panel.value and "tir.FlattenBuffer" in box.header.value


def test_a_list_of_passes_and_unchanged_steps():
    @transform.module_pass(opt_level=0, name="Nothing")
    def nothing(mod, ctx):
        return mod

    stepper = viz.PassStepper(IRModule({"mm_relu": mm_relu}), [nothing, tir.transform.LowerInitBlock()])
    assert stepper.names == ["Nothing", "tir.LowerInitBlock"]
    assert not stepper.records[0].changed and stepper.records[1].changed
    assert "no change" in stepper.show(0)["header"]


def _added(d):
    """Lines the diff shows on the right only (added or changed)."""
    return "\n".join(right for tag, _, right in d.rows() if tag in ("added", "changed"))


def _removed(d):
    """Lines the diff shows on the left only (removed or changed)."""
    return "\n".join(left for tag, left, _ in d.rows() if tag in ("removed", "changed"))


def test_quick_start_mlp_through_the_zero_pipeline(mlp):
    mod, _ = mlp
    pipeline = relax.get_pipeline("zero")
    stepper = viz.PassStepper(mod, pipeline)
    assert stepper.names == [p.info.name for p in pipeline.passes]  # one position per pass
    step = {name: k for k, name in enumerate(stepper.names)}

    legalize = stepper.diff(step["LegalizeOps"])  # high-level ops become call_tir of new PrimFuncs
    assert "R.matmul(x, permute_dims" in _removed(legalize) and "R.call_tir" not in _removed(legalize)
    assert "R.call_tir(cls.matmul, (x, permute_dims)" in _added(legalize) and "def relu(" in _added(legalize)
    patterns = stepper.diff(step["AnnotateTIROpPattern"])  # only attributes change: every kernel gets a pattern
    assert {tag for tag, _, _ in patterns.rows()} == {"equal", "changed"}
    assert _added(patterns).count('"op_pattern"') == len(_removed(patterns).splitlines()) == 7
    assert not stepper.records[step["FoldConstant"]].changed  # no constants in this model
    fuse = stepper.diff(step["FuseOps"])
    assert "def fused_matmul_add_relu(" in _added(fuse) and "def fused_matmul1_add1(" in _added(fuse)
    assert _added(fuse).count('R.func_attr({"Primitive": True})') == 2
    fuse_tir = stepper.diff(step["FuseTIR"])  # the fused Relax functions become one PrimFunc each
    assert "R.call_tir(cls.fused_matmul_add_relu, (x, permute_dims, fc1_bias)" in _added(fuse_tir)
    assert "@R.function(private=True)" in _removed(fuse_tir) and "def add(" in _removed(fuse_tir)
    assert "alloc_tensor" not in stepper.result.script()  # the zero pipeline does not lower to the VM

    box = stepper.widget()
    assert (box.slider.min, box.slider.max) == (0, len(pipeline.passes) - 1)
    box.slider.value = step["FuseOps"]
    ir_panel, diff_panel, picture_panel = box.panels
    assert "FuseOps" in box.header.value and "def fused_matmul_add_relu" in ir_panel.value
    # the picture is the entry function `forward` with the two fused functions as clusters
    picture = picture_panel.value
    assert 'class="cluster"' in picture and "fused_matmul_add_relu (out_ewise_fusable)" in picture
    dot = viz.graph_dot(stepper.ir_after(step["FuseOps"]), "forward")
    assert dot.count("subgraph cluster_") == 2
    assert 'label="fused_matmul_add_relu (out_ewise_fusable)"' in dot and 'fillcolor="#ffc9c966"' in dot
    assert "gv = call_tir <b>relu</b><br/><i>elementwise</i>" in dot and 'fillcolor="#d3f9d8"' in dot
    # matmul + bias: an elementwise load next to a broadcast one is elementwise by TVM's rule
    assert "add = call_tir <b>add</b><br/><i>elementwise</i>" in dot
    assert "<i>fused, out_ewise_fusable</i>" in dot and 'lhead="cluster_fused_matmul1_add1"' in dot


def test_stepping_the_vm_lowering_that_compile_runs_after_the_zero_pipeline(mlp):
    """relax.build lowers a fused module to VM builtins: the same passes, stepped one by one."""
    mod, _ = mlp
    fused = relax.get_pipeline("zero")(mod)
    passes = relax.pipeline.vm_lowering_passes()
    stepper = viz.PassStepper(fused, passes)
    assert stepper.names == ["RewriteDataflowReshape", "ToNonDataflow", "CallTIRRewrite", "StaticPlanBlockMemory",
                             "VMBuiltinLower", "VMShapeLower"]
    step = {name: k for k, name in enumerate(stepper.names)}
    assert "with R.dataflow():" in _removed(stepper.diff(step["ToNonDataflow"]))
    call_tir = stepper.diff(step["CallTIRRewrite"])  # one output allocation per kernel call
    assert _added(call_tir).count("R.builtin.alloc_tensor") == 4 and "R.call_tir" in _removed(call_tir)
    assert "R.memory.alloc_storage" in _added(stepper.diff(step["StaticPlanBlockMemory"]))
    assert 'R.call_packed("vm.builtin.alloc_storage"' in _added(stepper.diff(step["VMBuiltinLower"]))
    # what the stepper ends with is what minitvm.compile hands to the VM code generator
    ex = minitvm.compile(fused, "llvm", relax_pipeline=None)
    assert stepper.result.script() == ex.ir_module.script()


def test_the_stepped_module_computes_the_mlp(mlp):
    """The module the stepper recorded last is the real one: it runs and matches numpy."""
    mod, spec = mlp
    stepper = viz.PassStepper(mod, relax.get_pipeline("zero"))
    ex = minitvm.compile(stepper.result, minitvm.target.Target("llvm"))
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 784)).astype("float32")
    params = [rng.standard_normal(tuple(int(s) for s in p.shape)).astype("float32") for _, p in spec]
    out = vm["forward"](minitvm.nd.array(x), *params).numpy()
    w1, b1, w2, b2 = params
    np.testing.assert_allclose(out, np.maximum(x @ w1.T + b1, 0) @ w2.T + b2, rtol=1e-4, atol=1e-4)


def test_pictures_fit_their_panel_and_a_failed_picture_is_a_note():
    svg = svg_html(lambda: viz.loop_nest(mm_relu))
    assert svg.count('<svg style="max-width:100%;height:auto" ') == 1 and "block Y" in svg

    def no_dot():
        raise RuntimeError("failed to execute 'dot'\nmake sure the Graphviz executables are on your PATH")

    assert svg_html(no_dot) == "<i>(no picture: failed to execute &#x27;dot&#x27;)</i>"


def test_passes_run_inside_a_pass_are_not_steps():
    """FoldConstant builds kernels (through the TIR lowering passes) to fold constants: still one step."""

    x = relax.Var("x", relax.TensorStructInfo((2, 4), "float32"))
    w = relax.const(np.random.default_rng(0).standard_normal((3, 4)).astype("float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            wt = bb.emit(relax.op.permute_dims(w))
            gv = bb.emit_output(relax.op.matmul(x, wt))
        bb.emit_func_output(gv)
    pipeline = relax.get_pipeline("zero")
    stepper = viz.PassStepper(bb.get(), pipeline)
    assert stepper.names == [p.info.name for p in pipeline.passes]
    fold = stepper.names.index("FoldConstant")
    assert stepper.records[fold].changed and "R.const" in stepper.ir_after(fold).script()
