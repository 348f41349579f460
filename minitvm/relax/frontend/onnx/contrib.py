"""onnxruntime's contrib operators (domain ``com.microsoft``) that transformer exports use:
``Gelu``, ``BiasGelu``, ``FastGelu``, ``SkipLayerNormalization``, ``EmbedLayerNormalization`` and
``Attention`` (BERT's fused self-attention), written with Relax's primitive ops as onnxruntime
defines them."""

from __future__ import annotations

import math

import numpy as np

from ... import op as _op
from ...expr import const
from .attention import _heads_first
from .importer import OnnxImporter, OnnxNode


def gelu(node: OnnxNode, imp: OnnxImporter):
    return imp.emit(_op.nn.gelu(imp.tensor(node, 0)))


def bias_gelu(node: OnnxNode, imp: OnnxImporter):
    return imp.emit(_op.nn.gelu(_op.add(imp.tensor(node, 0), imp.tensor(node, 1))))


def fast_gelu(node: OnnxNode, imp: OnnxImporter):
    """The tanh approximation of gelu, after adding the optional bias."""
    x = imp.tensor(node, 0)
    if node.has_input(1):
        x = imp.emit(_op.add(x, imp.tensor(node, 1)))
    return imp.emit(_op.nn.gelu_tanh(x))


def _norm_stats(imp: OnnxImporter, x, eps: float):
    """The mean and 1 / sqrt(variance + eps) over the last axis, keeping it (onnxruntime's
    optional statistics outputs)."""
    mean = imp.emit(_op.mean(x, axis=[-1], keepdims=True))
    var = _op.mean(_op.square(_op.subtract(x, mean)), axis=[-1], keepdims=True)
    return mean, imp.emit(_op.rsqrt(_op.add(var, imp.scalar(eps, x))))


def skip_layer_normalization(node: OnnxNode, imp: OnnxImporter):
    """layer_norm(input + skip (+ bias)) over the last axis; the optional outputs are the mean,
    the inverse standard deviation and the sum that was normalized."""
    x = _op.add(imp.tensor(node, 0), imp.tensor(node, 1))
    if node.has_input(4):
        x = _op.add(x, imp.tensor(node, 4))
    x = imp.emit(x)
    eps = float(node.attr("epsilon", 1e-12))
    gamma = imp.tensor(node, 2)
    beta = imp.tensor(node, 3) if node.has_input(3) else const(np.zeros(imp.shape(node, 2), imp.dtype(node, 0)))
    out = imp.emit(_op.nn.layer_norm(x, gamma, beta, axes=-1, epsilon=eps))
    if not any(node.wants_output(k) for k in (1, 2)):
        return [out, None, None, x]
    mean, inv_std = _norm_stats(imp, x, eps)
    return [out, mean, inv_std, x]


def embed_layer_normalization(node: OnnxNode, imp: OnnxImporter):
    """layer_norm(word[input_ids] + position[position_ids or 0..seq-1] (+ segment[segment_ids]));
    the second output counts each row's mask ones (zeros without a mask), as int32."""
    ids_shape = imp.shape(node, 0)
    if len(ids_shape) != 2 or not all(isinstance(d, int) for d in ids_shape):
        raise node.error(f"input_ids must be a (batch, sequence) tensor of known sizes, got {ids_shape}")
    batch, seq = ids_shape
    emb = _op.take(imp.tensor(node, 2), imp.tensor(node, 0), axis=0)
    if node.has_input(8):
        pos_ids = imp.tensor(node, 8)
    else:
        pos_ids = const(np.tile(np.arange(seq, dtype="int64"), (batch, 1)))
    emb = _op.add(emb, _op.take(imp.tensor(node, 3), pos_ids, axis=0))
    if node.has_input(1):
        if not node.has_input(4):
            raise node.error("segment_ids is given without segment_embedding")
        emb = _op.add(emb, _op.take(imp.tensor(node, 4), imp.tensor(node, 1), axis=0))
    out = imp.emit(_op.nn.layer_norm(imp.emit(emb), imp.tensor(node, 5), imp.tensor(node, 6), axes=-1,
                                     epsilon=float(node.attr("epsilon", 1e-12))))
    if node.has_input(7):
        mask_index = _op.astype(_op.sum(imp.tensor(node, 7), axis=[1]), "int32")
    else:
        mask_index = const(np.zeros([batch], "int32"))
    return [out, imp.emit(mask_index)]


