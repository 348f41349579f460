"""Rotary position embedding (RoPE), Llama's form: the rotate-half pairing of dimensions.

Dimension ``d < rotary_dim`` of a head at position ``pos`` turns by the angle
``pos * scale / theta ** ((2 * d % rotary_dim) / rotary_dim)``: dimensions ``d`` and
``d + rotary_dim / 2`` share an angle and rotate as one complex number,
``x[d] * cos - x[d + r/2] * sin`` and ``x[d + r/2] * cos + x[d] * sin`` (HF's
``rotate_half``).  Dimensions from ``rotary_dim`` on pass through.
"""

from __future__ import annotations

from typing import Any

from .....tir import op as tir_op
from .....tir.buffer import Buffer
from .....tir.expr import PrimExpr, const
from .....tir.function import PrimFunc
from .. import op
from ..core import Tensor
from ._kernel_common import as_f32, check_dtype
from ._tir_builder import KernelBuilder

__all__ = ["llama_rope_with_position_map", "llama_rope", "rope_angle"]


def _check_scaling(rope_scaling: dict[str, Any] | None, where: str) -> None:
    kind = (rope_scaling or {}).get("rope_type", "default")
    if kind not in ("default", None):
        raise NotImplementedError(f"{where}: rope_scaling rope_type {kind!r}; only Llama's default RoPE is built")


def rope_angle(pos: PrimExpr, d: PrimExpr, rotary_dim: int, theta: float, scale: float) -> PrimExpr:
    """The angle by which dimension ``d`` turns at position ``pos`` (float32)."""
    exponent = tir_op.cast((d * 2) % rotary_dim, "float32") / const(float(rotary_dim), "float32")
    return as_f32(pos) * const(float(scale), "float32") / tir_op.pow(const(float(theta), "float32"), exponent)


def _rotated(x: Buffer, index: tuple, d: PrimExpr, cos: PrimExpr, sin: PrimExpr, rotary_dim: int) -> PrimExpr:
    """``x`` at ``index`` (whose last entry is ``d``) after the rotation by the angle whose
    cosine and sine are given (float32)."""
    half = rotary_dim // 2
    partner = x[(*index[:-1], (d + half) % rotary_dim)]  # in range for every d: no masked load
    sign = tir_op.if_then_else(d < half, const(-1.0, "float32"), const(1.0, "float32"))
    return as_f32(x[index]) * cos + sign * as_f32(partner) * sin


def _angle_table(kb: KernelBuilder, pos: PrimExpr, head_dim: int, rotary_dim: int, theta: float,
                 scale: float) -> tuple[Buffer, Buffer]:
    """The cosine and sine of every dimension's angle at ``pos``, computed once for all heads (a
    pow, a cos and a sin per dimension: per element of every head they were most of the kernel's
    time).  Dimensions from ``rotary_dim`` on get an angle too, which nothing reads."""
    cos, sin = kb.local("cos", (head_dim,), "float32"), kb.local("sin", (head_dim,), "float32")
    with kb.loop("d", head_dim) as d:
        angle = kb.let("angle", rope_angle(pos, d, rotary_dim, theta, scale))
        kb.store(cos, (d,), tir_op.cos(angle))
        kb.store(sin, (d,), tir_op.sin(angle))
    return cos, sin


