"""ONNX's composite operators: ``Attention`` and ``RotaryEmbedding`` (opset 23/24), the recurrent
layers (``RNN``, ``GRU``, ``LSTM``) and the losses (``NegativeLogLikelihoodLoss``,
``SoftmaxCrossEntropyLoss``), written with Relax's primitive ops as ONNX defines them."""

from __future__ import annotations

import math

import numpy as np

from ... import op as _op
from ...expr import Expr, const
from .elementwise import _onnx_dtype
from .importer import OnnxImporter, OnnxNode, _is_symbolic


def _heads_first(imp: OnnxImporter, x: Expr, shape: list, heads: int) -> Expr:
    """(batch, seq, heads * size) -> (batch, heads, seq, size)."""
    b, s, hidden = shape
    return imp.emit(_op.permute_dims(_op.reshape(x, [b, s, heads, hidden // heads]), [0, 2, 1, 3]))


def _window_bias(q_len: int, kv_len: int, offset: Expr | int, causal: bool, left: int, right: int,
                 dtype: str, imp: OnnxImporter) -> Expr:
    """0 where query ``i`` may attend key ``j``, -inf elsewhere: causal (``j <= i + offset``)
    and within ``left`` / ``right`` of ``i + offset`` (-1: unbounded); ``offset`` an int (the
    cache length) or a (batch,) tensor (the last valid key per batch minus ``q_len``)."""
    i = np.arange(q_len, dtype="int64").reshape(q_len, 1)
    j = np.arange(kv_len, dtype="int64").reshape(1, kv_len)
    zero, minus_inf = imp.scalar_of(0.0, dtype), imp.scalar_of(-math.inf, dtype)
    if isinstance(offset, int):
        diff = i + offset - j
        allowed = np.ones_like(diff, dtype=bool)
        if causal:
            allowed &= diff >= 0
        if left >= 0:
            allowed &= diff <= left
        if right >= 0:
            allowed &= -diff <= right
        return const(np.where(allowed, 0.0, -np.inf).astype(dtype))
    diff = _op.subtract(_op.add(const(i), _op.reshape(offset, [-1, 1, 1])), const(j))  # (batch, q, kv)
    allowed = None
    for ok in ([_op.greater_equal(diff, imp.scalar_of(0, "int64"))] if causal else []) + \
              ([_op.less_equal(diff, imp.scalar_of(left, "int64"))] if left >= 0 else []) + \
              ([_op.less_equal(_op.negative(diff), imp.scalar_of(right, "int64"))] if right >= 0 else []):
        allowed = ok if allowed is None else _op.logical_and(allowed, ok)
    return imp.emit(_op.expand_dims(_op.where(allowed, zero, minus_inf), [1]))


def _attention_bias(node: OnnxNode, imp: OnnxImporter, q_len: int, kv_len: int, past: int, dtype: str):
    """The additive bias of ``attn_mask``, ``is_causal``, the sliding window and
    ``nonpad_kv_seqlen`` (None when there is none), as ONNX's reference builds it."""
    zero, minus_inf = imp.scalar_of(0.0, dtype), imp.scalar_of(-math.inf, dtype)
    bias = None
    if node.has_input(3):
        mask, shape = imp.tensor(node, 3), imp.shape(node, 3)
        boolean = imp.dtype(node, 3) == "bool"
        if shape[-1] < kv_len:  # a mask shorter than the keys: the rest masked out
            width = [0, 0] * (len(shape) - 1) + [0, kv_len - shape[-1]]
            mask = _op.nn.pad(_op.astype(mask, "int8") if boolean else mask, width,
                              pad_value=0.0 if boolean else -math.inf)
            mask = _op.astype(mask, "bool") if boolean else mask
        bias = imp.emit(_op.where(mask, zero, minus_inf) if boolean else mask)
    causal = bool(node.attr("is_causal", 0))
    left, right = int(node.attr("left_window_size", -1)), int(node.attr("right_window_size", -1))
    offset: Expr | int = past
    if node.has_input(6) and not node.has_input(4):
        offset = _op.subtract(imp.tensor(node, 6), imp.scalar_of(q_len, imp.dtype(node, 6)))
        offset = imp.emit(_op.astype(offset, "int64"))
    if causal or left >= 0 or right >= 0:
        window = _window_bias(q_len, kv_len, offset, causal, left, right, dtype, imp)
        bias = window if bias is None else imp.emit(_op.add(bias, window))
    if node.has_input(6):  # keys past each batch's valid length masked out
        valid = _op.less(const(np.arange(kv_len, dtype="int64")),
                         _op.reshape(_op.astype(imp.tensor(node, 6), "int64"), [-1, 1]))
        pad_bias = _op.reshape(_op.where(valid, zero, minus_inf), [-1, 1, 1, kv_len])
        bias = imp.emit(pad_bias if bias is None else _op.add(bias, pad_bias))
    return bias


def _attention_inputs(node: OnnxNode, imp: OnnxImporter):
    """Q, K, V as (batch, heads, seq, size), the past keys and values appended; the rank."""
    rank = len(imp.shape(node, 0))
    q, k, v = (imp.tensor(node, i) for i in range(3))
    if rank == 3:
        q_heads, kv_heads = int(node.attr("q_num_heads")), int(node.attr("kv_num_heads"))
        q = _heads_first(imp, q, imp.shape(node, 0), q_heads)
        k = _heads_first(imp, k, imp.shape(node, 1), kv_heads)
        v = _heads_first(imp, v, imp.shape(node, 2), kv_heads)
    if node.has_input(4):
        k = imp.emit(_op.concat([imp.tensor(node, 4), k], axis=2))
        v = imp.emit(_op.concat([imp.tensor(node, 5), v], axis=2))
    return q, k, v, rank


def attention(node: OnnxNode, imp: OnnxImporter):
    """``softmax(Q K^T * scale + bias) V`` over heads, with grouped key/value heads repeated,
    an optional past cache (outputs 1 and 2: the keys and values with it), ``softcap`` and
    ``qk_matmul_output_mode`` (output 3: the scores after softcap (0, 1), the bias (2) or the
    softmax (3)); a query row with every key masked gives 0."""
    q, k, v, rank = _attention_inputs(node, imp)
    dtype = imp.dtype(node, 0)
    q_shape, k_shape = imp.shape_of(q), imp.shape_of(k)
    if any(_is_symbolic(d) for d in q_shape[1:] + k_shape[1:]):
        raise node.error("Attention over symbolic head counts or sequence lengths is not supported")
    present_k, present_v = k, v
    if q_shape[1] != k_shape[1]:  # grouped-query attention: each key/value head serves several
        k, v = (imp.emit(_op.repeat(t, q_shape[1] // k_shape[1], axis=1)) for t in (k, v))
    scale = node.attr("scale")
    scale = 1 / math.sqrt(q_shape[3]) if scale is None else float(scale)
    root = imp.scalar_of(math.sqrt(scale), dtype)  # both sides scaled by its root, as ONNX does
    scores = imp.emit(_op.matmul(_op.multiply(q, root), _op.permute_dims(_op.multiply(k, root), [0, 1, 3, 2])))
    softcap = float(node.attr("softcap", 0.0))
    if softcap > 0:
        cap = imp.scalar_of(softcap, dtype)
        scores = imp.emit(_op.multiply(_op.tanh(_op.divide(scores, cap)), cap))
    past = imp.shape(node, 4)[2] if node.has_input(4) else 0
    bias = _attention_bias(node, imp, q_shape[2], k_shape[2], past, dtype)
    biased = scores if bias is None else imp.emit(_op.add(scores, bias))
    precision = node.attr("softmax_precision")
    work = dtype if precision is None else _onnx_dtype(precision)
    probs = _op.nn.softmax(biased if work == dtype else _op.astype(biased, work), axis=-1)
    if bias is not None:  # rows with every key masked (-inf: a max starts at the lowest finite value): 0
        attendable = _op.astype(_op.not_equal(bias, imp.scalar_of(-math.inf, dtype)), "int32")
        masked = _op.equal(_op.sum(attendable, axis=[-1], keepdims=True), imp.scalar_of(0, "int32"))
        probs = _op.where(masked, imp.scalar_of(0.0, work), probs)
    probs = imp.emit(probs if work == dtype else _op.astype(probs, dtype))
    out = _op.matmul(probs, v)
    if rank == 3:
        b, h, s, d = imp.shape_of(out := imp.emit(out))
        out = _op.reshape(_op.permute_dims(out, [0, 2, 1, 3]), [b, s, h * d])
    mode = int(node.attr("qk_matmul_output_mode", 0))
    return [imp.emit(out), present_k, present_v, {0: scores, 1: scores, 2: biased, 3: probs}[mode]]


def rotary_embedding(node: OnnxNode, imp: OnnxImporter):
    """opset 23's RotaryEmbedding: the first ``rotary_embedding_dim`` features of each head
    rotated by the cached cos / sin (rows picked by ``position_ids`` when given), as halves or,
    ``interleaved``, as even/odd pairs; input (batch, heads, seq, size) or (batch, seq, hidden)."""
    shape = imp.shape(node, 0)
    x = imp.tensor(node, 0)
    if any(_is_symbolic(d) for d in shape):
        raise node.error("RotaryEmbedding over symbolic sizes is not supported")
    if len(shape) == 4:  # (batch, seq, heads, size) inside
        x = _op.permute_dims(x, [0, 2, 1, 3])
        b, s, h, size = shape[0], shape[2], shape[1], shape[3]
    else:
        h = int(node.attr("num_heads"))
        b, s, size = shape[0], shape[1], shape[2] // h
        x = _op.reshape(x, [b, s, h, size])
    x = imp.emit(x)
    rot = int(node.attr("rotary_embedding_dim", 0)) or size
    cos, sin = imp.tensor(node, 1), imp.tensor(node, 2)
    if node.has_input(3):
        ids = imp.tensor(node, 3)
        cos, sin = _op.take(cos, ids, axis=0), _op.take(sin, ids, axis=0)
    cos, sin = imp.emit(_op.expand_dims(cos, [2])), imp.emit(_op.expand_dims(sin, [2]))
    half = rot // 2
    if node.attr("interleaved", 0):
        pairs = imp.emit(_op.reshape(_op.strided_slice(x, [3], [0], [rot]), [b, s, h, half, 2]))
        x1, x2 = (_op.squeeze(_op.strided_slice(pairs, [4], [i], [i + 1]), [4]) for i in (0, 1))
    else:
        x1, x2 = (_op.strided_slice(x, [3], [lo], [lo + half]) for lo in (0, half))
    x1, x2 = imp.emit(x1), imp.emit(x2)
    real = _op.subtract(_op.multiply(cos, x1), _op.multiply(sin, x2))
    imag = _op.add(_op.multiply(sin, x1), _op.multiply(cos, x2))
    if node.attr("interleaved", 0):
        rotated = _op.reshape(_op.stack([real, imag], axis=-1), [b, s, h, rot])
    else:
        rotated = _op.concat([real, imag], axis=-1)
    out = _op.concat([rotated, _op.strided_slice(x, [3], [rot], [size])], axis=-1) if rot < size else rotated
    out = imp.emit(out)
    return imp.emit(_op.permute_dims(out, [0, 2, 1, 3]) if len(shape) == 4 else _op.reshape(out, shape))


# -- recurrent layers: RNN, GRU, LSTM unrolled over a static sequence --------------------------------------

_ACTIVATIONS = {"Sigmoid": _op.sigmoid, "Tanh": _op.tanh, "Relu": _op.nn.relu}
#: each layer's gate count and default activations (ONNX's f, g, h)
_RNN_KINDS = {"RNN": (1, ["Tanh"]), "GRU": (3, ["Sigmoid", "Tanh"]), "LSTM": (4, ["Sigmoid", "Tanh", "Tanh"])}


def _rnn_weights(node: OnnxNode, imp: OnnxImporter, d: int, gates: int, hidden: int):
    """Direction ``d``'s W^T, R^T (split per gate) and the summed biases (per gate: Wb, Rb)."""
    def per_gate(k: int) -> list:
        m = _op.squeeze(_op.strided_slice(imp.tensor(node, k), [0], [d], [d + 1]), [0])
        return [imp.emit(_op.permute_dims(_op.strided_slice(m, [0], [g * hidden], [(g + 1) * hidden]), [1, 0]))
                for g in range(gates)]
    w, r = per_gate(1), per_gate(2)
    biases = None
    if node.has_input(3):
        row = _op.squeeze(_op.strided_slice(imp.tensor(node, 3), [0], [d], [d + 1]), [0])
        starts = [[(half * gates + g) * hidden for g in range(gates)] for half in (0, 1)]
        biases = [[imp.emit(_op.strided_slice(row, [0], [s], [s + hidden])) for s in half] for half in starts]
    return w, r, biases


def _gate(x, h, w, r, wb, rb, clip):
    out = _op.add(_op.matmul(x, w), _op.matmul(h, r))
    for b in (wb, rb):
        if b is not None:
            out = _op.add(out, b)
    return out if clip is None else _op.clip(out, -clip, clip)


def _rnn_step(kind: str, node: OnnxNode, acts: list, x, h, c, w, r, biases, peep, clip):
    """One time step of ``kind``: the new hidden state (and LSTM's cell state)."""
    wb = biases[0] if biases else [None] * len(w)
    rb = biases[1] if biases else [None] * len(w)
    if kind == "RNN":
        return acts[0](_gate(x, h, w[0], r[0], wb[0], rb[0], clip)), None
    if kind == "GRU":
        z = acts[0](_gate(x, h, w[0], r[0], wb[0], rb[0], clip))
        reset = acts[0](_gate(x, h, w[1], r[1], wb[1], rb[1], clip))
        if node.attr("linear_before_reset", 0):
            rh = _op.matmul(h, r[2]) if rb[2] is None else _op.add(_op.matmul(h, r[2]), rb[2])
            pre = _op.add(_op.matmul(x, w[2]), _op.multiply(reset, rh))
            pre = pre if wb[2] is None else _op.add(pre, wb[2])
            pre = pre if clip is None else _op.clip(pre, -clip, clip)
        else:
            pre = _gate(x, _op.multiply(reset, h), w[2], r[2], wb[2], rb[2], clip)
        cand = acts[1](pre)
        return _op.add(_op.multiply(_op.subtract(_op.ones_like(z), z), cand), _op.multiply(z, h)), None
    pre = [_gate(x, h, w[g], r[g], wb[g], rb[g], clip) for g in range(4)]  # gates i, o, f, c
    if peep is not None:
        pre[0], pre[2] = _op.add(pre[0], _op.multiply(peep[0], c)), _op.add(pre[2], _op.multiply(peep[2], c))
    i, f, cand = acts[0](pre[0]), acts[0](pre[2]), acts[1](pre[3])
    if node.attr("input_forget", 0):
        f = _op.subtract(_op.ones_like(i), i)
    c = _op.add(_op.multiply(f, c), _op.multiply(i, cand))
    if peep is not None:
        pre[1] = _op.add(pre[1], _op.multiply(peep[1], c))
    return _op.multiply(acts[0](pre[1]), acts[2](c)), c


def _rnn_layer(kind: str):
    """RNN / GRU / LSTM (forward, reverse, bidirectional; ``layout`` 0 or 1; ``clip``; LSTM's
    peepholes and ``input_forget``; GRU's ``linear_before_reset``), unrolled over the sequence;
    outputs Y (every step's hidden state), Y_h (the last) and, for LSTM, Y_c."""
    gates, default_acts = _RNN_KINDS[kind]

    def convert(node: OnnxNode, imp: OnnxImporter):
        hidden = int(node.attr("hidden_size"))
        layout = int(node.attr("layout", 0))
        x_shape = imp.shape(node, 0)
        seq, batch = (x_shape[1], x_shape[0]) if layout else (x_shape[0], x_shape[1])
        lens = imp.known(node, 4)
        if _is_symbolic(seq) or (node.has_input(4) and (lens is None or np.any(lens != seq))):
            raise node.error("a symbolic sequence length or sequence_lens other than the full length is not supported")
        direction = node.attr("direction", "forward")
        dirs = 2 if direction == "bidirectional" else 1
        names = node.attr("activations") or default_acts * dirs
        if any(n not in _ACTIVATIONS for n in names):
            raise node.error(f"activations {names} are not supported (Sigmoid, Tanh, Relu are)")
        clip = node.attr("clip")
        x = imp.tensor(node, 0)
        axis = 1 if layout else 0
        steps = [imp.emit(_op.squeeze(_op.strided_slice(x, [axis], [t], [t + 1]), [axis])) for t in range(seq)]
        dtype = imp.dtype(node, 0)
        ys, hs, cs = [], [], []
        for d in range(dirs):
            acts = [_ACTIVATIONS[n] for n in names[d * len(default_acts):(d + 1) * len(default_acts)]]
            w, r, biases = _rnn_weights(node, imp, d, gates, hidden)
            h, c = (_initial(node, imp, k, d, layout, batch, hidden, dtype) for k in (5, 6))
            peep = None
            if kind == "LSTM" and node.has_input(7):
                row = _op.squeeze(_op.strided_slice(imp.tensor(node, 7), [0], [d], [d + 1]), [0])
                peep = [imp.emit(_op.strided_slice(row, [0], [g * hidden], [(g + 1) * hidden])) for g in range(3)]
            reverse = direction == "reverse" or d == 1
            outs = [None] * seq
            for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
                h, c = _rnn_step(kind, node, acts, steps[t], h, c, w, r, biases, peep, clip)
                h = imp.emit(h)
                c = imp.emit(c) if c is not None else c
                outs[t] = h
            ys.append(imp.emit(_op.stack(outs, axis=0)))  # (seq, batch, hidden)
            hs.append(h)
            cs.append(c)
        y = imp.emit(_op.stack(ys, axis=1))  # (seq, dirs, batch, hidden)
        y_h, y_c = (imp.emit(_op.stack(v, axis=0)) if v[0] is not None else None for v in (hs, cs))
        if layout:  # batch first: Y (batch, seq, dirs, hidden), Y_h (batch, dirs, hidden)
            y = imp.emit(_op.permute_dims(y, [2, 0, 1, 3]))
            y_h = imp.emit(_op.permute_dims(y_h, [1, 0, 2]))
            y_c = imp.emit(_op.permute_dims(y_c, [1, 0, 2])) if y_c is not None else None
        return [y, y_h, y_c] if kind == "LSTM" else [y, y_h]
    convert.__name__ = f"convert_{kind.lower()}"
    return convert


def _initial(node: OnnxNode, imp: OnnxImporter, k: int, d: int, layout: int, batch, hidden: int, dtype: str):
    """The initial hidden (input 5) or cell (input 6, LSTM) state of direction ``d``; zeros when absent."""
    if k == 6 and node.op_type != "LSTM":
        return None
    if not node.has_input(k):
        return _op.zeros([batch, hidden], dtype)
    return imp.emit(_op.squeeze(_op.strided_slice(imp.tensor(node, k), [1 if layout else 0], [d], [d + 1]),
                                [1 if layout else 0]))


# -- losses ---------------------------------------------------------------------------------------------

def _nll(node: OnnxNode, imp: OnnxImporter, logp: Expr):
    """The negative log-likelihood of ``logp`` (N, C, d...) at the target classes (input 1),
    weighted by class (input 2), ``ignore_index`` contributing 0, reduced as ``reduction`` says
    (a mean divides by the weights' sum, ignored elements weighing 0)."""
    dtype = imp.dtype(node, 0)
    classes = imp.shape(node, 0)[1]
    target = _op.astype(imp.tensor(node, 1), "int64")
    ignore = node.attr("ignore_index")
    valid = None if ignore is None else _op.not_equal(target, imp.scalar_of(int(ignore), "int64"))
    zero = imp.scalar_of(0, "int64")
    safe = target if valid is None else imp.emit(_op.where(valid, target, zero))
    if valid is not None or node.has_input(2):  # an ignored or out-of-range class reads class 0 or C-1
        safe = imp.emit(_op.minimum(_op.maximum(safe, zero), imp.scalar_of(int(classes) - 1, "int64")))
    picked = _op.squeeze(_op.gather_elements(logp, _op.expand_dims(safe, [1]), axis=1), [1])
    loss = _op.negative(picked)
    weight = None
    if node.has_input(2):
        weight = _op.take(imp.tensor(node, 2), safe, axis=0)
    if valid is not None:
        loss = _op.where(valid, loss, imp.scalar_of(0.0, dtype))
        mask = _op.astype(valid, dtype)
        weight = mask if weight is None else _op.multiply(weight, mask)
    if weight is not None:
        weight = imp.emit(weight)
        loss = _op.multiply(loss, weight)
    loss = imp.emit(loss)
    reduction = node.attr("reduction", "mean")
    if reduction == "none":
        return loss
    total = _op.sum(loss)
    if reduction == "sum":
        return imp.emit(total)
    if weight is None:
        return imp.emit(_op.mean(loss))
    return imp.emit(_op.divide(total, _op.sum(weight)))


def negative_log_likelihood_loss(node: OnnxNode, imp: OnnxImporter):
    return _nll(node, imp, imp.tensor(node, 0))


def softmax_cross_entropy_loss(node: OnnxNode, imp: OnnxImporter):
    """The NLL of ``log_softmax`` over the classes (axis 1); output 1: those log-probabilities."""
    logp = imp.emit(_op.nn.log_softmax(imp.tensor(node, 0), axis=1))
    return [_nll(node, imp, logp), logp]


CONVERTERS = {
    "Attention": attention, "RotaryEmbedding": rotary_embedding,
    "RNN": _rnn_layer("RNN"), "GRU": _rnn_layer("GRU"), "LSTM": _rnn_layer("LSTM"),
    "NegativeLogLikelihoodLoss": negative_log_likelihood_loss,
    "SoftmaxCrossEntropyLoss": softmax_cross_entropy_loss,
}
