"""relax.frontend.torch.relax_dynamo: torch.compile(model, backend=...) through minitvm, compared
with torch eager on seeded random data; graph breaks, new shapes, unsupported operators, the
"minitvm" backend name and dynamo_capture_subgraphs."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import minitvm  # noqa: F401 - registers torch.compile(..., backend="minitvm")
from minitvm.relax.frontend.torch.dynamo import dynamo_capture_subgraphs, relax_dynamo


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 5)).eval()


class _ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.conv1, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.conv2, self.fc = nn.Conv2d(8, 8, 3, stride=2), nn.Linear(8, 4)
        with torch.no_grad():  # running statistics that are not 0 and 1
            self.bn.running_mean.copy_(0.3 * _randn(8, seed=5))
            self.bn.running_var.copy_(_randn(8, seed=6).abs() + 0.5)
        self.eval()

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.bn(self.conv1(x))), 2)
        x = nn.functional.adaptive_avg_pool2d(torch.relu(self.conv2(x)), 1)
        return self.fc(torch.flatten(x, 1))


def _run(model, backend, *inputs):
    with torch.no_grad():
        return torch.compile(model, backend=backend)(*inputs), model(*inputs)


def test_mlp_and_conv_net_match_eager():
    for model, x in [(_mlp(), _randn(4, 12)), (_ConvNet(), _randn(2, 3, 12, 12, seed=2))]:
        backend = relax_dynamo()
        got, want = _run(model, backend, x)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        assert [(b.shapes, b.eager) for b in backend.compiles] == [((tuple(x.shape),), "")]
        torch._dynamo.reset()


class _Break(nn.Module):
    """Two graphs: ``.item()`` feeds Python control flow, which a graph cannot hold."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(2)
        self.a, self.b = nn.Linear(6, 6), nn.Linear(6, 3)

    def forward(self, x):
        y = torch.tanh(self.a(x))
        if y.sum().item() > 0:
            y = y * 2.0
        return self.b(y) - 1.0


def test_graph_break_runs_both_graphs_compiled():
    backend = relax_dynamo()
    for seed in (3, 4):  # both sides of the branch
        x = _randn(3, 6, seed=seed)
        got, want = _run(_Break(), backend, x)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert len({b.graph for b in backend.compiles}) >= 2
    assert all(b.eager == "" for b in backend.compiles)


def test_new_shape_recompiles_and_mark_dynamic_builds_per_shape():
    model, backend = _mlp(), relax_dynamo()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        for rows in (4, 7, 7):
            x = _randn(rows, 12, seed=rows)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    assert [b.shapes for b in backend.compiles] == [((4, 12),), ((7, 12),)]  # the second 7 reuses its build

    torch._dynamo.reset()
    backend = relax_dynamo()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        for rows in (3, 5):
            x = _randn(rows, 12, seed=rows)
            torch._dynamo.mark_dynamic(x, 0)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    # one symbolic graph from dynamo, one minitvm build for each batch size
    assert [(b.graph, b.shapes) for b in backend.compiles] == [(0, ((3, 12),)), (0, ((5, 12),))]


def test_zoo_model_at_batch_1_then_8():
    """As a user calls it: batch 1 (dynamo specializes a size of 1), then 8 (dynamo's automatic
    dynamic shapes make a second, symbolic graph; minitvm builds it for 8), then 8 again."""
    from minitvm.testing import zoo

    model = zoo.MODELS["mlp"]
    module, backend = model.build(), relax_dynamo()
    compiled = torch.compile(module, backend=backend)
    with torch.no_grad():
        for batch in (1, 8, 8):
            (x,) = model.example_inputs(batch)
            torch.testing.assert_close(compiled(x), module(x), rtol=1e-4, atol=1e-5)
    assert [(b.graph, b.shapes[0][0], b.eager) for b in backend.compiles] == [(0, 1, ""), (1, 8, "")]


def test_dynamic_true_builds_per_shape():
    """dynamic=True: symbolic sizes reach the graph as inputs (and the converters as values)."""
    model, backend = _ConvNet(), relax_dynamo()
    compiled = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        for batch in (2, 3):  # not 1: dynamo specializes a size of 1
            x = _randn(batch, 3, 12, 12, seed=batch)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    assert [(b.graph, b.shapes[0], b.eager) for b in backend.compiles] == [(0, (2, 3, 12, 12), ""),
                                                                          (0, (3, 3, 12, 12), "")]