def llama_rope_with_position_map(theta: float, scale: float, head_dim: int, num_q_heads: int, num_kv_heads: int,
                                 dtype: str, rope_scaling: dict[str, Any] | None = None,
                                 rotary_dim: int | None = None) -> PrimFunc:
    """``tir_split_rotary(qkv, position_map, q, k, v, apply_rope)``: the fused ``qkv``
    ``(total_len, num_q_heads + 2 * num_kv_heads, head_dim)`` split into q, k and v, with q and
    k rotated by RoPE at the positions ``position_map`` gives (when ``apply_rope`` is not 0)."""
    check_dtype(dtype, "llama_rope_with_position_map")
    _check_scaling(rope_scaling, "llama_rope_with_position_map")
    rotary_dim = head_dim if rotary_dim is None else rotary_dim
    if rotary_dim % 2 or not 0 < rotary_dim <= head_dim:
        raise ValueError(f"llama_rope_with_position_map: rotary_dim {rotary_dim} must be even and in 1..{head_dim}")
    kb = KernelBuilder("tir_split_rotary")
    total = kb.size("total_len")
    qkv = kb.buffer("qkv", (total, num_q_heads + 2 * num_kv_heads, head_dim), dtype)
    position_map = kb.buffer("position_map", (total,), "int32")
    q = kb.buffer("q", (total, num_q_heads, head_dim), dtype)
    k = kb.buffer("k", (total, num_kv_heads, head_dim), dtype)
    v = kb.buffer("v", (total, num_kv_heads, head_dim), dtype)
    apply_rope = kb.scalar("apply_rope", "int32")
    with kb.loop("s", total) as s:
        pos = kb.let("pos", position_map[s])
        cos, sin = _angle_table(kb, pos, head_dim, rotary_dim, theta, scale)
        for out, first, count, rotate in ((q, 0, num_q_heads, True), (k, num_q_heads, num_kv_heads, True),
                                          (v, num_q_heads + num_kv_heads, num_kv_heads, False)):
            with kb.loop("h", count) as h, kb.loop("d", head_dim) as d:
                plain = qkv[s, first + h, d]
                value = plain
                if rotate:
                    turned = _rotated(qkv, (s, first + h, d), d, cos[d], sin[d], rotary_dim)
                    value = tir_op.if_then_else(tir_op.logical_and(apply_rope != 0, d < rotary_dim),
                                                tir_op.cast(turned, dtype), plain)
                kb.store(out, (s, h, d), value)
    return kb.func()



def _fused_rope(theta: float, scale: float, head_dim: int, num_q_heads: int, num_kv_heads: int, dtype: str,
                rotary_dim: int) -> PrimFunc:
    """``llama_fused_rope(qkv, q, k, v, total_seq_len)`` on ``(batch, seq_len, heads, head_dim)``
    tensors: token ``s`` sits at position ``total_seq_len - seq_len + s``."""
    kb = KernelBuilder("llama_fused_rope")
    batch, seq_len = kb.size("batch_size", "int64"), kb.size("seq_len", "int64")
    qkv = kb.buffer("qkv", (batch, seq_len, num_q_heads + 2 * num_kv_heads, head_dim), dtype)
    outs = [kb.buffer(n, (batch, seq_len, h, head_dim), dtype)
            for n, h in (("q", num_q_heads), ("k", num_kv_heads), ("v", num_kv_heads))]
    total = kb.scalar("total_seq_len", "int64")
    with kb.loop("b", batch) as b, kb.loop("s", seq_len) as s:
        pos = kb.let("pos", total - seq_len + s)
        cos, sin = _angle_table(kb, pos, head_dim, rotary_dim, theta, scale)
        first = 0
        for out, count, rotate in zip(outs, (num_q_heads, num_kv_heads, num_kv_heads), (True, True, False)):
            with kb.loop("h", count) as h, kb.loop("d", head_dim) as d:
                index = (b, s, first + h, d)
                value = qkv[index]
                if rotate:
                    turned = _rotated(qkv, index, d, cos[d], sin[d], rotary_dim)
                    value = tir_op.if_then_else(d < rotary_dim, tir_op.cast(turned, dtype), value)
                kb.store(out, (b, s, h, d), value)
            first += count
    return kb.func()


def llama_rope(qkv: Tensor, total_seq_len: Any, theta: float, scale: float, num_q_heads: int, num_kv_heads: int,
               rope_scaling: dict[str, Any] | None = None, rotary_dim: int | None = None) -> tuple:
    """q, k, v from a fused ``qkv`` ``(batch, seq_len, num_q_heads + 2 * num_kv_heads, head_dim)``, q
    and k rotated: the new tokens sit at positions ``total_seq_len - seq_len ..`` (after the cached ones)."""
    b, s, fused, head_dim = qkv.shape
    if fused != num_q_heads + 2 * num_kv_heads:
        raise ValueError(f"llama_rope: qkv has {fused} heads, expected {num_q_heads} + 2 * {num_kv_heads}")
    _check_scaling(rope_scaling, "llama_rope")
    check_dtype(qkv.dtype, "llama_rope")
    rotary_dim = head_dim if rotary_dim is None else rotary_dim
    func = _fused_rope(theta, scale, head_dim, num_q_heads, num_kv_heads, qkv.dtype, rotary_dim)
    outs = [Tensor.placeholder((b, s, h, head_dim), qkv.dtype) for h in (num_q_heads, num_kv_heads, num_kv_heads)]
    total = total_seq_len if isinstance(total_seq_len, PrimExpr) else const(int(total_seq_len), "int64")
    return op.tensor_ir_op(func, "llama_rope", args=[qkv, total], out=outs)
