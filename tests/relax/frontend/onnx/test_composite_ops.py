"""ONNX's composite operators (Attention, the losses) and the others added for ONNX's backend
cases, through from_onnx, compiled and run, against onnxruntime on seeded random data."""

from __future__ import annotations

import numpy as np
from onnx import helper
from onnx.reference import ReferenceEvaluator

from minitvm.relax.frontend.onnx import from_onnx

from ._check import assert_outputs, check, compile_vm, init, model_of, random_inputs, tvm_run

F = "float32"


def check_reference(model, values, rtol=1e-5, atol=1e-6):
    """Against ONNX's reference evaluator, where onnxruntime does not take the variant."""
    want = ReferenceEvaluator(model).run(None, values)
    assert_outputs(tvm_run(compile_vm(from_onnx(model)), model, values), want, rtol=rtol, atol=atol)
    return want


def test_attention_grouped_heads_with_a_cache_a_mask_causal_and_softmax_output():
    """3-D inputs split into 4 query / 2 key-value heads, a past cache of 3 appended (outputs 1
    and 2), a boolean mask shorter than the keys, causal from the cache's end, softcap, and the
    softmax as output 3; a second node over 4-D inputs with a float mask and a scale."""
    b, q_len, kv_len, past, size = 2, 3, 3, 3, 4
    nodes = [
        helper.make_node("Attention", ["q", "k", "v", "mask", "pk", "pv"], ["y", "present_k", "present_v", "qk"],
                         q_num_heads=4, kv_num_heads=2, is_causal=1, softcap=3.0, qk_matmul_output_mode=3),
        helper.make_node("Attention", ["q4", "k4", "v4", "fmask"], ["y4"], scale=0.3),
    ]
    inputs = {"q": (F, [b, q_len, 4 * size]), "k": (F, [b, kv_len, 2 * size]), "v": (F, [b, kv_len, 2 * size]),
              "mask": ("bool", [q_len, past + kv_len - 1]), "pk": (F, [b, 2, past, size]),
              "pv": (F, [b, 2, past, size]),
              "q4": (F, [b, 2, q_len, size]), "k4": (F, [b, 2, 5, size]), "v4": (F, [b, 2, 5, 6]),
              "fmask": (F, [b, 1, q_len, 5])}
    outputs = {"y": (F, [b, q_len, 4 * size]), "present_k": (F, [b, 2, past + kv_len, size]),
               "present_v": (F, [b, 2, past + kv_len, size]), "qk": (F, [b, 4, q_len, past + kv_len]),
               "y4": (F, [b, 2, q_len, 6])}
    model = model_of(nodes, inputs, outputs, opset=23)
    values = random_inputs(model)
    values["mask"][1] = False  # a query row with no key left: 0 (ONNX's reference, which defines the op)
    # ONNX's reference evaluator: onnxruntime refuses a mask shorter than the keys, which ONNX pads
    want = check_reference(model, values)
    assert not want[0][:, 1].any() and want[0][:, 0].all()


def _loss_model(reduction, weighted, ignore_index):
    n, c, d = 3, 5, 4
    attrs = {"reduction": reduction} | ({} if ignore_index is None else {"ignore_index": ignore_index})
    names = ["x", "t"] + (["w"] if weighted else [])
    nodes = [helper.make_node("LogSoftmax", ["x"], ["logp"], axis=1),
             helper.make_node("NegativeLogLikelihoodLoss", ["logp"] + names[1:], ["nll"], **attrs),
             helper.make_node("SoftmaxCrossEntropyLoss", names, ["sce", "log_prob"], **attrs)]
    shape = [n, d] if reduction == "none" else []
    inits = [init("w", np.linspace(0.5, 2.0, c).astype(F))] if weighted else []
    return model_of(nodes, {"x": (F, [n, c, d]), "t": ("int64", [n, d])},
                    {"nll": (F, shape), "sce": (F, shape), "log_prob": (F, [n, c, d])}, inits, opset=18)


def test_losses_by_reduction_weight_and_ignored_class():
    for reduction, weighted, ignore in [("mean", True, 2), ("mean", False, -1), ("sum", False, None),
                                        ("none", True, None)]:
        model = _loss_model(reduction, weighted, ignore)
        values = random_inputs(model, seed=3)
        values["t"] = np.random.default_rng(4).integers(0, 5, size=values["t"].shape).astype("int64")
        if ignore is not None:
            values["t"][0, :2] = ignore  # some targets ignored (-1 is outside the classes)
        check(model, values, rtol=1e-5, atol=1e-6)


