"""Every Relax operator prints as ``R.<op>(args, attr=value, ...)`` and parses back.

The printer writes an op's attributes as keyword arguments named like the attributes, so
an op builder whose parameters are named like its attributes (TVM's convention) round-trips
with no printer code of its own; this table checks that for the op library.
"""

from __future__ import annotations

import pytest

from minitvm import ir, relax
from minitvm.relax import op
from minitvm.script import from_source
from minitvm.script import relax as R

CASES = {
    "permute_dims": (lambda x: op.permute_dims(x, [1, 0]), [(2, 3)]),
    "reshape": (lambda x: op.reshape(x, (3, 2)), [(2, 3)]),
    "flatten": (lambda x: op.flatten(x), [(2, 3)]),
    "expand_dims": (lambda x: op.expand_dims(x, 1), [(2, 3)]),
    "squeeze": (lambda x: op.squeeze(x, [0]), [(1, 3)]),
    "concat": (lambda x, y: op.concat([x, y], axis=1), [(2, 3), (2, 3)]),
    "split": (lambda x: op.split(x, [1], axis=1), [(2, 3)]),
    "broadcast_to": (lambda x: op.broadcast_to(x, (4, 3)), [(1, 3)]),
    "sum": (lambda x: op.sum(x, axis=1, keepdims=True), [(2, 3)]),
    "mean": (lambda x: op.mean(x), [(2, 3)]),
    "argmax": (lambda x: op.argmax(x, 1), [(2, 3)]),
    "astype": (lambda x: op.astype(x, "float16"), [(2, 3)]),
    "take": (lambda x: op.take(x, relax.const([0, 1], "int64"), axis=0), [(2, 3)]),
    "strided_slice": (lambda x: op.strided_slice(x, axes=[1], begin=[0], end=[2]), [(2, 3)]),
    "zeros": (lambda x: op.zeros((2, 3), "float32"), [(2, 3)]),
    "full": (lambda x: op.full((2, 3), relax.const(1.0, "float32")), [(2, 3)]),
    "arange": (lambda x: op.arange(0, 4, 1), [(2, 3)]),
    "where": (lambda x: op.where(op.greater(x, x), x, x), [(2, 3)]),
    "linear": (lambda x, w: op.linear(x, w), [(2, 3), (4, 3)]),
    "matmul": (lambda x, w: op.matmul(x, w, out_dtype="float32"), [(2, 3), (3, 4)]),
    "nn.softmax": (lambda x: op.nn.softmax(x, axis=1), [(2, 3)]),
    "nn.layer_norm": (lambda x, g, b: op.nn.layer_norm(x, g, b, axes=[-1]), [(2, 3), (3,), (3,)]),
    "nn.conv2d": (lambda x, w: op.nn.conv2d(x, w, padding=(1, 1)), [(1, 3, 8, 8), (4, 3, 3, 3)]),
    "nn.max_pool2d": (lambda x: op.nn.max_pool2d(x, (2, 2), (2, 2)), [(1, 3, 8, 8)]),
    "nn.pad": (lambda x: op.nn.pad(x, [0, 0, 1, 1]), [(2, 3)]),
    "ewise_fma": (lambda x: op.ewise_fma(x, x, x), [(2, 3)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_round_trip(name):
    build, shapes = CASES[name]
    params = [relax.Var(f"p{i}", relax.TensorStructInfo(s, "float32")) for i, s in enumerate(shapes)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(build(*params))
        bb.emit_func_output(gv)
    func = bb.get()["main"]
    text = func.script()
    assert f"R.{name}(" in text or name == "linear"  # linear is matmul (+ permute_dims) in Relax
    ir.assert_structural_equal(func, from_source(text))


def test_every_op_is_reachable_through_R():
    for name in op.__all__:
        if name in ("nn", "OpPattern", "register"):
            continue
        assert getattr(R, name) is not None
    for name in getattr(op.nn, "__all__", []):
        assert getattr(R.nn, name) is getattr(op.nn, name)
