"""The form of from_exported_program's IR follows TVM's importer (the ops, attributes and
bindings TVM's own tests expect), and the numbers still match eager torch."""

from __future__ import annotations

import numpy as np
import torch

import minitvm
from minitvm import relax
from minitvm.relax.frontend.torch import from_exported_program


def _run(mod, *arrays):
    ex = minitvm.compile(relax.get_pipeline("zero")(mod), minitvm.target.Target("llvm"))
    out = relax.VirtualMachine(ex, minitvm.cpu())["main"](*[minitvm.nd.array(a) for a in arrays])
    return [out.numpy()] if hasattr(out, "numpy") else [o.numpy() for o in out]


def _calls(mod):
    return [b.value for blk in mod["main"].body.blocks for b in blk.bindings
            if isinstance(b.value, relax.Call)]


def _ops(mod):
    return [c.op.name for c in _calls(mod) if hasattr(c.op, "name")]


class Mixed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3, bias=True)
        self.fc = torch.nn.Linear(5, 4)

    def forward(self, x, idx):
        y = self.conv(x)                                    # (1, 3, 4, 5)
        y = self.fc(y)                                      # (1, 3, 4, 4): view + addmm
        p = torch.nn.functional.max_pool1d(y.flatten(0, 1), 2).unsqueeze(0)   # squeeze/unsqueeze
        c = torch.cumsum(y, dim=-1) + torch.ones_like(y) + torch.arange(4)
        g = torch.gather(y, -1, idx)
        return torch.cat([c, g], dim=-1), p.squeeze(0)


def test_mixed_model_has_tvms_form_and_torchs_numbers():
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((1, 2, 6, 7)).astype("float32"))
    idx = torch.from_numpy(rng.integers(0, 4, (1, 3, 4, 2)).astype("int64"))
    model = Mixed().eval()
    mod = from_exported_program(torch.export.export(model, (x, idx)))
    ops = _ops(mod)
    # TVM spells out_dtype on matmul and conv2d; unsqueeze/squeeze are expand_dims/squeeze;
    # a max pool with indices pairs its values with zeros_like; arange stays an op
    calls = _calls(mod)
    assert {c.attrs["out_dtype"] for c in calls if c.op.name in ("relax.matmul", "relax.nn.conv2d")} == {"float32"}
    for name in ("relax.expand_dims", "relax.squeeze", "relax.nn.max_pool2d", "relax.zeros_like",
                 "relax.arange", "relax.full_like"):
        assert name in ops, name
    assert [c.attrs["axis"] for c in calls if c.op.name in ("relax.concat", "relax.gather_elements")] == [-1, -1]
    cumsum = next(c for c in calls if c.op.name == "relax.cumsum")
    assert cumsum.attrs["dtype"] is None and cumsum.attrs["axis"] == -1
    got = _run(mod, x.numpy(), idx.numpy())
    with torch.no_grad():
        want = [w.numpy() for w in model(x, idx)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_reshape_fills_its_hole_and_squeeze_keeps_a_longer_axis():
    # as TVM: the -1 is worked out when the op is built; squeeze of a length-3 axis keeps it
    x = relax.Var("x", relax.TensorStructInfo((3, 1, 4, 1), "float32"))
    assert [int(d) for d in relax.op.reshape(x, (2, -1)).args[1].values] == [2, 6]
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            s = bb.emit(relax.op.squeeze(x, [0, 1, 3]))
            out = bb.emit_output(relax.op.reshape(s, (-1, 2)))
        bb.emit_func_output(out)
    mod = bb.get()
    assert [int(d) for d in mod["main"].ret_struct_info.shape.values] == [6, 2]
    a = np.random.default_rng(1).standard_normal((3, 1, 4, 1)).astype("float32")
    np.testing.assert_allclose(_run(mod, a)[0], a.reshape(6, 2))


class _Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


def test_custom_convert_map_takes_tvms_key_without_aten():
    # TVM keys its converters "add.Tensor"; minitvm's own are "aten.add.Tensor": both override
    def as_subtract(node, importer):
        x, y = importer.retrieve_args(node)
        return importer.block_builder.emit(relax.op.subtract(x, y))

    args = (torch.ones(3), torch.full((3,), 2.0))
    ep = torch.export.export(_Add(), args)
    for key in ("add.Tensor", "aten.add.Tensor"):
        mod = from_exported_program(ep, custom_convert_map={key: as_subtract})
        assert _ops(mod) == ["relax.subtract"], key
