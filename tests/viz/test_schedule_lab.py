"""ScheduleLab: apply and undo primitives, errors in words, trace and speed — driven from Python."""

from minitvm import viz
from minitvm.ir import assert_structural_equal
from minitvm.testing.programs import BmmRelu, BmmReluTarget, mm_relu


def test_bmm_relu_step_by_step_reaches_the_target():
    lab = viz.ScheduleLab(BmmRelu)
    box = lab.widget()
    steps = [("split", dict(loop="j (C)", factors=[None, 8])),
             ("parallel", dict(loop="n (C)")),
             ("compute_at", dict(block="Y", loop="j_0")),
             ("split", dict(loop="ax1", factors=[None, 4])),
             ("reorder", dict(loops="ax1_0, ax1_1, ax0")),
             ("unroll", dict(loop="ax1_1")),
             ("decompose_reduction", dict(block="Y", loop="ax1_0")),
             ("vectorize", dict(loop="ax0_init")),
             ("vectorize", dict(loop="j_1"))]
    pictures = set()
    for name, args in steps:
        assert lab.apply(name, **args), lab.error
        pictures.add(box.controls["picture"].value)
    assert len(pictures) == len(steps)  # every step changed the loop-nest picture
    func = lab.schedule.mod["bmm_relu"]
    assert_structural_equal(func, BmmReluTarget["bmm_relu"])
    assert "sch.decompose_reduction(" in box.controls["trace"].value


def test_error_shows_in_the_widget_and_undo_goes_back():
    lab = viz.ScheduleLab(mm_relu)
    box = lab.widget()
    before = lab.schedule.mod
    assert not lab.apply("parallel", loop="k")  # k is the only loop of that name
    assert "cannot parallelize loop k" in box.controls["message"].value
    assert lab.schedule.mod is before
    assert lab.loops() == ["i (Y)", "j (Y)", "k", "i (C)", "j (C)"]  # repeated names say their block
    assert lab.apply("split", loop="i (Y)", factors="None, 16")
    assert "i_0" in lab.loops()
    lab.undo()
    assert "i_0" not in lab.loops() and lab.steps == []


def test_widget_buttons_and_measure():
    lab = viz.ScheduleLab(mm_relu, flops=2 * 128 ** 3)
    box = lab.widget()
    c = box.controls
    c["primitive"].value = "reorder"
    c["text"].value = "i (Y), k, j (Y)"
    c["apply"].click()
    assert lab.error is None and lab.steps[-1][0] == "reorder"
    c["measure"].click()
    assert "GFLOP/s" in c["speed"].value and "x the starting schedule" in c["speed"].value
    m = lab.measure()
    assert m["speedup"] > 0 and m["gflops"] > 0
