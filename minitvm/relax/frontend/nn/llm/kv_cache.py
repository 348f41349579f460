"""The paged KV cache in ``relax.frontend.nn`` (TVM's ``nn.llm.kv_cache``), with CPU kernels of our own.

``TIRPagedKVCache(...)`` inside an exported function (the tutorial's ``create_tir_paged_kv_cache``)
adds the cache's TIR kernels to the module and emits one call,
``vm.builtin.paged_attention_kv_cache_create``, whose arguments are TVM's: the sizes, the model's
head layout, the RoPE settings and the kernels themselves (``@kv_cache_transpose_append`` ...:
functions used as values, which the VM hands over compiled).  ``PagedKVCache`` is the object a
model's ``prefill``/``decode`` receive: ``attention_with_fused_qkv`` is one call of
``vm.builtin.attention_kv_cache_attention_with_fused_qkv`` (see :mod:`minitvm.runtime.kv_state`).

Built: multi-head / grouped-query attention, RoPE NONE or NORMAL (Llama's default frequencies),
float32 or float16 (computed in float32), the CPU (``llvm``).  Everything else TVM's constructor
takes (sliding window, MLA, KV transfer, INLINE RoPE, RoPE scaling, other targets) raises
NotImplementedError naming the argument.
"""

from __future__ import annotations

from typing import Any

from .....target.target import Target
from .....tir.expr import IntImm, PrimExpr
from .... import expr as rx
from .... import op as rx_op
from ....block_builder import BlockBuilder
from ....struct_info import ObjectStructInfo, TensorStructInfo
from ..core import Object, Tensor, current_builder
from ._decode_kernels import _attention_decode_cpu
from ._kernel_common import KERNEL_DTYPES, AttnKind, RopeMode
from ._page_kernels import _copy_single_page_cpu, _kv_cache_transpose_append
from ._prefill_kernels import _attention_prefill_cpu
from .position_embedding import llama_rope_with_position_map

__all__ = ["AttnKind", "RopeMode", "PagedKVCache", "TIRPagedKVCache", "kv_cache_create_args"]


def _refuse(name: str, value: Any, why: str) -> None:
    raise NotImplementedError(f"TIRPagedKVCache: {name}={value!r}: {why} is not built in minitvm's paged KV cache")


def _static_int(value: Any) -> int | None:
    """``value`` as a Python int when it is a constant (int, IntImm or a Relax PrimValue of one),
    else None (symbolic)."""
    if isinstance(value, rx.PrimValue):  # TVM v0.23's tutorial passes rope_ext_factors=relax.PrimValue(0)
        value = value.value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, IntImm):
        return int(value.value)
    return None


def _check_unbuilt(attn_kind: Any, support_sliding_window: Any, layer_partition: Any, num_hidden_layers: int,
                   qk_head_dim: int, v_head_dim: int, mla_dims: tuple[int, int], rope_mode: int,
                   rope_scaling: dict | None, rope_ext_factors: Any, enable_disaggregation: bool, dtype: str,
                   target: Any) -> None:
    """NotImplementedError naming the first argument that asks for something not built."""
    kinds = attn_kind if isinstance(attn_kind, (list, tuple)) else [attn_kind]
    if any(str(k).lower() != "mha" for k in kinds):
        _refuse("attn_kind", attn_kind, "an attention kind other than 'mha' (MLA, sliding-window layers)")
    if _static_int(support_sliding_window) not in (0, None):
        _refuse("support_sliding_window", support_sliding_window, "sliding-window attention")
    values = getattr(layer_partition, "values", layer_partition)
    if [_static_int(v) for v in values] != [0, num_hidden_layers]:
        _refuse("layer_partition", layer_partition, "more than one pipeline stage")
    for name, dim in zip(("mla_original_qk_head_dim", "mla_original_v_head_dim"), mla_dims):
        if dim:
            _refuse(name, dim, "multi-head latent attention")
    if qk_head_dim != v_head_dim:
        _refuse("v_head_dim", v_head_dim, "a value head dim different from qk_head_dim")
    if int(rope_mode) == RopeMode.INLINE:
        _refuse("rope_mode", RopeMode.INLINE, "RoPE inside the attention kernels (INLINE)")
    if (rope_scaling or {}).get("rope_type", "default") != "default":
        _refuse("rope_scaling", rope_scaling, "RoPE scaling")
    if not (rope_ext_factors is None or _static_int(rope_ext_factors) == 0):
        _refuse("rope_ext_factors", rope_ext_factors, "RoPE extension factors (longrope)")
    if enable_disaggregation:
        _refuse("enable_disaggregation", enable_disaggregation, "KV transfer between engines")
    if dtype not in KERNEL_DTYPES:
        _refuse("dtype", dtype, f"a cache in a dtype other than {' or '.join(KERNEL_DTYPES)}")
    kind = Target(target).kind.name if isinstance(target, str) else getattr(getattr(target, "kind", None), "name", None)
    if kind != "llvm":
        _refuse("target", str(target), "a target other than the CPU ('llvm')")


