"""nn.spec as TVM's: several methods in one export, ``int`` and ``nn.spec.Object`` arguments,
the ``"$"`` entry's param_mode / effect_mode, symbolic dimensions shared by name."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import assert_structural_equal
from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn import op
from minitvm.runtime import ShapeTuple


class Cache(nn.Object):
    """Stands in for a KV cache: an opaque runtime value passed in and handed back."""


class Net(nn.Module):
    def __init__(self):
        self.embed = nn.Embedding(16, 8)
        self.fc = nn.Linear(8, 8, bias=False)

    def embed_tokens(self, ids):
        return self.embed(ids)

    def step(self, x, cache):
        return self.fc(x), cache

    def flat(self, x, seq_len):
        return op.reshape(x, (seq_len * 8,))


def _spec(packed="packed"):
    return {
        "embed_tokens": {"ids": nn.spec.Tensor(["seq_len"], "int32"),
                         "$": {"param_mode": packed, "effect_mode": "none"}},
        "step": {"x": nn.spec.Tensor([1, "seq_len", 8], "float32"), "cache": nn.spec.Object(object_type=Cache),
                 "$": {"param_mode": packed, "effect_mode": "none"}},
        "flat": {"x": nn.spec.Tensor(["seq_len", 8], "float32"), "seq_len": int,
                 "$": {"param_mode": "none", "effect_mode": "none"}},
    }


def _vm(mod):
    ex = minitvm.compile(relax.get_pipeline("zero")(mod), "llvm")
    return relax.VirtualMachine(ex, minitvm.cpu())


def test_module_spec_from_raw_lists_methods_and_modes():
    model = Net()
    raw = _spec()
    mspec = nn.spec.ModuleSpec.from_raw(raw, model)
    assert mspec.method_names == ["embed_tokens", "step", "flat"]
    assert [s.param_mode for s in mspec.method_specs] == ["packed", "packed", "none"]
    assert [s.effect_mode for s in mspec.method_specs] == ["none"] * 3
    flat = mspec.method_specs[2]
    assert flat.arg_names == ["x", "seq_len"] and isinstance(flat.arg_specs[1], nn.spec.Int)
    assert "$" in raw["flat"]  # the caller's dict is left as it was
    assert nn.spec.ModuleSpec.from_raw(mspec, model) is mspec
    assert "flat(x: Tensor([seq_len, 8], 'float32'), seq_len: int)" in repr(mspec)
    with pytest.raises(ValueError, match="effect_mode"):
        nn.spec.ModuleSpec.from_raw({"flat": {"x": nn.spec.Tensor([2, 8]), "$": {"effect_mode": "x"}}}, model)


def test_packed_params_object_and_int_arguments_run_on_the_vm():
    model = Net()
    mod, params = model.export_tvm(spec=nn.spec.ModuleSpec.from_raw(_spec(), model))
    assert [n for n, _ in params] == ["embed.weight", "fc.weight"]

    step = mod["step"]
    assert [p.name for p in step.params] == ["x", "cache", "packed_params"]
    assert isinstance(step.params[1].struct_info, relax.ObjectStructInfo)
    assert isinstance(step.params[2].struct_info, relax.TupleStructInfo)
    assert step.attrs["num_input"] == 2
    flat = mod["flat"]
    assert len(flat.params) == 2 and isinstance(flat.params[1].struct_info, relax.ShapeStructInfo)
    # the int argument and the tensor dimension named seq_len are one tir.Var
    (n_shape,) = flat.params[1].struct_info.values
    assert n_shape.same_as(flat.params[0].struct_info.shape_values[0])
    # each function has its own seq_len
    assert not n_shape.same_as(step.params[0].struct_info.shape_values[1])
    assert_structural_equal(minitvm.script.from_source(mod.script()), mod)

    vm = _vm(mod)
    rng = np.random.default_rng(0)
    we, wf = rng.standard_normal((16, 8)).astype("float32"), rng.standard_normal((8, 8)).astype("float32")
    packed = [minitvm.nd.array(we), minitvm.nd.array(wf)]
    ids = np.array([3, 1, 7, 7, 0], "int32")
    emb = vm["embed_tokens"](minitvm.nd.array(ids), packed).numpy()
    np.testing.assert_array_equal(emb, we[ids])
    cache = ShapeTuple([4, 5])
    y, back = vm["step"](minitvm.nd.array(emb[None]), cache, packed)
    np.testing.assert_allclose(y.numpy(), emb[None] @ wf.T, rtol=1e-5, atol=1e-5)
    assert back is cache
    x = rng.standard_normal((5, 8)).astype("float32")
    np.testing.assert_array_equal(vm["flat"](minitvm.nd.array(x), ShapeTuple([5])).numpy(), x.reshape(-1))
    with pytest.raises(ValueError, match="seq_len"):
        vm["flat"](minitvm.nd.array(x), ShapeTuple([4]))


def test_plain_params_and_the_default_modes():
    model = Net()
    spec = {"step": {"x": nn.spec.Tensor([1, "n", 8], "float32"), "cache": nn.spec.Object(Cache)}}
    mod, _ = model.export_tvm(spec=spec)
    assert [p.name for p in mod["step"].params] == ["x", "cache", "embed_weight", "fc_weight"]
    vm = _vm(mod)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 3, 8)).astype("float32")
    we, wf = rng.standard_normal((16, 8)).astype("float32"), rng.standard_normal((8, 8)).astype("float32")
    y, _ = vm["step"](minitvm.nd.array(x), ShapeTuple([1]), minitvm.nd.array(we), minitvm.nd.array(wf))
    np.testing.assert_allclose(y.numpy(), x @ wf.T, rtol=1e-5, atol=1e-5)


def test_a_weight_in_a_method_exported_with_param_mode_none_is_refused():
    with pytest.raises(ValueError, match="param_mode is 'none'"):
        Net().export_tvm(spec={"embed_tokens": {"ids": nn.spec.Tensor([3], "int32"), "$": {"param_mode": "none"}}})


def test_object_wraps_only_object_values_and_tuple_arguments_unpack():
    class Pair(nn.Module):
        def forward(self, xs, scale):
            a, b = xs
            return a * b + scale

    spec = {"forward": {"xs": (nn.spec.Tensor([2, "n"], "float32"), nn.spec.Tensor([2, "n"], "float32")),
                        "scale": nn.spec.Tensor([], "float32")}}
    mod, params = Pair().export_tvm(spec=spec)
    assert params == [] and isinstance(mod["forward"].params[0].struct_info, relax.TupleStructInfo)
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((2, 3)).astype("float32") for _ in range(2))
    s = np.array(0.5, "float32")
    got = _vm(mod)["forward"]([minitvm.nd.array(a), minitvm.nd.array(b)], minitvm.nd.array(s)).numpy()
    np.testing.assert_allclose(got, a * b + s, rtol=1e-6)
    with pytest.raises(TypeError, match="R.Object"):
        nn.Object(_expr=relax.Var("t", relax.TensorStructInfo([2], "float32")), _name="t")


def test_debug_threads_an_io_effect_through_the_function():
    mod, _ = nn.ReLU().export_tvm(spec={"forward": {"x": nn.spec.Tensor((3, 3), "float32")}}, debug=True)
    fwd = mod["forward"]
    assert [p.name for p in fwd.params] == ["x", "_io"] and fwd.attrs["num_input"] == 2
    assert "_initialize_effect" in [gv.name_hint for gv in mod.get_global_vars()]
    vm = _vm(mod)
    (io,) = vm["_initialize_effect"]()
    x = np.random.default_rng(3).standard_normal((3, 3)).astype("float32")
    y, (io_after,) = vm["forward"](minitvm.nd.array(x), io)
    np.testing.assert_array_equal(y.numpy(), np.maximum(x, 0))
