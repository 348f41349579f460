"""nn.Module.jit: export + build + a TorchModule called with torch tensors (params, ints, effects)."""

import numpy as np
import pytest
import torch

from minitvm.relax.frontend import nn
from minitvm.relax.frontend.nn import spec


class _Affine(nn.Module):
    def __init__(self) -> None:
        self.weight = nn.Parameter((4, 3), "float32")

    def forward(self, x: nn.Tensor, n):
        return nn.reshape(nn.matmul(x, self.weight), (n, 3))


def test_jit_runs_with_params_and_int_argument():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype("float32")
    model = _Affine()
    model.weight.data = w
    jitted = model.jit(spec={"forward": {"x": spec.Tensor([2, 4], "float32"), "n": int}})
    x = rng.standard_normal((2, 4)).astype("float32")
    y = jitted["forward"](torch.from_numpy(x), 2)
    assert isinstance(y, torch.Tensor)
    np.testing.assert_allclose(y.numpy(), x @ w, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="Argument length mismatch"):
        jitted["forward"](torch.from_numpy(x))
    with pytest.raises(ValueError, match="not found"):
        jitted["backward"]


def test_jit_refuses_unbound_parameters():
    with pytest.raises(ValueError, match="weight"):
        _Affine().jit(spec={"forward": {"x": spec.Tensor([2, 4], "float32"), "n": int}})


def test_jit_keeps_effects_between_calls():
    class Cache(nn.Module):
        def __init__(self) -> None:
            self.cache = nn.KVCache(4, [2])

        def forward(self, x: nn.Tensor, total: int):
            self.cache.append(x)
            return self.cache.view(total)

    jitted = Cache().jit(spec={"forward": {"x": spec.Tensor([1, 2], "float32"), "total": int}})
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((1, 2)).astype("float32") for _ in range(2))
    jitted["forward"](torch.from_numpy(a), 1)
    out = jitted["forward"](torch.from_numpy(b), 2)
    np.testing.assert_allclose(out.numpy(), np.concatenate([a, b]))
