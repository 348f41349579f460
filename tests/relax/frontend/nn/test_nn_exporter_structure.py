"""The exported IR has TVM's structure (TVM's test_frontend_nn_exporter.py cases, with minitvm's
TVMScript: ``R.Object`` where TVM 0.27 prints ``R.Any``)."""

from __future__ import annotations

import pytest

from minitvm import relax, tir
from minitvm.ir import assert_structural_equal
from minitvm.relax.frontend import nn
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


def test_simple_and_custom_module():
    @I.ir_module
    class Expected:
        @R.function
        def forward(x: R.Tensor([3, 3], dtype="float32")):
            R.func_attr({"num_input": 1})
            with R.dataflow():
                relu = R.nn.relu(x)
                gv = relu
                R.output(gv)
            return gv

    class Custom(nn.Module):
        def forward(self, x: nn.Tensor):
            return nn.op.relu(x)

    for model in (nn.ReLU(), Custom()):
        mod, _ = model.export_tvm(spec={"forward": {"x": nn.spec.Tensor((3, 3), "float32")}})
        assert_structural_equal(mod, Expected)


def test_dynamic_shape_in_multiple_functions():
    class Before(nn.Module):
        def forward_relu(self, x: nn.Tensor):
            return nn.relu(x)

        def forward_silu(self, x: nn.Tensor):
            return nn.silu(x)

    mod, _ = Before().export_tvm(spec={
        "forward_relu": {"x": nn.spec.Tensor((tir.Var("batch_size", "int64"), 8), "float32")},
        "forward_silu": {"x": nn.spec.Tensor(("batch_size", 8), "float32")},
    })

    n = tir.Var("batch_size", "int64")
    assert_structural_equal(mod["forward_relu"], _one_op("forward_relu", relax.op.nn.relu, [n, 8]))
    assert_structural_equal(mod["forward_silu"], _one_op("forward_silu", relax.op.nn.silu, [n, 8]))


def _one_op(name, fn, shape):
    """What export_tvm makes of a method applying one op: the binding, then its output alias."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    with bb.function(name, [x], attrs={"num_input": 1}):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(fn(x)))
        bb.emit_func_output(out)
    return bb.get()[name]


def test_nested_module_parameters_follow_the_inputs():
    class MLP(nn.Module):
        def __init__(self, hidden: int, inter: int):
            super().__init__()
            self.gate_proj = nn.Linear(hidden, inter, dtype="float16", bias=False)
            self.up_proj = nn.Linear(hidden, inter, dtype="float16", bias=False)
            self.down_proj = nn.Linear(inter, hidden, dtype="float16", bias=False)

        def forward(self, x: nn.Tensor):
            gate = self.gate_proj(x)
            up = self.up_proj(x)
            return self.down_proj(nn.op.silu(gate) * up)

    mod, _ = MLP(64, 96).export_tvm(spec={"forward": {"x": nn.spec.Tensor(("batch_size", 64), "float16")}})

    @R.function
    def forward(x: R.Tensor(["batch_size", 64], "float16"), gate_w: R.Tensor([96, 64], "float16"),
                up_w: R.Tensor([96, 64], "float16"), down_w: R.Tensor([64, 96], "float16")):
        R.func_attr({"num_input": 1})
        batch_size = T.int64()
        with R.dataflow():
            gate: R.Tensor([batch_size, 96], "float16") = R.matmul(x, R.permute_dims(gate_w))
            up: R.Tensor([batch_size, 96], "float16") = R.matmul(x, R.permute_dims(up_w))
            down: R.Tensor([batch_size, 64], "float16") = R.matmul(R.nn.silu(gate) * up, R.permute_dims(down_w))
            gv = down
            R.output(gv)
        return gv

    assert_structural_equal(mod["forward"], forward)


def test_linear_with_a_symbolic_out_features_and_debug_effect():
    @R.function
    def forward(x: R.Tensor((1, 4), dtype="float32"), _io: R.Object, weight: R.Tensor(("n", 4), dtype="float32"),
                bias: R.Tensor(("n",), dtype="float32")) -> R.Tuple(R.Tensor((1, "n"), dtype="float32"),
                                                                    R.Tuple(R.Object)):
        n = T.int64()
        R.func_attr({"num_input": 2})
        with R.dataflow():
            permute_dims: R.Tensor((4, n), dtype="float32") = R.permute_dims(weight, axes=None)
            matmul: R.Tensor((1, n), dtype="float32") = R.matmul(x, permute_dims)
            add: R.Tensor((1, n), dtype="float32") = R.add(matmul, bias)
            gv1: R.Tuple(R.Tensor((1, n), dtype="float32"), R.Tuple(R.Object)) = add, (_io,)
            R.output(gv1)
        return gv1

    mod, _ = nn.Linear(in_features=4, out_features="n", bias=True).export_tvm(
        spec={"forward": {"x": nn.spec.Tensor((1, 4), "float32")}}, debug=True)
    assert_structural_equal(mod["forward"], forward)


@pytest.mark.parametrize("args, n_vars", [(["hidden", "hidden"], 1), (["hidden", "inter"], 2)])
def test_parameter_dims_named_alike_are_one_variable(args, n_vars):
    class Linear(nn.Module):
        def __init__(self, input_size, output_size):
            self.weights = nn.Parameter([output_size, input_size], dtype="float32")

        def forward(self, state):
            return nn.op.matmul(state, nn.op.permute_dims(self.weights))

    class Model(nn.Module):
        def __init__(self, hidden, inter):
            self.embedding = Linear(16, hidden)
            self.up = Linear(hidden, inter)

        def forward(self, state):
            return self.up(self.embedding(state))

    mod, _ = Model(*args).export_tvm(spec={"forward": {"state": nn.spec.Tensor(["batch", 16], "float32")}})
    params = mod["forward"].params
    dims = {d.name: d for p in params for d in p.struct_info.shape_values if isinstance(d, tir.Var)}
    assert len(dims) == 1 + n_vars
    # the embedding's output dim is the up projection's input dim; its output dim too when named alike
    embed_out, (up_out, up_in) = params[1].struct_info.shape_values[0], params[2].struct_info.shape_values
    assert embed_out.same_as(up_in) and up_out.same_as(up_in) == (n_vars == 1)
