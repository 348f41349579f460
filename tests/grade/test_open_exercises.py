"""The open exercises' graders, proven both ways.

An open exercise is graded by properties any good answer has (the right numbers, a speed-up
measured in the grader), not by one expected program. The reference answer passes in
``test_chNN.py``; here a different good answer passes too, and answers that miss one property
each fail with a message naming that property.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest

from minitvm import relax, tirx
from minitvm.grade.messages import learner_message
from minitvm.grade.plugin import GRADING_CONFIG
from minitvm.transform import PassContext
from solutions import ch04 as solved_ch04

ch04 = importlib.import_module("test_ch04")


def _no_relu(mod):
    """The given model's layers without the ReLU between them, scheduled: fast, but wrong."""
    sizes = ch04.FAST_MLP_SIZES
    x = relax.Var("x", relax.TensorStructInfo(sizes[:2], "float32"))
    w0 = relax.Var("w0", relax.TensorStructInfo((sizes[2], sizes[1]), "float32"))
    b0 = relax.Var("b0", relax.TensorStructInfo((sizes[2],), "float32"))
    w1 = relax.Var("w1", relax.TensorStructInfo((sizes[3], sizes[2]), "float32"))
    b1 = relax.Var("b1", relax.TensorStructInfo((sizes[3],), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w0, b0, w1, b1]):
        with bb.dataflow():
            lv0 = bb.emit_te(solved_ch04.te_linear, x, w0, b0)
            out = bb.emit_output(bb.call_te(solved_ch04.te_linear, lv0, w1, b1))
        bb.emit_func_output(out)
    return relax.get_pipeline("default")(bb.get())


def _bound(mod):
    """The weights bound as constants: main no longer takes them."""
    rng = ch04.np.random.default_rng(0)
    weights = {"w1": ch04._rand(rng, ch04.FAST_MLP_SIZES[3], ch04.FAST_MLP_SIZES[2])}
    return relax.get_pipeline("default")(relax.transform.BindParams("main", weights)(mod))


def _zero_then_scheduled(mod):
    """Another good answer, not the reference's: the "zero" pipeline (fusion, no schedules), then
    the default CPU schedule pass on its kernels."""
    return tirx.transform.DefaultCPUSchedule()(relax.get_pipeline("zero")(mod))


@pytest.mark.parametrize("answer, says", [
    (lambda mod: mod, "at least 3x is wanted"),
    (_no_relu, "elements differ"),
    (_bound, "main must take x, w0, b0, w1, b1"),
], ids=["unchanged", "no-relu", "weights-bound"])
def test_fast_mlp_refuses_an_answer_missing_a_property(answer, says):
    learner = SimpleNamespace(mlp_module=solved_ch04.mlp_module, fast_mlp=answer)
    with PassContext(config=GRADING_CONFIG), pytest.raises(AssertionError) as failure:
        ch04.test_fast_mlp(learner)
    message = learner_message(failure.value) or str(failure.value)
    assert says in message, message


def test_fast_mlp_accepts_another_good_answer():
    learner = SimpleNamespace(mlp_module=solved_ch04.mlp_module, fast_mlp=_zero_then_scheduled)
    with PassContext(config=GRADING_CONFIG):
        ch04.test_fast_mlp(learner)
