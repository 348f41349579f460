"""nn.KVCache (TVM's simple cache): an effect created by ``_initialize_effect``, appended to and
viewed through the ``vm.builtin.attention_kv_cache_*`` globals, threaded through each call."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.relax.frontend import nn
from minitvm.runtime import ShapeTuple


class Cached(nn.Module):
    def __init__(self):
        self.k_cache = nn.KVCache(2, [2, 3])
        self.proj = nn.Linear(3, 3, bias=False)

    def forward(self, x, total_seq_len):
        self.k_cache.append(self.proj(x))
        return self.k_cache.view(total_seq_len)


@pytest.mark.parametrize("effect_mode", ["plain", "packed"])
def test_kv_cache_appends_rows_across_calls_and_grows(effect_mode):
    spec = {"forward": {"x": nn.spec.Tensor(["n", 2, 3], "float32"), "total_seq_len": int,
                        "$": {"effect_mode": effect_mode}}}
    mod, params = Cached().export_tvm(spec=spec)
    fwd = mod["forward"]
    want_names = {"plain": ["x", "total_seq_len", "k_cache", "proj_weight"],
                  "packed": ["x", "total_seq_len", "packed_effects", "proj_weight"]}[effect_mode]
    assert [p.name for p in fwd.params][2:] == want_names[2:] and fwd.attrs["num_input"] == 3
    text = mod.script()
    assert '"vm.builtin.attention_kv_cache_create"' in text and '"vm.builtin.attention_kv_cache_append"' in text

    vm = relax.VirtualMachine(minitvm.compile(relax.get_pipeline("zero")(mod), "llvm"), minitvm.cpu())
    (cache,) = vm["_initialize_effect"]()
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 3)).astype("float32")
    rows, total = [], 0
    for n in (1, 3, 2):  # 6 rows in a cache reserved for 2: it doubles twice
        x = rng.standard_normal((n, 2, 3)).astype("float32")
        rows.append(x @ w.T)
        total += n
        effects = [cache] if effect_mode == "packed" else cache
        out, (cache,) = vm["forward"](minitvm.nd.array(x), ShapeTuple([total]), effects, minitvm.nd.array(w))
        np.testing.assert_allclose(out.numpy(), np.concatenate(rows), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="cache holds"):
        vm["forward"](minitvm.nd.array(x), ShapeTuple([total]), [cache] if effect_mode == "packed" else cache,
                      minitvm.nd.array(w))


def test_kv_cache_dtype_follows_to_and_refuses_other_dtypes():
    model = Cached()
    model.to("float64")
    assert model.k_cache.dtype == "float64" and model.proj.weight.dtype == "float64"
    with pytest.raises(TypeError, match='holds "float64", got a tensor of "float32"'):
        model.k_cache.set_state([relax.Var("c", relax.ObjectStructInfo())])
        bb = relax.BlockBuilder()
        with bb.function("f", []):
            x = nn.Tensor.placeholder([1, 2, 3], "float32")
            model.k_cache.append(x)
