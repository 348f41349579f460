"""PassStepper: one position per pass, the IR after it, the diff, a picture; driven from Python."""

from minitvm import tir, transform, viz
from minitvm.ir import IRModule
from minitvm.testing.programs import mm_relu
from minitvm.tir.transform import lower_pipeline


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
    assert "<svg" in picture_panel.value and "tir.CompactBufferAllocation" in box.header.value
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
