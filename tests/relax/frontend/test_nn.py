"""relax.frontend.nn: models as nn.Module classes, exported to Relax, compiled, run on the VM."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import assert_structural_equal
from minitvm.relax.frontend import detach_params, nn


def _compile(mod):
    mod = relax.get_pipeline("zero")(mod)
    ex = minitvm.compile(mod, minitvm.target.Target("llvm"))
    return relax.VirtualMachine(ex, minitvm.cpu())


def _random_params(param_spec, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(p.shape) * 0.1).astype(p.dtype) for _, p in param_spec]


class MLPModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(self.relu1(self.fc1(x)))


def _mlp_reference(x, w1, b1, w2, b2):
    return np.maximum(x @ w1.T + b1, 0) @ w2.T + b2


def test_tvm_quick_start_verbatim(capsys):
    # TVM's quick start with only the import changed
    import numpy as np  # noqa: F811

    import minitvm
    from minitvm import relax
    from minitvm.relax.frontend import nn

    class MLPModel(nn.Module):
        def __init__(self):
            super(MLPModel, self).__init__()
            self.fc1 = nn.Linear(784, 256)
            self.relu1 = nn.ReLU()
            self.fc2 = nn.Linear(256, 10)

        def forward(self, x):
            x = self.fc1(x)
            x = self.relu1(x)
            x = self.fc2(x)
            return x

    mod, param_spec = MLPModel().export_tvm(
        spec={"forward": {"x": nn.spec.Tensor((1, 784), "float32")}}
    )
    mod.show()
    mod = relax.get_pipeline("zero")(mod)
    target = minitvm.target.Target("llvm")
    ex = minitvm.compile(mod, target)
    device = minitvm.cpu()
    vm = relax.VirtualMachine(ex, device)
    data = np.random.rand(1, 784).astype("float32")
    tvm_data = minitvm.nd.array(data, device=device)
    params = [np.random.rand(*param.shape).astype("float32") for _, param in param_spec]
    params = [minitvm.nd.array(param, device=device) for param in params]
    out = vm["forward"](tvm_data, *params).numpy()

    assert "def forward(x: R.Tensor((1, 784)" in capsys.readouterr().out
    want = _mlp_reference(data, *[p.numpy() for p in params])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    # numpy arrays are accepted as arguments too (the VM converts them)
    again = vm["forward"](data, *[p.numpy() for p in params]).numpy()
    np.testing.assert_array_equal(again, out)


def test_dynamic_batch_runs_at_batch_1_and_7():
    mod, param_spec = MLPModel().export_tvm(spec={"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}})
    assert 'x: R.Tensor(("n", 784), dtype="float32")' in mod.script()
    vm = _compile(mod)
    params = _random_params(param_spec)
    for batch in (1, 7):
        x = np.random.default_rng(batch).standard_normal((batch, 784)).astype("float32")
        out = vm["forward"](minitvm.nd.array(x), *[minitvm.nd.array(p) for p in params]).numpy()
        assert out.shape == (batch, 10)
        np.testing.assert_allclose(out, _mlp_reference(x, *params), rtol=1e-4, atol=1e-4)


def test_parameters_in_definition_order_with_dotted_names():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(8)
            self.proj = nn.Linear(8, 8, bias=False)

        def forward(self, x):
            return self.proj(self.norm(x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(16, 8)
            self.layers = nn.ModuleList([Block(), Block()])
            self.scale = nn.Parameter((8,), "float32")

        def forward(self, ids):
            h = self.embed(ids)
            for layer in self.layers:
                h = layer(h)
            return h * self.scale

    net = Net()
    names = [n for n, _ in net.named_parameters()]
    # TVM's order: attributes as assigned, each submodule depth first
    assert names == ["embed.weight", "layers.0.norm.weight", "layers.0.norm.bias",
                     "layers.0.proj.weight", "layers.1.norm.weight", "layers.1.norm.bias",
                     "layers.1.proj.weight", "scale"]
    assert [p.shape for p in net.parameters()][:3] == [[16, 8], [8], [8]]
    mod, param_spec = net.export_tvm(spec={"forward": {"ids": nn.spec.Tensor((5,), "int64")}})
    assert [n for n, _ in param_spec] == names
    func = mod["forward"]
    assert [p.name for p in func.params] == ["ids"] + [n.replace(".", "_") for n in names]
    assert func.attrs["num_input"] == 1

    # and it computes what numpy does
    vm = _compile(mod)
    params = _random_params(param_spec, seed=3)
    ids = np.array([0, 3, 15, 3, 7], dtype="int64")
    got = vm["forward"](minitvm.nd.array(ids), *[minitvm.nd.array(p) for p in params]).numpy()
    p = dict(zip(names, params))

    def ln(x, w, b):
        mu = x.mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b

    h = p["embed.weight"][ids]
    for i in range(2):
        h = ln(h, p[f"layers.{i}.norm.weight"], p[f"layers.{i}.norm.bias"]) @ p[f"layers.{i}.proj.weight"].T
    np.testing.assert_allclose(got, h * p["scale"], rtol=1e-4, atol=1e-5)


def test_conv2d_relu_layernorm_model_matches_numpy():
    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(3, 4, kernel_size=3, stride=1, padding=1)
            self.relu = nn.ReLU()
            self.norm = nn.LayerNorm(6, eps=1e-5)

        def forward(self, x):
            return self.norm(self.relu(self.conv(x)))

    mod, param_spec = ConvNet().export_tvm(spec={"forward": {"x": nn.spec.Tensor((2, 3, 6, 6), "float32")}})
    assert [n for n, _ in param_spec] == ["conv.weight", "conv.bias", "norm.weight", "norm.bias"]
    assert param_spec[0][1].shape == [4, 3, 3, 3]
    vm = _compile(mod)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 6, 6)).astype("float32")
    w, b, g, beta = _random_params(param_spec, seed=1)
    got = vm["forward"](minitvm.nd.array(x), *map(minitvm.nd.array, (w, b, g, beta))).numpy()

    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((2, 4, 6, 6), "float32")
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 6, j:j + 6], w[:, :, i, j])
    y = np.maximum(conv + b[None, :, None, None], 0)
    mu, var = y.mean(-1, keepdims=True), y.var(-1, keepdims=True)
    want = (y - mu) / np.sqrt(var + 1e-5) * g + beta
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_activations_rmsnorm_and_tensor_arithmetic():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.RMSNorm(6, epsilon=1e-6, bias=False)
            self.seq = nn.Sequential(nn.Linear(6, 6), nn.GELU(), nn.Linear(6, 6), nn.SiLU())

        def forward(self, x, y):
            return self.seq(self.norm(x)) * 2.0 + (x - y) - 1.0

    mod, param_spec = Net().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 6), "float32"),
                                                          "y": nn.spec.Tensor((1, 6), "float32")}})
    assert [n for n, _ in param_spec] == ["norm.weight", "seq.0.weight", "seq.0.bias", "seq.2.weight", "seq.2.bias"]
    text = mod.script()
    for op in ("R.nn.gelu", "R.nn.silu", "R.nn.rms_norm", "R.subtract"):
        assert op in text
    vm = _compile(mod)
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((1, 6)).astype("float32") for _ in range(2))
    g, w0, b0, w1, b1 = _random_params(param_spec, seed=2)
    got = vm["forward"](*map(minitvm.nd.array, (x, y, g, w0, b0, w1, b1))).numpy()

    from math import erf
    gelu = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))))
    h = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g
    h = gelu(h @ w0.T + b0) @ w1.T + b1
    h = h / (1 + np.exp(-h))
    np.testing.assert_allclose(got, h * 2 + (x - y) - 1, rtol=1e-4, atol=1e-5)


def test_printed_ir_names_the_ops_and_parses_back():
    mod, _ = MLPModel().export_tvm(spec={"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}})
    text = mod.script()
    for op in ("R.matmul", "R.permute_dims", "R.add", "R.nn.relu", "with R.dataflow()", "R.output(gv)"):
        assert op in text
    assert "call_tir" not in text  # high-level ops: LegalizeOps lowers them later
    back = minitvm.script.from_source(text)
    assert_structural_equal(back, mod)


def test_two_functions_in_one_spec_share_the_parameters():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(x)

        def twice(self, x):
            return self.fc(x) + self.fc(x)

    spec = {"forward": {"x": nn.spec.Tensor(("n", 4), "float32")},
            "twice": {"x": nn.spec.Tensor((2, 4), "float32")}}
    mod, param_spec = Net().export_tvm(spec=spec)
    assert sorted(mod.keys()) == ["forward", "twice"]
    vm = _compile(mod)
    x = np.ones((2, 4), "float32")
    w, b = _random_params(param_spec)
    one = vm["forward"](*map(minitvm.nd.array, (x, w, b))).numpy()
    two = vm["twice"](*map(minitvm.nd.array, (x, w, b))).numpy()
    np.testing.assert_allclose(two, 2 * one, rtol=1e-6)


def test_parameter_data_and_detach_params():
    p = nn.Parameter((2, 3), "float32")
    assert p.data is None
    p.data = np.ones((2, 3), "float32")
    assert p.data.shape == (2, 3)
    with pytest.raises(ValueError, match="shape"):
        p.data = np.ones((3, 2), "float32")
    with pytest.raises(ValueError, match="dtype"):
        p.data = np.ones((2, 3), "float64")

    mod, param_spec = MLPModel().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
    arrays = _random_params(param_spec)
    for (_, param), arr in zip(param_spec, arrays):
        param.data = arr
    with_params = mod.with_function("forward", mod["forward"].with_attr("params", [p.data for _, p in param_spec]))
    detached, params = detach_params(with_params)
    assert list(params) == ["forward"] and len(params["forward"]) == 4
    assert "params" not in detached["forward"].attrs
    assert all(isinstance(t, minitvm.runtime.Tensor) for t in params["forward"])  # as TVM: runtime tensors
    np.testing.assert_array_equal(params["forward"][0].numpy(), arrays[0])
    assert detach_params(mod)[1] == {}


def test_errors_name_the_problem():
    with pytest.raises(RuntimeError, match="export_tvm"):
        nn.Linear(2, 2)(nn.Parameter((1, 2)))
    with pytest.raises(TypeError, match="no argument"):
        MLPModel().export_tvm(spec={"forward": {"inp": nn.spec.Tensor((1, 784), "float32")}})
    with pytest.raises(AttributeError, match="no method"):
        MLPModel().export_tvm(spec={"backward": {"x": nn.spec.Tensor((1, 784), "float32")}})

    with pytest.raises(ValueError, match="param_mode"):
        MLPModel().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 784), "float32"),
                                                "$": {"param_mode": "flat"}}})
    with pytest.raises(TypeError, match="argument 'x_0' has spec 1"):
        MLPModel().export_tvm(spec={"forward": {"x": (1, 784)}})


def test_super_init_is_optional_as_in_tvm():
    # TVM's tutorial models assign layers without calling super().__init__()
    class NoSuper(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 3)
            self.blocks = nn.ModuleList([nn.Linear(3, 3, bias=False)])

    assert [n for n, _ in NoSuper().named_parameters()] == ["fc.weight", "fc.bias", "blocks.0.weight"]


def test_embedding_with_symbolic_2d_indices_and_tensor_shape():
    seen = {}

    class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)

        def forward(self, ids):
            h = self.emb(ids)
            seen["shape"], seen["dtype"] = h.shape, h.dtype
            return h

    model = Embed()
    assert repr(model) == "Embed(\n  (emb): Embedding(10, 4)\n)"
    mod, param_spec = model.export_tvm(spec={"forward": {"ids": nn.spec.Tensor(("b", 3), "int32")}})
    b, three, four = seen["shape"]
    assert isinstance(b, minitvm.tir.Var) and b.name == "b" and (three, four) == (3, 4)
    assert seen["dtype"] == "float32"
    vm = _compile(mod)
    (w,) = _random_params(param_spec)
    ids = np.array([[1, 2, 3], [9, 0, 5]], "int32")
    got = vm["forward"](minitvm.nd.array(ids), minitvm.nd.array(w)).numpy()
    np.testing.assert_array_equal(got, w[ids])


def test_broadcasting_a_lower_rank_operand_in_either_position():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter((6,), "float32")

        def forward(self, x):
            return (x - self.w) / self.w + (self.w - x) * self.w + 3.0 / x

    mod, param_spec = Net().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 6), "float32")}})
    vm = _compile(mod)
    x = np.linspace(1, 2, 6, dtype="float32").reshape(1, 6)
    w = np.linspace(0.5, 1.5, 6, dtype="float32")
    got = vm["forward"](minitvm.nd.array(x), minitvm.nd.array(w)).numpy()
    np.testing.assert_allclose(got, (x - w) / w + (w - x) * w + 3.0 / x, rtol=1e-6)


def test_zero_pipeline_fuses_the_quick_start_as_tvm_does():
    mod, _ = MLPModel().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
    out = relax.get_pipeline("zero")(mod)
    assert sorted(gv.name_hint for gv in out.get_global_vars()) == [
        "forward", "fused_matmul1_add1", "fused_matmul_add_relu", "transpose", "transpose1"]
