"""ONNX sequences as Relax tuples (as TVM's importer): built, indexed, edited, concatenated and
split while importing; a sequence output is a tuple of tensors. Against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import minitvm
from minitvm.relax.frontend.onnx import from_onnx

from ._check import compile_vm, ort_run

F = "float32"
RNG = np.random.default_rng(0)


def _const(name, value):
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(
        name, TensorProto.INT64, np.shape(value), np.reshape(value, -1).tolist()))


def _run_both(nodes, inputs, output_is_seq=True, out_shape=None, out_type=TensorProto.FLOAT):
    """Build a graph over float inputs ``{name: shape}`` with one output "out", run both."""
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()]
    out = (helper.make_tensor_sequence_value_info("out", TensorProto.FLOAT, None) if output_is_seq
           else helper.make_tensor_value_info("out", out_type, out_shape))
    model = helper.make_model(helper.make_graph(nodes, "seq", ins, [out]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    values = {n: RNG.standard_normal(s).astype(F) for n, s in inputs.items()}
    want = ort_run(model, values)[0]
    got = compile_vm(from_onnx(model))["main"](*(minitvm.nd.array(values[n]) for n in inputs))
    return got, want


def _same_sequence(got, want):
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-6)


def test_construct_insert_erase_at_negative_positions():
    nodes = [helper.make_node("SequenceConstruct", ["a", "b", "c"], ["s"]), _const("p", -1), _const("q", 0),
             helper.make_node("SequenceInsert", ["s", "d", "p"], ["s2"]),
             helper.make_node("SequenceErase", ["s2", "q"], ["out"])]
    _same_sequence(*_run_both(nodes, {n: [2, 3] for n in "abcd"}))


def test_empty_sequence_and_insert_at_the_end():
    nodes = [helper.make_node("SequenceEmpty", [], ["e"]), helper.make_node("SequenceInsert", ["e", "a"], ["out"])]
    _same_sequence(*_run_both(nodes, {"a": [4]}))


def test_sequence_at_and_length():
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"]), _const("i", -2),
             helper.make_node("SequenceAt", ["s", "i"], ["out"])]
    got, want = _run_both(nodes, {"a": [3], "b": [3]}, output_is_seq=False, out_shape=[3])
    np.testing.assert_array_equal(got.numpy(), want)
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
             helper.make_node("SequenceLength", ["s"], ["out"])]
    got, want = _run_both(nodes, {"a": [3], "b": [3]}, output_is_seq=False, out_shape=[], out_type=TensorProto.INT64)
    assert int(got.numpy()) == int(want) == 2


@pytest.mark.parametrize("new_axis", [0, 1])
def test_concat_from_sequence(new_axis):
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
             helper.make_node("ConcatFromSequence", ["s"], ["out"], axis=-1, new_axis=new_axis)]
    got, want = _run_both(nodes, {"a": [2, 3], "b": [2, 3]}, output_is_seq=False,
                          out_shape=[2, 3, 2] if new_axis else [2, 6])
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("split, keepdims", [(3, 1), ([1, 4], 1), (None, 0), (None, 1)])
def test_split_to_sequence(split, keepdims):
    nodes = [] if split is None else [_const("split", split)]
    nodes.append(helper.make_node("SplitToSequence", ["x"] + ([] if split is None else ["split"]), ["out"], axis=1,
                                  keepdims=keepdims))
    _same_sequence(*_run_both(nodes, {"x": [2, 5]}))


def test_sequence_position_out_of_range_is_refused():
    model = helper.make_model(helper.make_graph(
        [helper.make_node("SequenceConstruct", ["a"], ["s"]), _const("i", 3),
         helper.make_node("SequenceAt", ["s", "i"], ["y"])],
        "seq", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]), opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ValueError, match="SequenceAt node .*position 3 is out of range for a sequence of 1"):
        from_onnx(model)