def kv_cache_create_args(bb: BlockBuilder, *, attn_kind: Any, max_batch_size: Any, max_total_seq_len: Any,
                         prefill_chunk_size: Any, page_size: Any, support_sliding_window: Any,
                         layer_partition: Any, num_hidden_layers: int, num_attention_heads: int,
                         num_key_value_heads: int, qk_head_dim: int, v_head_dim: int,
                         mla_original_qk_head_dim: int, mla_original_v_head_dim: int, rope_mode: int,
                         rope_scale: float, rope_theta: float, rope_scaling: dict | None, rope_ext_factors: Any,
                         rotary_dim: int | None, enable_disaggregation: bool, dtype: str, target: Any,
                         layer_sliding_window_size: int = 1024) -> list[rx.Expr]:
    """The 28 arguments of ``vm.builtin.paged_attention_kv_cache_create`` in TVM's order, the
    kernels added to ``bb``'s module; arguments for what is not built are empty tuples."""
    _check_unbuilt(attn_kind, support_sliding_window, layer_partition, num_hidden_layers, qk_head_dim, v_head_dim,
                   (mla_original_qk_head_dim, mla_original_v_head_dim), rope_mode, rope_scaling, rope_ext_factors,
                   enable_disaggregation, dtype, target)
    h_q, h_kv, d = num_attention_heads, num_key_value_heads, qk_head_dim
    if h_q % h_kv:
        raise ValueError(f"TIRPagedKVCache: num_attention_heads {h_q} is not a multiple of num_key_value_heads {h_kv}")
    none = rx.Tuple([])

    def tir(func: Any, name: str) -> rx.Tuple:
        return rx.Tuple([rx.StringImm("tirx"), bb.add_func(func, name)])

    def dims(values: list) -> rx.ShapeExpr:
        return rx.ShapeExpr([v if isinstance(v, PrimExpr) else IntImm("int64", int(v)) for v in values])

    layers = layer_partition if isinstance(layer_partition, rx.Expr) else dims(list(layer_partition))
    return [
        dims([max_batch_size, max_total_seq_len, prefill_chunk_size, page_size, support_sliding_window,
              layer_sliding_window_size]),
        layers, rx.PrimValue(h_q), rx.PrimValue(h_kv), rx.PrimValue(d), rx.PrimValue(v_head_dim),
        dims([int(AttnKind.MHA)] * num_hidden_layers), rx.PrimValue(IntImm("bool", int(bool(enable_disaggregation)))),
        rx.PrimValue(int(rope_mode)), rx.PrimValue(float(rope_scale)), rx.PrimValue(float(rope_theta)),
        rx.PrimValue(0),  # rope_ext_factors: none
        rx_op.zeros(rx.ShapeExpr([]), dtype),  # its dtype is the cache's (TVM's way to say it)
        bb.add_func(_kv_cache_transpose_append(h_kv, d, dtype), "kv_cache_transpose_append"),
        none,  # the MLA append
        none,  # ragged prefill: the paged prefill below reads the new tokens from the pages
        tir(_attention_prefill_cpu(h_kv, h_q, d, dtype), "tir_attention_prefill_cpu"),
        tir(_attention_decode_cpu(h_kv, h_q, d, dtype), "tir_attention_decode_cpu"),
        none, none, none, none, none,  # sliding window prefill/decode, two tree attentions, MLA prefill
        none,  # merging attention states: one pass over the pages needs none
        bb.add_func(llama_rope_with_position_map(rope_theta, rope_scale, d, h_q, h_kv, dtype, rope_scaling,
                                                 rotary_dim), "tir_split_rotary"),
        bb.add_func(_copy_single_page_cpu(h_kv, d, dtype), "kv_cache_copy_single_page_cpu"),
        none, none,  # debug_get_kv reads the pages directly; compacting is not needed without sliding windows
    ]