def test_selection_pooling_and_quantization_ops_in_one_graph():
    """TopK (ties: the lower index first), GatherND with a batch axis and negative indices,
    ScatterND adding, CenterCropPad cropping one axis and padding another, LpPool (padded), GlobalLpPool,
    3-D max pooling, per-axis QuantizeLinear into int8 and DequantizeLinear back."""
    rng = np.random.default_rng(5)
    nodes = [
        helper.make_node("TopK", ["x", "k"], ["top_v", "top_i"], axis=1, largest=0),
        helper.make_node("GatherND", ["g", "gi"], ["gathered"], batch_dims=1),
        helper.make_node("ScatterND", ["g", "si", "su"], ["scattered"], reduction="add"),
        helper.make_node("CenterCropPad", ["img", "crop"], ["cropped"], axes=[1, 2]),
        helper.make_node("LpPool", ["img"], ["lp"], kernel_shape=[2, 3], pads=[1, 1, 0, 1], p=3),
        helper.make_node("GlobalLpPool", ["img"], ["glp"], p=2),
        helper.make_node("MaxPool", ["vol"], ["vmax"], kernel_shape=[2, 2, 2], strides=[1, 2, 1]),
        helper.make_node("QuantizeLinear", ["img", "qs", "qz"], ["q"], axis=1),
        helper.make_node("DequantizeLinear", ["q", "qs", "qz"], ["dq"], axis=1),
    ]
    x = rng.permutation(24).reshape(2, 12).astype(F)
    x[:, 5] = x.min(axis=1)  # a tie for the smallest
    inits = [init("k", np.array([4])), init("gi", np.array([[[1, -1], [0, 2]], [[2, 0], [-3, 1]], [[0, 3], [1, -4]]])),
             init("si", np.array([[0, 1], [2, 2], [0, 1]])), init("su", rng.standard_normal([3, 4]).astype(F)),
             init("crop", np.array([3, 9])), init("qs", np.array([0.02, 0.05], F)),
             init("qz", np.array([3, -4], "int8"))]
    model = model_of(nodes, {"x": (F, [2, 12]), "g": (F, [3, 3, 4]), "img": (F, [1, 2, 5, 6]),
                             "vol": (F, [1, 1, 4, 5, 3])},
                     {"top_v": (F, [2, 4]), "top_i": ("int64", [2, 4]), "gathered": (F, [3, 2]),
                      "scattered": (F, [3, 3, 4]), "cropped": (F, [1, 2, 3, 9]),
                      "lp": (F, [1, 2, 5, 6]), "glp": (F, [1, 2, 1, 1]), "vmax": (F, [1, 1, 3, 2, 2]),
                      "q": ("int8", [1, 2, 5, 6]), "dq": (F, [1, 2, 5, 6])}, inits, opset=21)
    values = random_inputs(model, seed=6)
    values["x"] = x
    check(model, values, rtol=1e-5, atol=1e-5)


