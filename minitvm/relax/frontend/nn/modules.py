"""Layers: ``Linear``, ``Conv2D``, ``LayerNorm``, ``RMSNorm``, ``Embedding``, activations and
``Sequential``.  Weight layouts follow TVM (and PyTorch): Linear's weight is
(out_features, in_features), Conv2D's is (out, in / groups, kh, kw)."""

from __future__ import annotations

from typing import Any, Sequence

from . import op
from .core import Module, ModuleList, Parameter, Tensor

__all__ = ["Linear", "Conv2D", "LayerNorm", "RMSNorm", "Embedding", "ReLU", "GELU", "SiLU", "Sequential"]


class Linear(Module):
    """``y = x @ weight.T + bias``."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype: str = "float32",
                 out_dtype: str | None = None):
        super().__init__()
        self.in_features, self.out_features, self.out_dtype = in_features, out_features, out_dtype
        self.weight = Parameter((out_features, in_features), dtype)
        self.bias = Parameter((out_features,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return op.linear(x, self.weight, self.bias, self.out_dtype)

    def _extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, bias={self.bias is not None}"


class Conv2D(Module):
    """2-D convolution over NCHW input."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int], stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True, dtype: str = "float32"):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2D: channels {in_channels} -> {out_channels} are not divisible by groups={groups}")
        kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.weight = Parameter((out_channels, in_channels // groups, kh, kw), dtype)
        self.bias = Parameter((out_channels,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return op.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class LayerNorm(Module):
    """Normalizes the last ``len(normalized_shape)`` dimensions; learnable weight and bias."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5, elementwise_affine: bool = True,
                 dtype: str = "float32"):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        if not elementwise_affine:
            raise NotImplementedError("LayerNorm(elementwise_affine=False) is not supported")
        self.normalized_shape, self.eps = shape, eps
        self.weight = Parameter(shape, dtype)
        self.bias = Parameter(shape, dtype)

    def forward(self, x: Tensor) -> Tensor:
        axes = list(range(-len(self.normalized_shape), 0))
        return op.layer_norm(x, self.weight, self.bias, axes, self.eps)


class RMSNorm(Module):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the last dimension(s) (``axes``)."""

    def __init__(self, hidden_size: int, axes: int | Sequence[int] = -1, epsilon: float = 1e-5,
                 bias: bool = False, dtype: str = "float32"):
        super().__init__()
        if bias:
            raise NotImplementedError("RMSNorm(bias=True) is not supported")
        self.axes, self.epsilon = axes, epsilon
        self.weight = Parameter((hidden_size,), dtype)

    def forward(self, x: Tensor) -> Tensor:
        return op.rms_norm(x, self.weight, self.axes, self.epsilon)


class Embedding(Module):
    """Rows of a (num, dim) table picked by integer indices: ``weight[x]``."""

    def __init__(self, num: int, dim: int, dtype: str = "float32"):
        super().__init__()
        self.num, self.dim = num, dim
        self.weight = Parameter((num, dim), dtype)

    def forward(self, x: Tensor) -> Tensor:
        return op.take(self.weight, x, axis=0)  # indices of any rank: result x.shape + (dim,)

    def _extra_repr(self) -> str:
        return f"{self.num}, {self.dim}"


class ReLU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return op.relu(x)


class GELU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return op.gelu(x)


class SiLU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return op.silu(x)


class Sequential(ModuleList):
    """Submodules applied in order: ``Sequential(a, b)(x) == b(a(x))``."""

    def __init__(self, *modules: Module):
        super().__init__(modules)
