"""Pattern makers BYOC backends share (TVM's ``relax.backend.patterns``).

Each returns ``(pattern, annotations)``: the :mod:`relax.dpl` pattern and a dict naming the
sub-patterns a check function or a code generator reads back from the match
(``context.annotated_expr["lhs"]``).  ``annotations["root"]`` is the main operator's call.

    pattern, annotations = make_matmul_pattern(with_bias=True, activation="relax.nn.relu")
    register_patterns([("mybackend.matmul_bias_relu", pattern, annotations, check)])

TVM's ``make_stacked_attention_pattern`` and ``make_attention_rewrite_pattern`` are not here;
``make_attention_pattern`` needs ``relax.nn.attention``, which minitvm does not define (it
raises, naming the operator).
"""

from __future__ import annotations

from typing import Mapping

from ..dpl.pattern import DFPattern, GlobalVarPattern, TuplePattern, is_const, is_op, wildcard

__all__ = ["make_fused_bias_activation_pattern", "make_residual_block_pattern", "make_conv2d_pattern",
           "make_matmul_pattern", "make_attention_pattern", "make_layer_norm_pattern", "make_rms_norm_pattern",
           "make_matmul_dequantize_pattern", "make_matmul_multiply_pattern"]

Annotated = tuple[DFPattern, Mapping[str, DFPattern]]


def _with_bias_activation_pattern(out: DFPattern, annotations: dict[str, DFPattern], with_bias: bool = False,
                                  activation: str | None = None, allow_reshape: bool = False) -> Annotated:
    if with_bias:
        annotations["bias"] = bias = wildcard()
        if allow_reshape:
            reshaped = is_op("relax.reshape")(bias, wildcard(), varg_default_wildcard=True)
            out = is_op("relax.add")(out, reshaped, varg_default_wildcard=True)
        else:
            out = is_op("relax.add")(out, bias)
    if activation:
        out = is_op(activation)(out)
    return out, annotations


def make_fused_bias_activation_pattern(op_name: str, with_bias: bool = False, activation: str | None = None,
                                       allow_reshape: bool = False) -> Annotated:
    """``op_name(lhs, rhs)`` [``+ bias``] [``activation(...)``]; annotations lhs, rhs, root (, bias)."""
    lhs, rhs = wildcard(), wildcard()
    out = is_op(op_name)(lhs, rhs)
    return _with_bias_activation_pattern(out, {"lhs": lhs, "rhs": rhs, "root": out}, with_bias, activation,
                                         allow_reshape)


def make_residual_block_pattern(node_output: DFPattern | Annotated, binary_op: str = "relax.add",
                                activation: str | None = None) -> Annotated:
    """``binary_op(node_output, residual)`` (either order) [``activation``]; adds annotation residual."""
    node_output, annotations = node_output if isinstance(node_output, tuple) else (node_output, {})
    residual = wildcard()
    op = is_op(binary_op)
    out = op(node_output, residual) | op(residual, node_output)
    if activation is not None:
        out = is_op(activation)(out)
    return out, {**annotations, "residual": residual}


def make_conv2d_pattern(with_bias: bool = False, activation: str | None = None) -> Annotated:
    """``R.nn.conv2d(input, weight)`` [``+ bias``] [``activation``]; annotations input, weight, root."""
    data, weight = wildcard(), wildcard()
    conv = is_op("relax.nn.conv2d")(data, weight)
    return _with_bias_activation_pattern(conv, {"input": data, "weight": weight, "root": conv}, with_bias, activation)


def make_matmul_pattern(with_bias: bool = False, activation: str | None = None,
                        transposed_rhs: bool = False) -> Annotated:
    """``R.matmul(lhs, rhs)`` (``transposed_rhs``: of ``R.permute_dims(rhs)``) [``+ bias``]
    [``activation``]; annotations lhs, rhs, root (, bias)."""
    lhs, rhs = wildcard(), wildcard()
    annotations: dict[str, DFPattern] = {"lhs": lhs, "rhs": rhs}
    out = is_op("relax.matmul")(lhs, is_op("relax.permute_dims")(rhs) if transposed_rhs else rhs)
    annotations["root"] = out
    return _with_bias_activation_pattern(out, annotations, with_bias, activation)


def make_attention_pattern(with_bias: bool = False, var_len: bool = False) -> Annotated:
    """``R.nn.attention(query, key, value[, bias])`` (or its variable-length form)."""
    query, key, value = wildcard(), wildcard(), wildcard()
    annotations: dict[str, DFPattern] = {"query": query, "key": key, "value": value}
    if with_bias:
        annotations["bias"] = bias = wildcard()
        return is_op("relax.nn.attention_bias")(query, key, value, bias), annotations
    if var_len:
        extra = {name: wildcard() for name in ("seqstart_q", "seqstart_k", "max_seqlen_q", "max_seqlen_k")}
        annotations.update(extra)
        return is_op("relax.nn.attention_var_len")(query, key, value, *extra.values()), annotations
    return is_op("relax.nn.attention")(query, key, value), annotations


def make_layer_norm_pattern() -> Annotated:
    """``R.nn.layer_norm(x, gamma, beta)``; no annotations."""
    return is_op("relax.nn.layer_norm")(wildcard(), wildcard(), wildcard()), {}


def make_rms_norm_pattern() -> Annotated:
    """``R.call_tir(gv, (inp, weight))``; annotations gv, inp, rms_norm."""
    inp, weight, gv = wildcard(), wildcard(), GlobalVarPattern()
    out = is_op("relax.call_tir")(gv, TuplePattern([inp, weight]))
    return out, {"gv": gv, "inp": inp, "rms_norm": out}


def make_matmul_dequantize_pattern(transposed_rhs: bool = False) -> Annotated:
    """``R.dequantize(R.matmul(lhs, rhs), scale, zp)`` with constant scale and zero point."""
    out, annotations = make_matmul_pattern(transposed_rhs=transposed_rhs)
    annotations = {**annotations, "scale": is_const(), "zp": is_const()}
    return is_op("relax.dequantize")(out, annotations["scale"], annotations["zp"]), annotations


def make_matmul_multiply_pattern(transposed_rhs: bool = False) -> Annotated:
    """``R.astype(R.matmul(lhs, rhs) * (scaleA * scaleB))`` with one-element scales."""
    out, annotations = make_matmul_pattern(transposed_rhs=transposed_rhs)
    scale_a, scale_b = wildcard(), wildcard()
    scale = is_op("relax.multiply")(scale_a.has_shape((1,)), scale_b.has_shape((1,)))
    out = is_op("relax.astype")(is_op("relax.multiply")(out, scale))
    return out, {**annotations, "scaleA": scale_a, "scaleB": scale_b}
