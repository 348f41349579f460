"""relax.frontend.torch.from_fx: torch.fx graphs (modules, functions, methods) through the
ATen converter table, compiled and compared with torch eager."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitvm
from minitvm.relax import TensorStructInfo, TupleStructInfo
from minitvm.relax.frontend import detach_params
from minitvm.relax.frontend.torch import from_fx
from minitvm.testing import zoo

from .zoo_cache import compile_zero


def _info(*inputs):
    return [(tuple(x.shape), str(x.dtype).replace("torch.", "")) for x in inputs]


def _check(model, *inputs, **kwargs):
    model = model.eval()
    mod = from_fx(torch.fx.symbolic_trace(model), _info(*inputs), unwrap_unit_return_tuple=True, **kwargs)
    got = compile_zero(mod)["main"](*(minitvm.nd.array(x.numpy()) for x in inputs)).numpy()
    with torch.no_grad():
        want = model(*inputs).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    return mod


@pytest.mark.parametrize("name", ["mlp", "mlc_mnist", "lenet", "resnet_block", "depthwise_separable",
                                  "transformer_sdpa"])
def test_zoo_models_traced_with_fx_match_torch(name):
    m = zoo.MODELS[name]
    gm = torch.fx.symbolic_trace(m.build())
    mod = _check(gm, *m.example_inputs(2))
    assert [p.name for p in mod["main"].params] == [n.name for n in gm.graph.nodes if n.op == "placeholder"]


def test_mlp_module_types_and_keep_params_as_input():
    model = zoo.MODELS["mlp"].build()
    (x,) = zoo.MODELS["mlp"].example_inputs(1)
    mod = from_fx(torch.fx.symbolic_trace(model), [((1, 784), "float32")], keep_params_as_input=True)
    assert [p.name for p in mod["main"].params][1:] == ["0_weight", "0_bias", "2_weight", "2_bias"]
    mod, params = detach_params(mod)
    assert [a.shape for a in params["main"]] == [(256, 784), (256,), (10, 256), (10,)]
    got = compile_zero(mod)["main"](minitvm.nd.array(x.numpy()), *map(minitvm.nd.array, params["main"]))
    with torch.no_grad():
        np.testing.assert_allclose(got.numpy(), model(x).numpy(), rtol=1e-4, atol=1e-5)


class Functional(torch.nn.Module):
    """Functions and methods rather than modules; sizes read from the input at trace time."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(12, 6))

    def forward(self, x):
        h = x.view(x.size(0), -1)                      # size() is a Python value, not a tensor
        a, b = h.chunk(2, dim=1)
        y = torch.nn.functional.gelu(a @ self.w[:6].t() + b.mul(0.5).sum(dim=1, keepdim=True))
        y = y.permute(1, 0).transpose(0, 1).contiguous()
        z = torch.softmax(torch.cat([y, -y], dim=1) / 2.0, dim=-1).unsqueeze(0).mean(0)
        return z[:, None, ::2] + x[..., -1, 1:3].sum(-1)[:, None, None] + z[-1, 1:4].sum() * z[1, ::2]


def test_functions_methods_python_sizes_and_chunks():
    torch.manual_seed(1)
    _check(Functional(), torch.randn(3, 3, 4))


def test_unsupported_calls_are_listed_together_before_conversion():
    class Bad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up = torch.nn.Upsample(scale_factor=2)

        def forward(self, x):
            return torch.cumsum(self.up(x), dim=1).flip(0)

    with pytest.raises(ValueError) as info:
        from_fx(torch.fx.symbolic_trace(Bad()), [((1, 2, 3, 3), "float32")])
    lines = str(info.value).splitlines()
    assert lines[0] == "from_fx: unsupported operators:"
    assert lines[1] == "  call_module torch.nn.modules.upsampling.Upsample (up)"
    assert lines[2].startswith("  call_function torch.cumsum (node cumsum")
    assert lines[3] == "  call_method 'flip' (node flip)"


def test_one_index_tensor_gathers_rows_and_mixed_indices_are_listed_as_unsupported():
    class Gather(torch.nn.Module):
        def forward(self, x, i):
            return torch.relu(x)[i] + x[:, :2].sum()

    gen = torch.Generator().manual_seed(3)
    _check(Gather(), torch.randn(4, 3, generator=gen), torch.tensor([3, 0, 3, 1]))

    class Mixed(torch.nn.Module):
        def forward(self, x, i):
            return x[i, 0]

    with pytest.raises(ValueError) as info:
        from_fx(torch.fx.symbolic_trace(Mixed()), [((4, 3), "float32"), ((2,), "int64")])
    assert str(info.value) == ("from_fx: unsupported operators:\n  call_function _operator.getitem (node getitem): "
                               "indexing a tensor with i is not supported (only ints, constant slices, None and ...); "
                               "use from_exported_program")


