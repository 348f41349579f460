"""The open exercises of chapters 1, 3 and 5 (1.8, 3.3, 5.10) are graded by what any good answer
has, not by its text: the solutions pass their graders in ``test_ch01.py`` etc., and here the
answers a learner plausibly gives first — the chapter's slow loop nest, section 8's converter that
squares its inputs, a layer that builds its result in new arrays — fail with a message that says
what is missing.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import minitvm
from minitvm import relax
from minitvm.grade.messages import learner_message
from minitvm.grade.plugin import GRADING_CONFIG
from minitvm.transform import PassContext

ch01, ch03, ch05 = (importlib.import_module(f"test_{c}") for c in ("ch01", "ch03", "ch05"))


def _fails(grader, **answer) -> str:
    """The learner's message when ``grader`` grades ``answer`` (it must fail)."""
    with PassContext(config=GRADING_CONFIG), pytest.raises(AssertionError) as failure:
        grader(SimpleNamespace(**answer))
    return learner_message(failure.value, "(hint)") or str(failure.value)


def test_the_chapters_loop_nest_is_too_slow_for_exercise_1_8():
    message = _fails(ch01.test_fast_mm_relu, fast_mm_relu=ch01._mm_relu_script)
    assert "exercise 1.8 asks for at least 4x" in message and "it is the chapter's loop nest" in message, message


def test_mm_relu_with_b_transposed_is_named_before_its_speed_is_measured():
    message = _fails(ch01.test_fast_mm_relu, fast_mm_relu=ch01._mm_relu_b_transposed)
    named = [line for line in message.splitlines() if line.startswith("likely mistake:")]
    assert "elements differ" in message and "4x" not in message, message
    assert len(named) == 1 and "B's transpose" in named[0], message


@pytest.mark.parametrize("converter, says", [(ch03._naive_hypot, "x * x overflows float32"),
                                             (ch03._unguarded_hypot, "divides 0 by 0")])
def test_a_hypot_converter_wrong_for_some_floats_names_why(converter, says):
    message = _fails(ch03.test_convert_hypot, convert_hypot=converter)
    named = [line for line in message.splitlines() if line.startswith("likely mistake:")]
    assert "magnitudes from 1e-30 to 1e30" in message and len(named) == 1 and says in named[0], message


def test_a_hypot_converter_by_another_formula_passes():
    """Any formula counts: squaring in float64, whose range holds the squares, passes too."""
    def wide(node, importer):
        x, y = (relax.op.astype(importer.arg(a), "float64") for a in node.args[:2])
        root = relax.op.sqrt(relax.op.add(relax.op.multiply(x, x), relax.op.multiply(y, y)))
        return importer.bb.emit(relax.op.astype(root, "float32"))

    with PassContext(config=GRADING_CONFIG):
        ch03.test_convert_hypot(SimpleNamespace(convert_hypot=wide))


def _register(builds):
    """An answer to exercise 5.10 whose registered function is ``builds(x, w, b, r)``'s result,
    written into ``out`` as the last step."""
    def register(name):
        def layer(x, w, b, r, out):
            ts = [torch.from_dlpack(a) for a in (x, w, b, r)]
            torch.from_dlpack(out).copy_(builds(*ts))

        minitvm.register_func(name, layer, override=True)
    return register


def test_a_layer_that_builds_its_result_in_new_tensors_fails_exercise_5_10():
    naive = _register(lambda x, w, b, r: torch.relu(x @ w.T + b) + r)
    message = _fails(ch05.test_register_fused_layer, register_fused_layer=naive)
    assert "new torch tensors" in message and "relu (256, 256)" in message and "allows half of out's 256 KiB" in message


def test_a_numpy_layer_with_one_temporary_fails_exercise_5_10():
    def register(name):
        def layer(x, w, b, r, out):
            o = np.from_dlpack(out)
            np.matmul(np.from_dlpack(x), np.from_dlpack(w).T, out=o)
            o[...] = np.maximum(o + np.from_dlpack(b), 0) + np.from_dlpack(r)  # temporaries of out's size

        minitvm.register_func(name, layer, override=True)
    message = _fails(ch05.test_register_fused_layer, register_fused_layer=register)
    assert "new numpy arrays" in message and "allows half of out's 256 KiB" in message, message


def test_a_numpy_layer_in_place_passes_exercise_5_10():
    """Any library counts: numpy writing into ``out`` step by step passes as torch does."""
    def register(name):
        def layer(x, w, b, r, out):
            o = np.from_dlpack(out)
            np.matmul(np.from_dlpack(x), np.from_dlpack(w).T, out=o)
            o += np.from_dlpack(b)
            np.maximum(o, 0, out=o)
            o += np.from_dlpack(r)

        minitvm.register_func(name, layer, override=True)
    with PassContext(config=GRADING_CONFIG):
        ch05.test_register_fused_layer(SimpleNamespace(register_fused_layer=register))


def test_a_layer_that_forgets_a_term_fails_on_the_numbers():
    answer = _register(lambda x, w, b, r: torch.relu(x @ w.T + b))
    assert "must hold relu(x @ w.T + b) + r" in _fails(ch05.test_register_fused_layer, register_fused_layer=answer)
