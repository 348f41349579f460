"""Layers: ``Linear``, ``Conv2D``, ``LayerNorm``, ``RMSNorm``, ``Embedding``, activations,
``Sequential``, and the effects ``IOEffect`` and ``KVCache``.  Weight layouts follow TVM (and
PyTorch): Linear's weight is (out_features, in_features), Conv2D's is (out, in / groups, kh, kw).
A dimension given as a string (``nn.Linear(4, "n")``) is symbolic."""

from __future__ import annotations

from typing import Any, Sequence

from ....runtime import kv_simple as _kv_simple  # noqa: F401  (registers KVCache's runtime globals)
from ... import expr as rx
from ...block_builder import BlockBuilder
from ...op import call_pure_packed, null_value, zeros
from ...struct_info import ObjectStructInfo, TensorStructInfo
from . import op
from .core import Effect, Module, ModuleList, Parameter, Tensor, current_builder, get_default_dtype

__all__ = ["Linear", "Conv1D", "Conv2D", "GroupNorm", "LayerNorm", "RMSNorm", "Embedding", "ReLU", "GELU", "SiLU",
           "Identity",
           "Sequential", "IOEffect", "KVCache"]


class IOEffect(Effect):
    """The token ``debug=True`` exports thread through every function (``_io``), so calls
    with side effects (printing) stay ordered."""

    def __init__(self) -> None:
        self.effect: rx.Var | None = None

    def emit_init(self, name_hint: str, builder: BlockBuilder) -> list[rx.Var]:
        null = null_value()  # as TVM: R.null_value(), made by the VM
        return [builder.emit(null, f"{name_hint}_io")]

    def create(self, name_hint: str) -> list[rx.Var]:
        return [rx.Var(f"{name_hint}_io", ObjectStructInfo())]

    def set_state(self, state_vars: list[rx.Var]) -> None:
        (self.effect,) = state_vars

    def finalize(self) -> list[rx.Var]:
        result, self.effect = self.effect, None
        return [result]


class KVCache(Effect):
    """TVM's simple KV cache: one array of ``[init_seq_len, *unit_shape]`` rows, grown as rows are
    appended, threaded through every exported function as an effect.  ``append(x)`` adds ``x``'s
    rows (``x`` of shape ``[n, *unit_shape]``); ``view(seq_len)`` reads all of them back.  The
    runtime functions are ``vm.builtin.attention_kv_cache_*`` (minitvm.runtime.kv_simple).

    Unlike TVM, ``append`` is emitted as ``R.call_pure_packed`` (minitvm has no
    ``call_inplace_packed``); the appended cache is what later views read, so the order holds."""

    def __init__(self, init_seq_len: int, unit_shape: Sequence[int], dtype: str | None = None):
        self.init_seq_len = int(init_seq_len)
        self.unit_shape = [int(i) for i in unit_shape]
        self.dtype = get_default_dtype() if dtype is None else str(dtype)
        self.cache: rx.Var | None = None

    def emit_init(self, name_hint: str, bb: BlockBuilder) -> list[rx.Var]:
        shape = rx.ShapeExpr([self.init_seq_len, *self.unit_shape])
        init = bb.emit(zeros(shape, self.dtype))
        create = call_pure_packed("vm.builtin.attention_kv_cache_create", init, shape, rx.PrimValue(0),
                                  sinfo_args=ObjectStructInfo())
        return [bb.emit(create, name_hint)]

    def create(self, name_hint: str) -> list[rx.Var]:
        return [rx.Var(name_hint, ObjectStructInfo())]

    def set_state(self, state_vars: list[rx.Var]) -> None:
        (self.cache,) = state_vars

    def finalize(self) -> list[rx.Var]:
        result, self.cache = self.cache, None
        return [result]

    def to(self, dtype: str | None = None) -> None:
        if dtype is not None:
            self.dtype = dtype

    def _state(self, what: str) -> rx.Var:
        if self.cache is None:
            raise RuntimeError(f"nn.KVCache.{what} is used only inside an exported method")
        return self.cache

    def view(self, seq_len: Any) -> Tensor:
        """The cached rows, ``[seq_len, *unit_shape]`` (``seq_len`` must be how many there are)."""
        shape = rx.ShapeExpr([seq_len, *self.unit_shape])
        call = call_pure_packed("vm.builtin.attention_kv_cache_view", self._state("view"), shape,
                                sinfo_args=TensorStructInfo(shape.values, self.dtype))
        return Tensor(_expr=current_builder().emit(call))

    def append(self, new_element: Tensor) -> None:
        if new_element.dtype != self.dtype:
            raise TypeError(f'nn.KVCache holds "{self.dtype}", got a tensor of "{new_element.dtype}"')
        call = call_pure_packed("vm.builtin.attention_kv_cache_append", self._state("append"),
                                new_element._expr, sinfo_args=ObjectStructInfo())
        self.cache = current_builder().emit(call)


