"""Each ONNX operator through from_onnx, compiled and run on the VM, against onnxruntime on
seeded random data (the one-to-one element-wise operators share one graph per arity: a
compile costs more than an operator)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import minitvm
from minitvm.relax.frontend.onnx import CONVERTERS, from_onnx
from minitvm.tir.op_table import BINARY, UNARY

from ._check import check, check_node, compile_vm, init, model_of, ort_run, random_inputs, tvm_run

F = "float32"
#: float inputs inside each unary op's domain (the op table's own domains)
_DOMAIN = {row.onnx[0]: row.domain for row in UNARY if row.onnx}


def _unary_inputs(names, shape, seed=0):
    rng = np.random.default_rng(seed)
    out = {}
    for name in names:
        lo, hi = _DOMAIN.get(name, (-3.0, 3.0))
        out[f"x_{name}"] = rng.uniform(lo, hi, size=shape).astype(F)
    return out


def test_unary_table_ops_in_one_graph():
    float_ops = [n for row in UNARY for n in row.onnx if row.dtypes in ("any", "float")]
    nodes = [helper.make_node(n, [f"x_{n}"], [f"y_{n}"]) for n in float_ops]
    outputs = {f"y_{n}": (F if n != "IsNaN" else "bool", [3, 4]) for n in float_ops}
    model = model_of(nodes, {f"x_{n}": (F, [3, 4]) for n in float_ops}, outputs)
    check(model, _unary_inputs(float_ops, [3, 4]), rtol=2e-5, atol=2e-6)


_ARITH = ["Add", "Sub", "Mul", "Div", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]
BINARY_BY_DTYPE = {"float32": _ARITH, "int32": _ARITH + ["BitwiseAnd", "BitwiseOr", "BitwiseXor"],
                   "bool": ["And", "Or", "Xor", "Equal"]}


@pytest.mark.parametrize("dtype", list(BINARY_BY_DTYPE))
def test_binary_table_ops_in_one_graph(dtype):
    """Integer Div rounds towards zero, as ONNX (C) does; broadcasting (3, 1) against (2, 3, 4)."""
    names = BINARY_BY_DTYPE[dtype]
    assert set(names) <= {n for row in BINARY for n in row.onnx}
    nodes = [helper.make_node(n, ["a", "b"], [f"y_{n}"]) for n in names]
    comparisons = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}
    outputs = {f"y_{n}": ("bool" if n in comparisons else dtype, [2, 3, 4]) for n in names}
    check(model_of(nodes, {"a": (dtype, [2, 3, 4]), "b": (dtype, [3, 1])}, outputs))


def test_every_table_onnx_name_is_converted():
    assert {n for row in UNARY + BINARY for n in row.onnx} <= set(CONVERTERS)


ACTIVATIONS = [
    ("Relu", {}), ("LeakyRelu", {"alpha": 0.2}), ("Elu", {"alpha": 0.7}), ("Selu", {}), ("Celu", {"alpha": 1.5}),
    ("Softplus", {}), ("Softsign", {}), ("Mish", {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
    ("HardSwish", {}), ("ThresholdedRelu", {"alpha": 0.5}), ("Shrink", {"lambd": 0.6, "bias": 0.2}),
    ("Gelu", {}), ("Gelu", {"approximate": "tanh"}), ("Reciprocal", {}), ("Identity", {}),
]


def test_activations_in_one_graph():
    nodes = [helper.make_node(op, ["x"], [f"y{k}"], **attrs) for k, (op, attrs) in enumerate(ACTIVATIONS)]
    model = model_of(nodes, {"x": (F, [2, 3, 5])}, {f"y{k}": (F, [2, 3, 5]) for k in range(len(ACTIVATIONS))},
                     opset=20)
    check(model, rtol=1e-5, atol=1e-6)


def test_variadic_pow_mod_prelu_where_isinf():
    nodes = [helper.make_node("Sum", ["a", "b", "c"], ["sum"]), helper.make_node("Max", ["a", "b", "c"], ["max"]),
             helper.make_node("Min", ["a", "b"], ["min"]), helper.make_node("Mean", ["a", "b", "c"], ["mean"]),
             helper.make_node("Abs", ["a"], ["abs_a"]), helper.make_node("Pow", ["abs_a", "b"], ["pow"]),
             helper.make_node("Mod", ["a", "b"], ["fmod"], fmod=1),
             helper.make_node("PRelu", ["a", "slope"], ["prelu"]),
             helper.make_node("Greater", ["a", "b"], ["gt"]), helper.make_node("Where", ["gt", "a", "c"], ["where"]),
             helper.make_node("Div", ["a", "zero"], ["inf"]),
             helper.make_node("IsInf", ["inf"], ["isinf"], detect_negative=0)]
    f = (F, [2, 4])
    model = model_of(nodes, {"a": f, "b": f, "c": (F, [4])},
                     {n: f for n in ("sum", "max", "min", "mean", "pow", "fmod", "prelu", "where")}
                     | {"isinf": ("bool", [2, 4])},
                     [init("slope", np.array([0.1, 0.2, 0.3, 0.4], F)), init("zero", np.array([0.0], F))])
    check(model)


def test_integer_mod_and_bitshift():
    nodes = [helper.make_node("Mod", ["a", "b"], ["m"]), helper.make_node("Mod", ["a", "b"], ["fm"], fmod=1),
             helper.make_node("Abs", ["a"], ["ua"]), helper.make_node("Cast", ["ua"], ["u"], to=12),
             helper.make_node("BitShift", ["u", "s"], ["l"], direction="LEFT"),
             helper.make_node("BitShift", ["u", "s"], ["r"], direction="RIGHT")]
    model = model_of(nodes, {"a": ("int32", [6]), "b": ("int32", [6])},
                     {"m": ("int32", [6]), "fm": ("int32", [6]), "l": ("uint32", [6]), "r": ("uint32", [6])},
                     [init("s", np.array([0, 1, 2, 3, 1, 2], "uint32"))])
    check(model)


@pytest.mark.parametrize("opset", [6, 13])
def test_clip(opset):
    if opset >= 11:
        check_node("Clip", {"x": (F, [3, 4])}, {"y": (F, [3, 4])}, opset=opset,
                   initializers=[init("lo", np.array(-0.5, F)), init("hi", np.array(0.8, F))])
        check_node("Clip", {"x": (F, [3, 4])}, {"y": (F, [3, 4])}, opset=opset, node_inputs=["x", "", "hi"],
                   initializers=[init("hi", np.array(0.8, F))])
    else:
        check_node("Clip", {"x": (F, [3, 4])}, {"y": (F, [3, 4])}, {"min": -0.5, "max": 0.8}, opset=opset)


def test_cast_and_dropout():
    nodes = [helper.make_node("Cast", ["x"], ["i"], to=6), helper.make_node("Dropout", ["x"], ["d", "mask"]),
             helper.make_node("CastLike", ["i", "x"], ["back"])]
    check(model_of(nodes, {"x": (F, [2, 5])},
                   {"i": ("int32", [2, 5]), "d": (F, [2, 5]), "mask": ("bool", [2, 5]), "back": (F, [2, 5])}))


# -- matrix products, convolution, pooling --------------------------------------------------------

def test_matmul_batched_and_broadcast():
    check_node("MatMul", {"a": (F, [2, 3, 4]), "b": (F, [4, 5])}, {"y": (F, [2, 3, 5])})


@pytest.mark.parametrize("attrs", [{}, {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}])
def test_gemm(attrs):
    a = [4, 3] if attrs else [3, 4]
    b = [5, 4] if attrs else [4, 5]
    check_node("Gemm", {"a": (F, a), "b": (F, b), "c": (F, [5])}, {"y": (F, [3, 5])}, attrs)


CONVS = [
    ({"pads": [1, 1, 1, 1]}, [1, 4, 7, 7], [6, 4, 3, 3], [1, 6, 7, 7]),
    ({"strides": [2, 2], "group": 2, "dilations": [1, 2]}, [2, 4, 9, 9], [6, 2, 3, 3], [2, 6, 4, 3]),
    ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, [1, 3, 8, 7], [4, 3, 4, 4], [1, 4, 4, 4]),
    ({"auto_pad": "SAME_LOWER"}, [1, 3, 6, 6], [4, 3, 2, 2], [1, 4, 6, 6]),
    ({"pads": [2, 1]}, [2, 3, 10], [4, 3, 3], [2, 4, 11]),
]


@pytest.mark.parametrize("attrs, x, w, y", CONVS)
def test_conv(attrs, x, w, y):
    rng = np.random.default_rng(1)
    check_node("Conv", {"x": (F, x)}, {"y": (F, y)}, attrs, atol=1e-4,
               initializers=[init("w", rng.standard_normal(w).astype(F)),
                             init("b", rng.standard_normal(w[0]).astype(F))])


@pytest.mark.parametrize("attrs, y", [
    ({"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}, [1, 4, 10, 10]),
    ({"strides": [2, 2], "output_shape": [11, 11]}, [1, 4, 11, 11])])
def test_conv_transpose(attrs, y):
    rng = np.random.default_rng(2)
    check_node("ConvTranspose", {"x": (F, [1, 3, 5, 5])}, {"y": (F, y)}, attrs, atol=1e-4,
               initializers=[init("w", rng.standard_normal([3, 4, 3, 3]).astype(F))])


POOLS = [
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, [1, 2, 5, 5]),
    ("MaxPool", {"kernel_shape": [2, 2], "ceil_mode": 1, "strides": [2, 2]}, [1, 2, 3, 3]),
    ("MaxPool", {"kernel_shape": [3], "auto_pad": "SAME_UPPER"}, [1, 2, 7]),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, [1, 2, 7, 7]),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, [1, 2, 7, 7]),
]


@pytest.mark.parametrize("op, attrs, y", POOLS)
def test_pools(op, attrs, y):
    x = [1, 2, 7] if len(y) == 3 else [1, 2, 5, 5] if y[2] == 3 else [1, 2, 7, 7] if y[2] == 7 else [1, 2, 9, 9]
    if op == "MaxPool" and y == [1, 2, 5, 5]:
        x = [1, 2, 9, 9]
    check_node(op, {"x": (F, x)}, {"y": (F, y)}, attrs)


def test_global_pools_batchnorm_instancenorm():
    rng = np.random.default_rng(3)
    c = 3
    stats = [init(n, rng.uniform(0.5, 1.5, c).astype(F)) for n in ("scale", "bias", "mean", "var")]
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["gap"]), helper.make_node("GlobalMaxPool", ["x"], ["gmp"]),
             helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["bn"], epsilon=1e-3),
             helper.make_node("InstanceNormalization", ["x", "scale", "bias"], ["inorm"])]
    shape = [2, c, 4, 5]
    check(model_of(nodes, {"x": (F, shape)}, {"gap": (F, [2, c, 1, 1]), "gmp": (F, [2, c, 1, 1]),
                                              "bn": (F, shape), "inorm": (F, shape)}, stats), atol=1e-5)


def test_layer_normalization_with_statistics():
    rng = np.random.default_rng(4)
    check_node("LayerNormalization", {"x": (F, [2, 3, 4])},
               {"y": (F, [2, 3, 4]), "mean": (F, [2, 1, 1]), "inv": (F, [2, 1, 1])}, {"axis": 1, "epsilon": 1e-3},
               initializers=[init("s", rng.standard_normal([3, 4]).astype(F)),
                             init("b", rng.standard_normal([3, 4]).astype(F))])


@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_and_log_softmax(opset):
    nodes = [helper.make_node("Softmax", ["x"], ["s"], axis=1), helper.make_node("LogSoftmax", ["x"], ["l"])]
    check(model_of(nodes, {"x": (F, [2, 3, 4])}, {"s": (F, [2, 3, 4]), "l": (F, [2, 3, 4])}, opset=opset))


# -- manipulation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", [11, 13])
def test_shape_ops_across_opsets(opset):
    """Reshape (0 and -1), Squeeze / Unsqueeze (axes as attribute before 13, input from 13),
    Split (sizes likewise), Transpose, Flatten, Concat."""
    i64 = lambda name, v: init(name, np.array(v, "int64"))  # noqa: E731
    axes = {} if opset >= 13 else {"axes": [0, 3]}
    sq_in = ["x4", "ax"] if opset >= 13 else ["x4"]
    split_attrs = {"axis": 1} if opset >= 13 else {"axis": 1, "split": [1, 3]}
    split_in = ["x", "sizes"] if opset >= 13 else ["x"]
    nodes = [helper.make_node("Reshape", ["x", "target"], ["r"]),
             helper.make_node("Unsqueeze", ["x"] + (["ax"] if opset >= 13 else []), ["x4"], **axes),
             helper.make_node("Squeeze", sq_in, ["sq"], **axes),
             helper.make_node("Split", split_in, ["p0", "p1"], **split_attrs),
             helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
             helper.make_node("Flatten", ["x"], ["f"], axis=2),
             helper.make_node("Concat", ["x", "x"], ["c"], axis=-1)]
    model = model_of(nodes, {"x": (F, [2, 4, 3])},
                     {"r": (F, [2, 3, 4]), "x4": (F, [1, 2, 4, 1, 3]), "sq": (F, [2, 4, 3]), "p0": (F, [2, 1, 3]),
                      "p1": (F, [2, 3, 3]), "t": (F, [3, 2, 4]), "f": (F, [8, 3]), "c": (F, [2, 4, 6])},
                     [i64("target", [0, -1, 4]), i64("ax", [0, 3]), i64("sizes", [1, 3])], opset=opset)
    check(model)


def test_split_equal_parts_opset18():
    check_node("Split", {"x": (F, [7, 2])}, {"a": (F, [3, 2]), "b": (F, [3, 2]), "c": (F, [1, 2])},
               {"num_outputs": 3})


@pytest.mark.parametrize("opset", [9, 13])
def test_slice(opset):
    if opset < 10:
        check_node("Slice", {"x": (F, [5, 6])}, {"y": (F, [3, 4])},
                   {"starts": [1, -5], "ends": [4, 100], "axes": [0, 1]}, opset=opset)
        return
    i64 = lambda name, v: init(name, np.array(v, "int64"))  # noqa: E731
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"]),
             helper.make_node("Slice", ["x", "s2", "e2", "a2", "st2"], ["rev"])]
    check(model_of(nodes, {"x": (F, [5, 6, 4])}, {"y": (F, [5, 2, 2]), "rev": (F, [3, 6, 4])},
                   [i64("s", [1, -1]), i64("e", [6, -5]), i64("a", [1, 2]), i64("st", [3, -2]),
                    i64("s2", [-1]), i64("e2", [-9223372036854775807]), i64("a2", [0]), i64("st2", [-2])],
                   opset=opset))


def test_gather_expand_tile_pad_modes():
    i64 = lambda name, v: init(name, np.array(v, "int64"))  # noqa: E731
    nodes = [helper.make_node("Gather", ["x", "idx"], ["g"], axis=1),
             helper.make_node("GatherElements", ["x", "gi"], ["ge"], axis=2),
             helper.make_node("Expand", ["col", "eshape"], ["ex"]),
             helper.make_node("Tile", ["x", "reps"], ["ti"]),
             helper.make_node("Pad", ["x", "pads", "val"], ["pc"]),
             helper.make_node("Pad", ["x", "pads"], ["pe"], mode="edge"),
             helper.make_node("Pad", ["x", "pads"], ["pr"], mode="reflect"),
             helper.make_node("Pad", ["x", "crop"], ["pcrop"])]
    gi = np.random.default_rng(5).integers(0, 4, size=[2, 3, 2])
    model = model_of(nodes, {"x": (F, [2, 3, 4]), "col": (F, [3, 1])},
                     {"g": (F, [2, 2, 2, 4]), "ge": (F, [2, 3, 2]), "ex": (F, [2, 3, 5]), "ti": (F, [2, 6, 4]),
                      "pc": (F, [2, 6, 7]), "pe": (F, [2, 6, 7]), "pr": (F, [2, 6, 7]), "pcrop": (F, [2, 2, 4])},
                     [i64("idx", [[0, -1], [2, 1]]), i64("gi", gi), i64("eshape", [2, 1, 5]), i64("reps", [1, 2, 1]),
                      i64("pads", [0, 2, 1, 0, 1, 2]), init("val", np.array(0.5, F)),
                      i64("crop", [0, -1, 0, 0, 0, 1])])
    check(model)


def test_pad_opset2_attributes():
    check_node("Pad", {"x": (F, [2, 3])}, {"y": (F, [3, 6])}, {"pads": [1, 2, 0, 1], "value": 1.5}, opset=2,
               atol=0)


def test_constants_shape_arithmetic_and_range():
    """Constant, Shape, Gather on a shape, ConstantOfShape, Range, Equal / Where on known
    values, Size: what exporters emit around a Reshape."""
    nodes = [helper.make_node("Constant", [], ["two"], value_int=2),
             helper.make_node("Shape", ["x"], ["shp"]),
             helper.make_node("Gather", ["shp", "zero_s"], ["n"], axis=0),
             helper.make_node("Mul", ["n", "two"], ["n2"]),
             helper.make_node("Unsqueeze", ["n2", "zero"], ["n2v"]),
             helper.make_node("Concat", ["n2v", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["r"]),
             helper.make_node("ConstantOfShape", ["shp"], ["ones"], value=helper.make_tensor("v", 1, [1], [1.5])),
             helper.make_node("Add", ["x", "ones"], ["xo"]),
             helper.make_node("Range", ["zero_s", "n2", "one_s"], ["rng"]),
             helper.make_node("Size", ["x"], ["size"]),
             helper.make_node("Equal", ["shp", "three"], ["eq"]),
             helper.make_node("Where", ["eq", "shp", "three"], ["wh"])]
    i64 = lambda name, v: init(name, np.array(v, "int64"))  # noqa: E731
    model = model_of(nodes, {"x": (F, [4, 3, 2])},
                     {"r": (F, [8, 3]), "xo": (F, [4, 3, 2]), "rng": ("int64", [8]), "size": ("int64", []),
                      "wh": ("int64", [3])},
                     [i64("zero", [0]), i64("minus1", [-1]), i64("zero_s", 0), i64("one_s", 1),
                      i64("three", [3, 3, 3])])
    check(model)


def test_trilu_cumsum_depth_space_einsum_argmax():
    nodes = [helper.make_node("Trilu", ["x", "k"], ["up"]), helper.make_node("Trilu", ["x"], ["lo"], upper=0),
             helper.make_node("CumSum", ["x", "ax"], ["cs"], exclusive=1, reverse=1),
             helper.make_node("DepthToSpace", ["img"], ["d2s"], blocksize=2, mode="CRD"),
             helper.make_node("SpaceToDepth", ["d2s"], ["s2d"], blocksize=2),
             helper.make_node("Einsum", ["x", "x"], ["ein"], equation="ij,kj->ik"),
             helper.make_node("ArgMax", ["x"], ["am"], axis=1, keepdims=0),
             helper.make_node("ArgMin", ["x"], ["an"], axis=0, select_last_index=1)]
    model = model_of(nodes, {"x": (F, [4, 5]), "img": (F, [1, 8, 2, 3])},
                     {"up": (F, [4, 5]), "lo": (F, [4, 5]), "cs": (F, [4, 5]), "d2s": (F, [1, 2, 4, 6]),
                      "s2d": (F, [1, 8, 2, 3]), "ein": (F, [4, 4]), "am": ("int64", [4]), "an": ("int64", [1, 5])},
                     [init("k", np.array(1, "int64")), init("ax", np.array(1, "int64"))])
    check(model, atol=1e-5)


REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
          "ReduceL2", "ReduceLogSumExp"]


@pytest.mark.parametrize("opset", [11, 18])
def test_reductions_across_opsets(opset):
    """Axes are an attribute before opset 18 (13 for ReduceSum) and an input from it."""
    def node(op, out, keep):
        as_input = opset >= (13 if op == "ReduceSum" else 18)
        return helper.make_node(op, ["x", "axes"] if as_input else ["x"], [out], keepdims=keep,
                                **({} if as_input else {"axes": [0, 2]}))
    nodes = [node(op, f"{op}_{keep}", keep) for op in REDUCE for keep in (0, 1)]
    nodes.append(helper.make_node("ReduceMean", ["x"], ["all"], keepdims=0))
    outputs = {f"{op}_{keep}": (F, [1, 3, 1] if keep else [3]) for op in REDUCE for keep in (0, 1)}
    x = {"x": np.abs(random_inputs(model_of([], {"x": (F, [2, 3, 4])}, {}))["x"])}
    check(model_of(nodes, {"x": (F, [2, 3, 4])}, outputs | {"all": (F, [])},
                   [init("axes", np.array([0, 2], "int64"))], opset=opset), x, rtol=1e-5)


def test_reductions_with_no_axes_and_noop_still_map_each_element():
    # onnxruntime squares, takes abs or log of each element though it reduces nothing
    none = [init("none", np.zeros([0], "int64"))]
    nodes = [helper.make_node(op, ["x", "none"], [op], noop_with_empty_axes=1) for op in REDUCE]
    x = random_inputs(model_of([], {"x": (F, [3, 4])}, {}))  # both signs: abs shows
    check(model_of(nodes, {"x": (F, [3, 4])}, {op: (F, [3, 4]) for op in REDUCE}, none), x, rtol=1e-6)
    log_sum = helper.make_node("ReduceLogSum", ["x", "none"], ["y"], noop_with_empty_axes=1)
    check(model_of([log_sum], {"x": (F, [3, 4])}, {"y": (F, [3, 4])}, none), {"x": np.abs(x["x"])}, rtol=1e-6)


def test_integer_pow_is_exact():
    nodes = [helper.make_node("Abs", ["a"], ["ua"]), helper.make_node("Pow", ["ua", "e"], ["p"])]
    check(model_of(nodes, {"a": ("int64", [6])}, {"p": ("int64", [6])}, [init("e", np.array([0, 1, 2, 3, 4, 5]))]))


def test_more_normalizations():
    """RMSNormalization (23), GroupNormalization (per channel, 21), MeanVarianceNormalization,
    LpNormalization (p 1 and 2), LRN, Hardmax, Swish (24)."""
    rng = np.random.default_rng(6)
    shape = [2, 4, 3, 3]
    nodes = [helper.make_node("RMSNormalization", ["x", "s3"], ["rms"], axis=-1, epsilon=1e-3),
             helper.make_node("GroupNormalization", ["x", "s4", "b4"], ["gn"], num_groups=2),
             helper.make_node("MeanVarianceNormalization", ["x"], ["mvn"]),
             helper.make_node("LpNormalization", ["x"], ["l1"], axis=1, p=1),
             helper.make_node("LpNormalization", ["x"], ["l2"], axis=-1, p=2),
             helper.make_node("LRN", ["x"], ["lrn"], size=3, alpha=0.1),
             helper.make_node("Hardmax", ["x"], ["hm"], axis=1),
             helper.make_node("Swish", ["x"], ["sw"], alpha=0.7)]
    outs = {n: (F, shape) for n in ("rms", "gn", "mvn", "l1", "l2", "lrn", "hm", "sw")}
    inits = [init("s3", rng.standard_normal([3]).astype(F)), init("s4", rng.standard_normal([4]).astype(F)),
             init("b4", rng.standard_normal([4]).astype(F))]
    check(model_of(nodes, {"x": (F, shape)}, outs, inits, opset=24), rtol=1e-4, atol=1e-5)


def test_one_hot_scatter_elements():
    nodes = [helper.make_node("OneHot", ["idx", "depth", "vals"], ["oh"], axis=1),
             helper.make_node("ScatterElements", ["x", "si", "upd"], ["sc"], axis=1, reduction="add")]
    model = model_of(nodes, {"idx": ("int64", [2, 3]), "x": (F, [2, 4]), "upd": (F, [2, 2])},
                     {"oh": (F, [2, 5, 3]), "sc": (F, [2, 4])},
                     [init("depth", np.array(5)), init("vals", np.array([-1.0, 2.0], F)),
                      init("si", np.array([[0, 3], [1, 1]]))])
    inputs = random_inputs(model)
    inputs["idx"] = np.array([[0, 4, -1], [2, -5, 3]], "int64")
    check(model, inputs)


def test_cum_prod_against_numpy():
    """CumProd is opset 26, newer than onnxruntime 1.32 runs: numpy is the reference."""
    model = model_of([helper.make_node("CumProd", ["x", "ax"], ["cp"], reverse=1)], {"x": (F, [2, 4])},
                     {"cp": (F, [2, 4])}, [init("ax", np.array(1))], opset=26)
    x = random_inputs(model)["x"]
    got = tvm_run(compile_vm(from_onnx(model)), model, {"x": x})[0]
    np.testing.assert_allclose(got, np.flip(np.cumprod(np.flip(x, 1), axis=1), 1), rtol=1e-6)


@pytest.mark.parametrize("mode, coord, sizes", [("nearest", "asymmetric", [1, 2, 8, 3]),
                                                ("nearest", "half_pixel", [1, 2, 5, 7]),
                                                ("linear", "half_pixel", [1, 2, 8, 9]),
                                                ("linear", "align_corners", [1, 2, 3, 7]),
                                                ("linear", "pytorch_half_pixel", [1, 2, 1, 4])])
def test_resize(mode, coord, sizes):
    check_node("Resize", {"x": (F, [1, 2, 4, 5])}, {"y": (F, sizes)},
               {"mode": mode, "coordinate_transformation_mode": coord}, node_inputs=["x", "", "", "sizes"],
               initializers=[init("sizes", np.array(sizes, "int64"))])
    if sizes == [1, 2, 8, 3]:  # by scales too (the output is floor(size * scale))
        check_node("Resize", {"x": (F, [1, 2, 4, 5])}, {"y": (F, [1, 2, 8, 3])}, {"mode": mode},
                   node_inputs=["x", "", "scales"], initializers=[init("scales", np.array([1, 1, 2, 0.7], F))])


def test_not_bitwise_not_eye_like():
    nodes = [helper.make_node("Not", ["b"], ["nb"]), helper.make_node("BitwiseNot", ["i"], ["ni"]),
             helper.make_node("EyeLike", ["i"], ["eye"], k=1, dtype=1)]
    check(model_of(nodes, {"b": ("bool", [3, 4]), "i": ("int32", [3, 4])},
                   {"nb": ("bool", [3, 4]), "ni": ("int32", [3, 4]), "eye": (F, [3, 4])}))


def test_reductions_of_an_empty_axis_give_the_identity():
    """Sum 0, product 1, max -inf, min +inf over a size-0 axis (ONNX's empty-set rule)."""
    ops = ["ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceL2"]
    nodes = [helper.make_node(op, ["x", "axes"], [op], keepdims=k % 2) for k, op in enumerate(ops)]
    outputs = {op: (F, [2, 1, 3] if k % 2 else [2, 3]) for k, op in enumerate(ops)}
    model = model_of(nodes, {"x": (F, [2, 0, 3])}, outputs, [init("axes", np.array([1]))])
    check(model, {"x": np.zeros([2, 0, 3], F)})


@pytest.mark.parametrize("attrs", [{"kernel_shape": [2, 2], "strides": [2, 2]},
                                   {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}])
def test_max_unpool_scatters_into_zeros(attrs):
    x = np.random.default_rng(2).standard_normal([1, 2, 3, 3]).astype(F)
    stride, pads = attrs.get("strides", [1, 1])[0], sum(attrs.get("pads", [0, 0])[:2])
    out_hw = [(3 - 1) * stride + attrs["kernel_shape"][0] - pads] * 2
    # distinct flat positions inside each (n, c) plane, so no two values land on one place
    per_plane = np.random.default_rng(3).permutation(out_hw[0] * out_hw[1])[:9].reshape(3, 3)
    idx = np.stack([per_plane + c * out_hw[0] * out_hw[1] for c in range(2)])[None].astype("int64")
    check(model_of([helper.make_node("MaxUnpool", ["x", "i"], ["y"], **attrs)],
                   {"x": (F, [1, 2, 3, 3]), "i": ("int64", [1, 2, 3, 3])}, {"y": (F, [1, 2] + out_hw)}, opset=11),
          inputs={"x": x, "i": idx})


@pytest.mark.parametrize("sizes", [[2, 1, 3], None])
def test_split_of_a_symbolic_axis(sizes):
    # given sizes: a slice each; none: TVM's equal sections of the symbolic length
    inits = [] if sizes is None else [init("split", np.array(sizes, "int64"))]
    model = model_of([helper.make_node("Split", ["x"] + ([] if sizes is None else ["split"]), ["a", "b", "c"])],
                     {"x": (F, ["N", 2])}, {k: (F, [-1, 2]) for k in "abc"}, inits, opset=13)
    vm = compile_vm(from_onnx(model))
    x = {"x": random_inputs(model, sizes={"N": 6})["x"]}
    got = tvm_run(vm, model, x)
    want = np.split(x["x"], [2, 3] if sizes else 3)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_matmul_whose_reduction_length_only_the_weight_knows():
    # a is (?, ?): the loop runs over the weight's 6, the one length known while compiling
    w = np.random.default_rng(5).standard_normal([6, 5]).astype(F)
    model = model_of([helper.make_node("MatMul", ["a", "w"], ["c"])], {"a": (F, ["?", "?"])}, {"c": (F, [-1, 5])},
                     [init("w", w)])
    a = np.random.default_rng(6).standard_normal([3, 6]).astype(F)
    np.testing.assert_allclose(tvm_run(compile_vm(from_onnx(model)), model, {"a": a})[0], a @ w, rtol=1e-5)


def test_cumsum_along_an_axis_given_at_run_time():
    model = model_of([helper.make_node("CumSum", ["x", "axis"], ["y"], reverse=1, exclusive=1)],
                     {"x": (F, [2, 3, 4]), "axis": ("int32", [])}, {"y": (F, [2, 3, 4])}, opset=14)
    vm = compile_vm(from_onnx(model))
    x = random_inputs(model)["x"]
    for axis in (0, 1, -1, -2):
        inputs = {"x": x, "axis": np.array(axis, "int32")}
        np.testing.assert_allclose(tvm_run(vm, model, inputs)[0], ort_run(model, inputs)[0], rtol=1e-5, atol=1e-6)


def test_a_symbolic_size_picked_by_a_scalar_gather_shapes_a_tensor():
    # Shape -> Gather(scalar index) -> Unsqueeze -> ConstantOfShape: a (batch,) tensor of ones
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i"], ["b"]),
             helper.make_node("Unsqueeze", ["b", "axes"], ["b1"]),
             helper.make_node("ConstantOfShape", ["b1"], ["y"], value=helper.make_tensor("v", 1, [], [1.0]))]
    model = model_of(nodes, {"x": (F, ["batch", "seq"])}, {"y": (F, ["batch"])},
                     [init("i", np.array(0, "int64")), init("axes", np.array([0], "int64"))], opset=13)
    mod = from_onnx(model, keep_params_in_input=True)
    assert [d.name for d in mod["main"].body.body.struct_info.shape_values] == ["batch"]
    x = random_inputs(model, sizes={"batch": 3, "seq": 2})
    got = compile_vm(from_onnx(model))["main"](minitvm.nd.array(x["x"])).numpy()
    np.testing.assert_array_equal(got, np.ones(3, F))
