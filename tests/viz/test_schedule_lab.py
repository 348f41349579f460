"""ScheduleLab: apply and undo primitives, errors in words, trace and speed — driven from Python."""

import html
import re

import numpy as np

import minitvm
from minitvm import tir, viz
from minitvm.ir import assert_structural_equal
from minitvm.testing.programs import BmmRelu, BmmReluTarget, mm_relu

#: the MLC exercise's bmm_relu schedule as lab steps: (primitive, arguments, what the loop-nest picture
#: must show after it — loops as "name in extent [kind]", in order, or blocks — the trace's new call)
BMM_RELU_STEPS = [
    ("split", dict(loop="j (C)", factors=[None, 8]), ["j_0 in 16", "j_1 in 8"],
     "sch.split(loop=l3, factors=[None, 8]"),
    ("parallel", dict(loop="n (C)"), ["n in 16 parallel"], "sch.parallel(loop=l7)"),
    ("compute_at", dict(block="Y", loop="j_0"), ["ax0 in 8", "ax1 in 128"],
     "sch.compute_at(block=b11, loop=l15"),
    ("split", dict(loop="ax1", factors=[None, 4]), ["ax1_0 in 32", "ax1_1 in 4"],
     "sch.split(loop=l22, factors=[None, 4]"),
    ("reorder", dict(loops="ax1_0, ax1_1, ax0"), ["ax1_0", "ax1_1", "ax0"],
     "sch.reorder(l30, l31, l29)"),
    ("unroll", dict(loop="ax1_1"), ["ax1_1 in 4 unrolled"], "sch.unroll(loop=l37)"),
    ("decompose_reduction", dict(block="Y", loop="ax1_0"), ["<b>block Y_init</b>", "<b>block Y_update</b>"],
     "sch.decompose_reduction(block=b39, loop=l44)"),
    ("vectorize", dict(loop="ax0_init"), ["ax0_init in 8 vectorized"], "sch.vectorize(loop=l52)"),
    ("vectorize", dict(loop="j_1"), ["j_1 in 8 vectorized"], "sch.vectorize(loop=l57)"),
]


#: a loop box of the picture: one loop, or a chain drawn as one box ("for i, j in 16 × 8")
_LOOP_BOX = re.compile(r"<b>for ([^<]+)</b> in ([^<>]+?)(?: <i>(\w+)</i>)?>")


def _loops(dot: str) -> list[str]:
    """The loops of a loop-nest picture in drawing order, as "name in extent [kind]"."""
    out = []
    for names, extents, kind in _LOOP_BOX.findall(dot):
        for name, extent in zip(names.split(", "), extents.split(" × ")):
            out.append(f"{name} in {extent}" + (f" {kind}" if kind else ""))
    return out


def _position(dot: str, loops: list[str], shown: str) -> int:
    if shown.startswith("<b>block"):
        return dot.find(shown)
    return next((k for k, loop in enumerate(loops) if loop == shown or loop.startswith(shown + " ")), -1)


def test_bmm_relu_step_by_step_reaches_the_target():
    lab = viz.ScheduleLab(BmmRelu)
    box = lab.widget()
    pictures = set()
    for name, args, shown, call in BMM_RELU_STEPS:
        assert lab.apply(name, **args), lab.error
        dot = viz.loop_nest_dot(lab.schedule.mod)
        positions = [_position(dot, _loops(dot), text) for text in shown]
        assert -1 not in positions, f"after {name} {args} the loop nest lacks {shown}:\n{dot}"
        assert positions == sorted(positions), f"after {name} the loops are in the wrong order:\n{dot}"
        assert call in lab.trace().splitlines()[-1], f"after {name} the trace ends {lab.trace()}"
        assert html.escape(call) in box.controls["trace"].value
        pictures.add(box.controls["picture"].value)
    assert len(pictures) == len(BMM_RELU_STEPS)  # every step changed the loop-nest picture
    assert dot.count("<b>for n</b>") == 1  # compute_at moved Y under C's loops: one nest left
    assert_structural_equal(lab.schedule.mod["bmm_relu"], BmmReluTarget["bmm_relu"])


def test_the_trace_is_python_that_replays_the_lab():
    """The trace the lab shows is copyable: executed on a fresh schedule it gives the same module."""
    lab = viz.ScheduleLab(BmmRelu)
    for name, args, _, _ in BMM_RELU_STEPS:
        assert lab.apply(name, **args), lab.error
    fresh = tir.Schedule(BmmRelu)
    exec(lab.trace(), {"sch": fresh, "tir": tir})
    assert_structural_equal(fresh.mod, lab.schedule.mod)
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((16, 128, 128)).astype("float32") for _ in range(2))
    c = minitvm.nd.empty((16, 128, 128), "float32")
    minitvm.build(fresh.mod, target="llvm")["bmm_relu"](minitvm.nd.array(a), minitvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


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