class Linear(Module):
    """``y = x @ weight.T + bias``."""

    def __init__(self, in_features: Any, out_features: Any, bias: bool = True, dtype: str | None = None,
                 out_dtype: str | None = None):
        self.in_features, self.out_features, self.out_dtype = in_features, out_features, out_dtype
        self.weight = Parameter((out_features, in_features), dtype)
        self.bias = Parameter((out_features,), dtype if out_dtype is None else out_dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return op.linear(x, self.weight, self.bias, self.out_dtype)

    def to(self, dtype: str | None = None) -> None:
        """The bias keeps ``out_dtype`` when one is set (it is added to the wider result)."""
        self.weight.to(dtype=dtype)
        if self.bias is not None and self.out_dtype is None:
            self.bias.to(dtype=dtype)

    def _extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, bias={self.bias is not None}"


class Conv2D(Module):
    """2-D convolution over NCHW input."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int], stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True, dtype: str | None = None):
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2D: channels {in_channels} -> {out_channels} are not divisible by groups={groups}")
        kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.weight = Parameter((out_channels, in_channels // groups, kh, kw), dtype)
        self.bias = Parameter((out_channels,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return op.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1D(Module):
    """1-D convolution over NCW input; weight (out, in / groups, kernel_size)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 dilation: int = 1, groups: int = 1, bias: bool = True, dtype: str | None = None):
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.weight = Parameter((out_channels, in_channels // groups, kernel_size), dtype)
        self.bias = Parameter((out_channels,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return op.conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class GroupNorm(Module):
    """Group normalization of ``num_channels`` channels in ``num_groups`` groups (affine)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 dtype: str | None = None):
        if not affine:
            raise NotImplementedError("nn.GroupNorm(affine=False) is not supported")
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        self.weight = Parameter((num_channels,), dtype)
        self.bias = Parameter((num_channels,), dtype)

    def forward(self, x: Tensor, channel_axis: int = 1, axes: list[int] | None = None) -> Tensor:
        return op.group_norm(x, self.num_groups, self.weight, self.bias, self.eps, channel_axis, axes)


class LayerNorm(Module):
    """Normalizes the last ``len(normalized_shape)`` dimensions; learnable weight and bias."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5, elementwise_affine: bool = True,
                 dtype: str | None = None):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        if not elementwise_affine:
            raise NotImplementedError("LayerNorm(elementwise_affine=False) is not supported")
        self.normalized_shape, self.eps = shape, eps
        self.weight = Parameter(shape, dtype)
        self.bias = Parameter(shape, dtype)

    def forward(self, x: Tensor) -> Tensor:
        return op.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(Module):
    """``x / sqrt(mean(x**2, axes) + epsilon) * weight (+ bias)``; TVM's signature, whose
    ``bias`` defaults to True (``axes`` defaults to -1 here, TVM requires it)."""

    def __init__(self, hidden_size: Any, axes: int | Sequence[int] = -1, epsilon: float = 1e-5,
                 bias: bool = True, dtype: str | None = None):
        self.epsilon, self.axes = epsilon, axes
        self.weight = Parameter((hidden_size,), dtype)
        self.bias = Parameter((hidden_size,), dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        out = op.rms_norm(x, self.weight, self.axes, self.epsilon)
        return out if self.bias is None else op.add(out, self.bias)


class Embedding(Module):
    """Rows of a (num, dim) table picked by integer indices: ``weight[x]``."""

    def __init__(self, num: Any, dim: Any, dtype: str | None = None):
        self.num, self.dim = num, dim
        self.weight = Parameter((num, dim), dtype)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim == 1:
            return op.take(self.weight, x, axis=0)
        # as TVM: gather on the flattened indices, then restore their shape
        size = 1
        for d in x.shape:
            size = size * d
        flat = op.take(self.weight, op.reshape(x, [size]), axis=0)
        return op.reshape(flat, [*x.shape, self.weight.shape[1]])

    def _extra_repr(self) -> str:
        return f"{self.num}, {self.dim}"


class Identity(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x


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
