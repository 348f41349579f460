"""Lazy weight loading (TVM's LazyTransformParams, LazyGetInput, LazySetOutput): weights
fetched through callbacks one at a time, outputs handed back as computed, same numbers."""

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


@I.ir_module
class Params:
    @R.function
    def transform_params(params: R.Tuple(R.Tensor((2, 3), "float32"), R.Tensor((3,), "float32"))):
        R.func_attr({"relax.force_pure": True})
        w = params[0]
        b = params[1]
        wt = R.permute_dims(w)
        b2 = R.multiply(b, R.const(2, "float32"))
        out = (wt, b2)
        return out


def test_lazy_transform_params_runs_with_packed_callbacks():
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal((2, 3)).astype("float32"), rng.standard_normal(3).astype("float32")]
    stored = {}
    minitvm.register_func("test_lazy.get_item", lambda i: minitvm.nd.array(weights[int(i)]), override=True)
    minitvm.register_func("test_lazy.set_item", lambda i, v: stored.__setitem__(int(i), v.numpy()), override=True)
    after = relax.transform.LazyTransformParams("test_lazy.get_item", "test_lazy.set_item")(Params)
    func = after["transform_params"]
    assert not func.params and not func.is_pure
    text = func.script()
    assert text.count("R.vm.kill_object") == 2  # each weight freed after its last use
    vm = relax.VirtualMachine(relax.build(after, "llvm"), minitvm.cpu())
    vm["transform_params"]()
    np.testing.assert_allclose(stored[0], weights[0].T)
    np.testing.assert_allclose(stored[1], weights[1] * 2)


def test_lazy_get_input_and_set_output_signatures():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((4,), "float32"), w: R.Tensor((4,), "float32")):
            R.func_attr({"num_input": 1})
            y = R.add(x, w)
            return (y, w)

    got = relax.transform.LazyGetInput()(Mod)["main"]
    assert [p.name_hint for p in got.params] == ["x", "fget_param"] and int(got.attrs["num_input"]) == 2
    put = relax.transform.LazySetOutput()(Mod)["main"]
    assert [p.name_hint for p in put.params] == ["x", "fset_output", "w"]
    calls = [b.value for block in put.body.blocks for b in block.bindings
             if isinstance(b.value, relax.Call) and b.value.op is put.params[1]]
    assert [int(c.args[0].value) for c in calls] == [1, 0]  # w (a parameter) first, y after its binding