class _HalfSlice(nn.Module):
    """``x[:, :n]`` where ``n`` is a symbolic size under ``dynamic=True`` (BERT's position ids)."""

    def forward(self, x):
        return torch.relu(x[:, : x.shape[1] // 2]) * 2.0


def test_dynamic_true_slice_by_a_symbolic_size():
    model, backend = _HalfSlice(), relax_dynamo()
    compiled = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        for shape in [(2, 6), (3, 8)]:
            x = _randn(*shape, seed=shape[1])
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    assert [(b.graph, b.shapes[0], b.eager) for b in backend.compiles] == [(0, (2, 6), ""), (0, (3, 8), "")]


def test_weight_changed_in_place_recompiles():
    model, backend = _mlp(), relax_dynamo()
    compiled = torch.compile(model, backend=backend)
    x = _randn(2, 12)
    with torch.no_grad():
        compiled(x)
        model[0].weight.mul_(-0.5)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    assert len(backend.compiles) == 2


class _Unsupported(nn.Module):
    """A graph break between a graph minitvm compiles and one with ``torch.linalg.det``."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = torch.relu(self.fc(x))
        if y.sum().item() > -1e9:
            y = y + torch.linalg.det(y)[:, None, None]
        return y


def test_unsupported_operator_runs_its_graph_in_eager_with_a_warning():
    backend = relax_dynamo()
    x = _randn(2, 4, 4, seed=7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, want = _run(_Unsupported(), backend, x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    messages = [str(w.message) for w in caught if "minitvm dynamo backend" in str(w.message)]
    assert len(messages) == 1 and "linalg_det" in messages[0] and "runs in eager torch" in messages[0]
    assert [b.eager != "" for b in backend.compiles] == [False, True]


def test_backend_by_name():
    model, x = _mlp(), _randn(3, 12, seed=9)
    got, want = _run(model, "minitvm", x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert "minitvm" in torch._dynamo.list_backends()


def test_capture_subgraphs_one_function_per_graph():
    x = _randn(3, 6, seed=3)
    mod = dynamo_capture_subgraphs(_Break(), x)
    assert sorted(gv.name_hint for gv in mod.functions) == ["subgraph_0", "subgraph_1"]
    first = mod["subgraph_0"]
    assert [tuple(int(d) for d in p.struct_info.shape) for p in first.params] == [(3, 6)]
    built = minitvm.compile(mod, "llvm")
    vm = minitvm.relax.VirtualMachine(built, minitvm.cpu())
    with torch.no_grad():
        want = torch.tanh(_Break().a(x))
    # the first graph ends at the break with what the rest of forward needs: y and y.sum()
    got = [torch.from_numpy(out.numpy()) for out in vm["subgraph_0"](minitvm.nd.array(x.numpy()))]
    scalar, y = sorted(got, key=lambda t: t.dim())
    torch.testing.assert_close(y, want, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(scalar, want.sum(), rtol=1e-4, atol=1e-5)


class _GraphOps(nn.Module):
    """What transformers' GPT-2, BERT and ResNet leave in dynamo's graphs: ``torch.addmm``
    (Conv1D), ``x.split``, ``torch.zeros``/``torch.tensor([])`` (folded to constants; the
    empty one dropped by ``cat``), ``torch.where`` with a number, ``x.type(dtype)``,
    ``torch.gather`` and in-place ``+=`` / ``*=`` on a graph's own values."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(4)
        self.w, self.b = nn.Parameter(torch.randn(6, 9)), nn.Parameter(torch.randn(9))
        self.register_buffer("ids", torch.arange(5).expand(1, -1), persistent=False)

    def forward(self, x):
        h = torch.addmm(self.b, x.view(-1, 6), self.w, beta=0.5)
        q, k, v = h.view(x.shape[0], 5, 9).split(3, dim=2)
        acc = torch.zeros(x.shape[0], 5, 3)
        acc += q  # changes the zeros made above: the constant is the value torch.zeros made
        acc *= 2.0
        mask = torch.where(k > 0, torch.zeros(()), -1e4)
        out = torch.cat([torch.tensor([]), acc + mask + v.type(torch.float32)], dim=-1)
        idx = torch.gather(self.ids, dim=1, index=torch.tensor([[4, 3, 2, 1, 0]]))
        return out + idx.unsqueeze(-1).float()


def test_graph_ops_of_transformers_models_compile_and_match_eager():
    backend = relax_dynamo()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no graph may fall back to eager torch
        for batch in (2, 3):
            x = _randn(batch, 5, 6, seed=batch)
            got, want = _run(_GraphOps(), backend, x)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert [b.eager for b in backend.compiles] == ["", ""]


class _SharedInPlace(nn.Module):
    """``z += 1`` on a view changes its base ``y``; nothing reads the in-place result."""

    def forward(self, x):
        y = torch.relu(x)
        z = y[:, :2]
        z += 1.0
        return y * 2


class _InPlaceOnInput(nn.Module):
    def forward(self, x):
        x += 1.0
        return x * 2


def test_in_place_op_on_shared_memory_runs_its_graph_in_eager():
    """An in-place change another value would see (a view's base, the caller's input) cannot be
    a functional add: that graph runs in eager torch, and the caller's tensor changes once."""
    for model, why in [(_SharedInPlace(), "in-place iadd on z, which shares memory with y"),
                       (_InPlaceOnInput(), "in-place iadd on the graph input")]:
        torch._dynamo.reset()
        backend = relax_dynamo()
        x = _randn(2, 4, 3, seed=8)
        mine, theirs = x.clone(), x.clone()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.no_grad():
                got, want = torch.compile(model, backend=backend)(mine), model(theirs)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(mine, theirs)
        assert [why in b.eager for b in backend.compiles] == [True]
        assert any(why in str(w.message) for w in caught)