def test_recurrent_layers_and_rotary_embedding_in_one_graph():
    """A bidirectional LSTM with biases, peepholes and initial states; a batch-first GRU with
    linear_before_reset; a reversed RNN with clip; RotaryEmbedding interleaved over part of each
    head (3-D input, position ids) and in halves (4-D)."""
    seq, batch, inp, hid = 3, 2, 3, 5
    rng = np.random.default_rng(7)

    def w(*shape):
        return rng.uniform(-0.6, 0.6, size=shape).astype(F)
    inits = [init("lw", w(2, 4 * hid, inp)), init("lr", w(2, 4 * hid, hid)), init("lb", w(2, 8 * hid)),
             init("lp", w(2, 3 * hid)), init("gw", w(1, 3 * hid, inp)), init("gr", w(1, 3 * hid, hid)),
             init("gb", w(1, 6 * hid)), init("rw", w(1, hid, inp)), init("rr", w(1, hid, hid)),
             init("cos", np.cos(w(6, 3) * 4)), init("sin", np.sin(w(6, 3) * 4)),
             init("pos", np.array([[0, 2, 5], [3, 4, 0]]))]
    nodes = [
        helper.make_node("LSTM", ["x", "lw", "lr", "lb", "", "h0", "c0", "lp"], ["ly", "lh", "lc"], hidden_size=hid,
                         direction="bidirectional"),
        helper.make_node("GRU", ["xb", "gw", "gr", "gb"], ["gy", "gh"], hidden_size=hid, layout=1,
                         linear_before_reset=1),
        helper.make_node("RNN", ["x", "rw", "rr"], ["ry", "rh"], hidden_size=hid, direction="reverse", clip=0.8),
        helper.make_node("RotaryEmbedding", ["q3", "cos", "sin", "pos"], ["rot3"], num_heads=2, interleaved=1,
                         rotary_embedding_dim=6),
        helper.make_node("RotaryEmbedding", ["q4", "cos", "sin", "pos"], ["rot4"]),
    ]
    inputs = {"x": (F, [seq, batch, inp]), "xb": (F, [batch, seq, inp]), "h0": (F, [2, batch, hid]),
              "c0": (F, [2, batch, hid]), "q3": (F, [batch, seq, 16]), "q4": (F, [batch, 2, seq, 6])}
    outputs = {"ly": (F, [seq, 2, batch, hid]), "lh": (F, [2, batch, hid]), "lc": (F, [2, batch, hid]),
               "gy": (F, [batch, seq, 1, hid]), "gh": (F, [batch, 1, hid]), "ry": (F, [seq, 1, batch, hid]),
               "rh": (F, [1, batch, hid]), "rot3": (F, [batch, seq, 16]), "rot4": (F, [batch, 2, seq, 6])}
    rnn = nodes.pop(2)
    rnn_outputs = {k: outputs.pop(k) for k in ("ry", "rh")}
    model = model_of(nodes, inputs, outputs, inits, opset=23)
    values = random_inputs(model)
    check_reference(model, values, rtol=1e-5, atol=1e-5)  # onnxruntime: no batch-first GRU
    # ONNX's reference evaluator leaves out RNN's clip and direction; onnxruntime takes them
    check(model_of([rnn], {"x": inputs["x"]}, rnn_outputs, inits[7:9], opset=23), {"x": values["x"]},
          rtol=1e-5, atol=1e-5)


def test_resize_cubic_and_align_corners_with_a_fractional_scale():
    """Cubic up (a=-0.5, exclude_outside) and down (align_corners at scale 0.6: ONNX's output
    width is fractional there, 2.4, which sets the step), and linear down with align_corners."""
    nodes = [helper.make_node("Resize", ["x", "", "up"], ["cubic_up"], mode="cubic", cubic_coeff_a=-0.5,
                              exclude_outside=1),
             helper.make_node("Resize", ["x", "", "down"], ["cubic_down"], mode="cubic",
                              coordinate_transformation_mode="align_corners"),
             helper.make_node("Resize", ["x", "", "down"], ["linear_down"], mode="linear",
                              coordinate_transformation_mode="align_corners")]
    inits = [init("up", np.array([1, 1, 1.5, 2.25], F)), init("down", np.array([1, 1, 0.6, 0.6], F))]
    model = model_of(nodes, {"x": (F, [1, 2, 4, 5])}, {"cubic_up": (F, [1, 2, 6, 11]), "cubic_down": (F, [1, 2, 2, 3]),
                                                      "linear_down": (F, [1, 2, 2, 3])}, inits, opset=19)
    # onnxruntime steps by the integer output size there (3 / 1, not 3 / 1.4); ONNX's cases and
    # reference evaluator by the fractional one
    check_reference(model, random_inputs(model), rtol=1e-5, atol=1e-5)
    check(model_of(nodes[:1], {"x": (F, [1, 2, 4, 5])}, {"cubic_up": (F, [1, 2, 6, 11])}, inits[:1], opset=19),
          rtol=1e-5, atol=1e-5)


def test_windows_and_opset_10_scatter():
    """Hann (periodic), Hamming (symmetric, float64) and Blackman windows of a known size;
    opset 10's Scatter (ScatterElements under its old name)."""
    windows = [helper.make_node("HannWindow", ["n"], ["hann"]),
               helper.make_node("HammingWindow", ["n"], ["hamming"], periodic=0, output_datatype=11),
               helper.make_node("BlackmanWindow", ["n"], ["blackman"])]
    check(model_of(windows, {}, {"hann": (F, [7]), "hamming": ("float64", [7]), "blackman": (F, [7])},
                   [init("n", np.array(7))], opset=17), {}, rtol=1e-6, atol=1e-7)
    scatter = helper.make_node("Scatter", ["d", "i", "u"], ["scattered"], axis=1)
    check(model_of([scatter], {"d": (F, [2, 5]), "u": (F, [2, 2])}, {"scattered": (F, [2, 5])},
                   [init("i", np.array([[4, 0], [1, 3]]))], opset=10))