def create_call(args: list[rx.Expr]) -> rx.Call:
    """``R.call_pure_packed("vm.builtin.paged_attention_kv_cache_create", *args)``: the cache object."""
    return rx_op.call_pure_packed("vm.builtin.paged_attention_kv_cache_create", *args,
                                  sinfo_args=ObjectStructInfo())


class PagedKVCache(Object):
    """The paged KV cache as a model's functions see it (an ``nn.Object``: ``R.Object`` in Relax)."""

    def attention_with_fused_qkv(self, layer_id: int, qkv: Tensor, num_qo_heads: int, sm_scale: float) -> Tensor:
        """Attention of layer ``layer_id`` for the tokens of the current forward.

        ``qkv`` ``(b, s, num_qo_heads + 2 * num_kv_heads, head_dim)``: ``(1, total new tokens)`` in
        a prefill, ``(batch, 1)`` in a decode.  The cache applies RoPE to q and k, appends k and v
        to the layer's pages and attends; the result is ``(b, s, num_qo_heads, head_dim)``."""
        b, s, heads, d = qkv.shape
        flat = qkv.reshape(b * s, heads, d)
        out = current_builder().emit(rx_op.call_dps_packed(
            "vm.builtin.attention_kv_cache_attention_with_fused_qkv",
            [self._expr, rx.PrimValue(int(layer_id)), rx.PrimValue(float(sm_scale)), flat._expr],
            out_sinfo=TensorStructInfo([b * s, num_qo_heads, d], qkv.dtype)))
        return Tensor(_expr=out).reshape(b, s, num_qo_heads, d)

    def get_query_positions(self, total_length: Any) -> Tensor:
        """The position within its sequence of each of the ``total_length`` new tokens (int32)."""
        return Tensor(_expr=current_builder().emit(rx_op.call_pure_packed(
            "vm.builtin.attention_kv_cache_get_query_positions", self._expr,
            sinfo_args=TensorStructInfo([total_length], "int32"))))


class TIRPagedKVCache(PagedKVCache):
    """A paged KV cache running TIR kernels (TVM's keyword arguments; see :func:`kv_cache_create_args`
    for what is built).  Constructed inside an exported function, it emits the creation call."""

    def __init__(self, attn_kind: Any, max_batch_size: Any, max_total_seq_len: Any, prefill_chunk_size: Any,
                 page_size: Any, support_sliding_window: Any, layer_partition: Any, num_hidden_layers: int,
                 num_attention_heads: int, num_key_value_heads: int, qk_head_dim: int, v_head_dim: int,
                 mla_original_qk_head_dim: int, mla_original_v_head_dim: int, rope_mode: int, rope_scale: float,
                 rope_theta: float, rope_scaling: dict | None, rope_ext_factors: Any, rotary_dim: int | None,
                 enable_disaggregation: bool, dtype: str, target: Any, name: str = "paged_kv_cache", *,
                 layer_sliding_window_size: int = 1024) -> None:
        args = kv_cache_create_args(
            current_builder(), attn_kind=attn_kind, max_batch_size=max_batch_size, max_total_seq_len=max_total_seq_len,
            prefill_chunk_size=prefill_chunk_size, page_size=page_size, support_sliding_window=support_sliding_window,
            layer_partition=layer_partition, num_hidden_layers=num_hidden_layers,
            num_attention_heads=num_attention_heads, num_key_value_heads=num_key_value_heads,
            qk_head_dim=qk_head_dim, v_head_dim=v_head_dim, mla_original_qk_head_dim=mla_original_qk_head_dim,
            mla_original_v_head_dim=mla_original_v_head_dim, rope_mode=rope_mode, rope_scale=rope_scale,
            rope_theta=rope_theta, rope_scaling=rope_scaling, rope_ext_factors=rope_ext_factors,
            rotary_dim=rotary_dim, enable_disaggregation=enable_disaggregation, dtype=dtype, target=target,
            layer_sliding_window_size=layer_sliding_window_size)
        super().__init__(_expr=create_call(args), _name=name)