def _attention_checks(node: OnnxNode, imp: OnnxImporter) -> None:
    for name in ("do_rotary", "past_present_share_buffer", "unidirectional"):
        if node.attr(name, 0):
            raise node.error(f"the attribute {name} is not supported")
    for k, what in ((4, "past"), (6, "past_sequence_length")):
        if node.has_input(k):
            raise node.error(f"the input {what} (past key and value state) is not supported")


def _attention_mask_bias(node: OnnxNode, imp: OnnxImporter, batch: int, seq: int, dtype: str):
    """mask_index of shape (batch, seq) or (batch, seq, seq), 1 to keep: its 0s become
    ``mask_filter_value`` added to the scores, broadcast over the heads."""
    shape = imp.shape(node, 3)
    if shape not in ([batch, seq], [batch, seq, seq]):
        raise node.error(f"mask_index of shape {shape} is not supported: only (batch, seq) or (batch, seq, seq)")
    keep = _op.astype(imp.tensor(node, 3), dtype)
    bias = _op.multiply(_op.subtract(imp.scalar_of(1, dtype), keep),
                        imp.scalar_of(float(node.attr("mask_filter_value", -10000.0)), dtype))
    return _op.reshape(bias, [batch, 1, 1 if len(shape) == 2 else seq, seq])


def ms_attention(node: OnnxNode, imp: OnnxImporter):
    """softmax(Q K^T * scale + mask bias + attention bias) V over ``num_heads`` heads, with Q, K, V
    one projection ``input @ weight + bias`` split by ``qkv_hidden_sizes``; the second output
    (the present key and value state) is not produced."""
    _attention_checks(node, imp)
    heads = int(node.attr("num_heads"))
    batch, seq, _ = imp.shape(node, 0)
    w_shape = imp.shape(node, 1)
    sizes = list(node.attr("qkv_hidden_sizes", [w_shape[1] // 3] * 3))
    if sizes[0] != sizes[1] or sizes[0] % heads or sizes[2] % heads:
        raise node.error(f"qkv_hidden_sizes {sizes}: Q and K must match and each divide by num_heads={heads}")
    dtype = imp.dtype(node, 0)
    qkv = _op.matmul(imp.tensor(node, 0), imp.tensor(node, 1))
    if node.has_input(2):
        qkv = _op.add(qkv, imp.tensor(node, 2))
    parts = imp.emit(_op.split(qkv, [sizes[0], sizes[0] + sizes[1]], axis=2))
    q, k, v = (_heads_first(imp, imp.emit(parts[i]), [batch, seq, sizes[i]], heads) for i in range(3))
    scale = float(node.attr("scale", 1.0 / math.sqrt(sizes[0] // heads)))
    scores = _op.multiply(_op.matmul(q, _op.permute_dims(k, [0, 1, 3, 2])), imp.scalar_of(scale, dtype))
    if node.has_input(3):
        scores = _op.add(scores, _attention_mask_bias(node, imp, batch, seq, dtype))
    if node.has_input(5):
        scores = _op.add(scores, imp.tensor(node, 5))
    out = _op.matmul(_op.nn.softmax(imp.emit(scores), axis=-1), v)
    out = _op.reshape(_op.permute_dims(out, [0, 2, 1, 3]), [batch, seq, sizes[2]])
    return [imp.emit(out), None]


CONVERTERS = {f"com.microsoft.{name}": fn for name, fn in {
    "Gelu": gelu, "BiasGelu": bias_gelu, "FastGelu": fast_gelu, "SkipLayerNormalization": skip_layer_normalization,
    "EmbedLayerNormalization": embed_layer_normalization, "Attention": ms_attention}.items()}