def test_wrong_input_info_and_symbolic_dims_are_errors():
    gm = torch.fx.symbolic_trace(zoo.MODELS["mlp"].build())
    with pytest.raises(ValueError, match="takes 1 inputs .* input_info describes 2"):
        from_fx(gm, [((1, 784), "float32")] * 2)
    with pytest.raises(ValueError, match="has a symbolic dim"):
        from_fx(gm, [(("n", 784), "float32")])
    with pytest.raises(ValueError, match="BatchNorm in training mode"):
        from_fx(torch.nn.Sequential(torch.nn.BatchNorm2d(2)).train(), [((1, 2, 3, 3), "float32")])


def test_no_bind_return_tuple_returns_a_tuple_of_output_variables():
    from minitvm.relax.expr import Tuple as RelaxTuple

    class Pair(torch.nn.Module):
        def forward(self, x, y):
            return x - y, x * y

    rng = np.random.default_rng(8)
    x, y = (rng.standard_normal((3, 4)).astype("float32") for _ in range(2))
    mod = from_fx(torch.fx.symbolic_trace(Pair()), [((3, 4), "float32")] * 2, no_bind_return_tuple=True)
    assert isinstance(mod["main"].body.body, RelaxTuple)
    assert "num_input" not in mod["main"].attrs
    vm = minitvm.relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())
    got = vm["main"](minitvm.nd.array(x), minitvm.nd.array(y))
    np.testing.assert_allclose(got[0].numpy(), x - y, rtol=1e-6)
    np.testing.assert_allclose(got[1].numpy(), x * y, rtol=1e-6)


def test_a_single_tensor_output_is_returned_as_it_is():
    # as TVM: an fx graph that returns one tensor gives a function returning that tensor;
    # only a returned tuple (or list) becomes a Relax tuple
    class Twice(torch.nn.Module):
        def forward(self, x):
            return x * 2.0

    class Pair(torch.nn.Module):
        def forward(self, x):
            return (x * 2.0,)

    single = from_fx(torch.fx.symbolic_trace(Twice()), [((2, 3), "float32")])
    assert isinstance(single["main"].ret_struct_info, TensorStructInfo)
    pair = from_fx(torch.fx.symbolic_trace(Pair()), [((2, 3), "float32")])
    assert isinstance(pair["main"].ret_struct_info, TupleStructInfo)
    x = np.random.default_rng(3).standard_normal((2, 3)).astype("float32")
    np.testing.assert_allclose(compile_zero(single)["main"](minitvm.nd.array(x)).numpy(), x * 2.0)


def test_custom_convert_map_keyed_as_in_tvm_by_function_method_and_module_type():
    """TVM's from_fx looks custom converters up by the called function's name, the method's
    name or the module's type, and calls them with the fx node and the importer."""
    from minitvm import relax

    class Scale2(torch.nn.Module):
        def forward(self, x):
            return x * 2

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = Scale2()

        def forward(self, x):
            return self.scale(torch.log1p(x)).square()

    def log1p(node, importer):
        x = importer.arg(node.args[0])
        return importer.bb.emit(relax.op.log(relax.op.add(x, importer.scalar(1.0, x))))

    def square(node, importer):
        x = importer.arg(node.args[0])
        return importer.bb.emit(relax.op.multiply(x, x))

    def scale2(node, importer):  # x + x, so that the op list shows this converter ran
        x = importer.arg(node.args[0])
        return importer.bb.emit(relax.op.add(x, x))

    class LeafScale2(torch.fx.Tracer):  # keep self.scale a call_module node
        def is_leaf_module(self, m, qualname):
            return isinstance(m, Scale2) or super().is_leaf_module(m, qualname)

    net = Net().eval()
    gm = torch.fx.GraphModule(net, LeafScale2().trace(net))
    x = torch.rand(3, 5)
    mod = from_fx(gm, _info(x), unwrap_unit_return_tuple=True,
                  custom_convert_map={"log1p": log1p, "square": square, Scale2: scale2})
    got = compile_zero(mod)["main"](minitvm.nd.array(x.numpy())).numpy()
    np.testing.assert_allclose(got, net(x).numpy(), rtol=1e-5, atol=1e-6)
    ops = [b.value.op.name for b in mod["main"].body.blocks[0].bindings if isinstance(b.value, relax.Call)]
    assert ops == ["relax.add", "relax.log", "relax.add", "relax.multiply"]


def test_from_fx_default_image_layout_other_than_nchw_is_refused_by_name():
    model = torch.nn.Sequential(torch.nn.ReLU())
    mod = from_fx(model, [((1, 4), "float32")], default_image_layout="NCHW")
    assert "main" in mod
    with pytest.raises(NotImplementedError, match="default_image_layout='NHWC'"):
        from_fx(model, [((1, 4), "float32")], default_image_layout="NHWC")
