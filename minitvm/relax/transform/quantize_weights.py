"""Weight-only quantization of linear layers, and the dequantize-matmul kernel it runs on.

A linear layer is ``matmul(x, permute_dims(W))`` with ``W`` of shape ``[N, K]`` (what
``nn.Linear`` and the torch importer give).  At batch 1 (a decode step) its kernel is a
matrix-vector product that reads each weight once: its time is the weights' bytes over the
memory bandwidth, so storing them in fewer bits makes it faster as well as smaller.

* ``QuantizeLinearWeights(mode="int8")``: one scale per output channel (row of ``W``),
  symmetric (zero point 0): ``Wq = clip(round(W / scale), -128, 127)`` with
  ``scale = max|W[j, :]| / 127`` -- the layer reads ``R.dequantize(Wq, scale, 0, axis=0)``,
  TVM's op, exactly what ``R.quantize(W, scale, 0, axis=0)`` would have stored.
* ``QuantizeLinearWeights(mode="int4", group_size=32)``: 4 bits per weight, two to a byte,
  one scale per ``group_size`` consecutive weights of a row: ``q = clip(round(W / scale), -8,
  7) + 8`` with ``scale = max|group| / 7``.  TVM's ``dequantize`` has no packed form (MLC's
  group quantization decodes in TE as well), so the layer reads ``R.call_tir(dequantize_int4,
  (packed, scales))``.  The packed layout (:func:`pack_int4`) keeps 32 weights in 16 bytes: byte
  ``b`` holds weight ``b`` in its low half and ``16 + b`` in its high half, so 16 lanes of a
  vector unpack 16 consecutive weights with one shift and one mask.
* ``fuse=True`` (the default) then runs :class:`FuseDequantizeMatmul`: each
  ``matmul(x, permute_dims(dequantize...))`` becomes one kernel,
  ``fused_dequantize_NT_matmul`` / ``fused_dequantize_int4_NT_matmul``, that reads the
  quantized weights and decodes each one in registers right before its multiply-add
  (``DefaultCPUSchedule``'s GEMV rule streams them at batch 1).  Unfused, ``FoldConstant``
  would turn a constant weight's dequantize back into a float constant.

The weight must be a constant (``from_exported_program``'s default, or after ``BindParams``)
or a parameter whose value the function carries in its ``"params"`` attribute
(``keep_params_as_input=True``) or that ``params=`` names (``nn.Module.export_tvm``'s): that
parameter is replaced by the quantized weight and its scales, their values in ``"params"``.
Other weights are left alone.

    mod = relax.transform.QuantizeLinearWeights("int4")(mod)
    ex = minitvm.compile(mod, target="llvm")
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...ir.module import IRModule
from ...tir import op as _op
from ...tir.expr import FloatImm, IntImm
from ...transform import PassContext, module_pass
from .. import op as R
from ..analysis.vars import free_vars
from ..block_builder import BlockBuilder
from ..dpl import DFPattern, is_call_tir, is_op, rewrite_call, wildcard
from ..expr import Constant, Function, Var, const, struct_info_of
from ..expr_functor import ExprVisitor
from ..op.registry import OpPattern
from ..struct_info import TensorStructInfo
from .dead_code_elimination import DeadCodeElimination
from .fuse_transpose_matmul import MAX_ROWS, _static_rows
from .legalize_ops.common import _try_convert_to_scalar_const

__all__ = ["QuantizeLinearWeights", "FuseDequantizeMatmul", "quantize_int8", "pack_int4", "unpack_int4",
           "dequantize_int4_te", "constant_bytes"]

#: weights per packed block: 16 bytes, two vector-lanes' halves (see the module docstring)
INT4_BLOCK = 32
_INT4_LAYOUT_ATTR = "minitvm.int4_group_size"


# -- the numbers (numpy): what the pass stores, and the reference the tests compare with -------


def quantize_int8(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Wq int8 [N, K], scale float32 [N])`` with ``W ~ Wq * scale[:, None]``: symmetric, per row."""
    w = np.asarray(w, "float32")
    scale = np.abs(w).max(axis=1) / np.float32(127)
    scale = np.where(scale > 0, scale, np.float32(1)).astype("float32")  # an all-zero row
    q = np.clip(np.round(w / scale[:, None]), -128, 127).astype("int8")
    return q, scale


def _check_int4_shape(n: int, k: int, group_size: int, where: str) -> None:
    if k % INT4_BLOCK or group_size % (INT4_BLOCK // 2) or k % group_size:
        raise ValueError(f"{where}: packed int4 needs K (here {k}) a multiple of {INT4_BLOCK} and of the "
                         f"group size, and a group size that is a multiple of {INT4_BLOCK // 2} "
                         f"(here {group_size})")


def pack_int4(w: np.ndarray, group_size: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """``(packed uint8 [N, K/2], scales float32 [N, K/group_size])``: each group of a row
    scaled by ``max|group| / 7``, stored as ``q + 8`` in 4 bits, two weights per byte in
    blocks of 32 (byte ``b`` of a block: weight ``b`` low, weight ``16 + b`` high)."""
    w = np.asarray(w, "float32")
    n, k = w.shape
    _check_int4_shape(n, k, group_size, "pack_int4")
    groups = w.reshape(n, k // group_size, group_size)
    scale = np.abs(groups).max(axis=2) / np.float32(7)
    scale = np.where(scale > 0, scale, np.float32(1)).astype("float32")
    q = (np.clip(np.round(groups / scale[:, :, None]), -8, 7) + 8).astype("uint8").reshape(n, k // INT4_BLOCK, 2, 16)
    packed = q[:, :, 0, :] | (q[:, :, 1, :] << 4)
    return packed.reshape(n, k // 2), scale


def unpack_int4(packed: np.ndarray, scales: np.ndarray, group_size: int = 32) -> np.ndarray:
    """The float32 ``[N, K]`` weights that :func:`pack_int4`'s output stands for."""
    n, half = packed.shape
    blocks = packed.reshape(n, half // 16, 16)
    q = np.stack([blocks & 15, blocks >> 4], axis=2).reshape(n, 2 * half).astype("float32") - 8
    return q * np.repeat(scales, group_size, axis=1)


class _Constants(ExprVisitor):
    def __init__(self) -> None:
        self.found: dict[int, Constant] = {}

    def visit_constant_(self, op: Constant) -> None:
        self.found[id(op)] = op


def constant_bytes(mod: IRModule) -> int:
    """Bytes of the constants in the module's Relax functions and of the ``"params"`` values
    they carry: what a model's weights take in memory."""
    total = 0
    for func in mod.functions.values():
        if isinstance(func, Function):
            seen = _Constants()
            seen.visit_expr(func)
            total += sum(c.data.numpy().nbytes for c in seen.found.values())
            total += sum(_as_array(p).nbytes for p in func.attrs.get("params") or [])
    return total


def _as_array(value: Any) -> np.ndarray:
    """A ``"params"`` value (numpy array, runtime tensor or Relax constant) as numpy."""
    value = getattr(value, "data", value)
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


# -- kernels (TE) ---------------------------------------------------------------------------------


def _int4_weight(packed: te.Tensor, scales: te.Tensor, j: Any, block: Any, half: Any, lane: Any,
                 group_size: int) -> Any:
    """Weight ``block * 32 + half * 16 + lane`` of row ``j``, decoded: its 4 bits, minus 8,
    times its group's scale."""
    byte = packed[j, block * (INT4_BLOCK // 2) + lane]
    nibble = _op.bitwise_and(_op.shift_right(byte, _op.cast(half * 4, "uint8")), IntImm("uint8", 15))
    q = _op.cast(nibble, "float32") - FloatImm("float32", 8.0)
    return q * scales[j, (block * INT4_BLOCK + half * (INT4_BLOCK // 2)) // group_size]


def _int4_at(packed: te.Tensor, scales: te.Tensor, group_size: int) -> Any:
    """``(j, k) -> `` weight k of row j, decoded (its block, half and lane worked out from k)."""
    blk = INT4_BLOCK // 2

    def weight(j: Any, k: Any) -> Any:
        return _int4_weight(packed, scales, j, k // INT4_BLOCK, (k // blk) % 2, k % blk, group_size)
    return weight


def dequantize_int4_te(packed: te.Tensor, scales: te.Tensor, group_size: int = 32) -> te.Tensor:
    """The float32 ``[N, K]`` weights of packed int4 ones (:func:`pack_int4`'s layout)."""
    n, half_k = packed.shape
    return te.compute((n, half_k * 2), _int4_at(packed, scales, group_size), name="dequantize_int4")


def _decoded_matmul_te(x: te.Tensor, n: Any, k_dim: Any, weight: Any) -> te.Tensor:
    """For many rows of x: the weights decoded once per call into ``W_t[k, j]`` (transposed, so
    that the matmul reads rows of it along j, as ``schedule_matmul_like`` tiles it), then
    ``x @ W_t``: still one kernel reading the quantized weights."""
    w_t = te.compute((k_dim, n), lambda k, j: weight(j, k), name="dequantize_T")
    k = te.reduce_axis((IntImm(k_dim.dtype, 0), k_dim), "k")
    return te.compute((*x.shape[:-1], n), lambda *i: te.sum(x[(*i[:-1], k)] * w_t[k, i[-1]], axis=k), name="matmul")


def _int8_weight(wq: te.Tensor, scale: Any, zp: Any) -> Any:
    """``(j, k) -> (Wq[j, k] - zp) * scale`` with a scalar or per-row scale and zero point."""
    def at(p: Any, j: Any) -> Any:  # a folded scalar, a 0-d or 1-element tensor, or one per row
        if not isinstance(p, te.Tensor):
            return p
        return p[(0,) * p.ndim] if p.ndim == 0 or int(p.shape[0]) == 1 else p[j]

    def weight(j: Any, k: Any) -> Any:
        w = _op.cast(wq[j, k], "float32")
        z = at(zp, j)
        if not (isinstance(z, IntImm) and z.value == 0):  # the pass's own weights are symmetric
            w = w - _op.cast(z, "float32")
        return w * _op.cast(at(scale, j), "float32")
    return weight


def _matmul_int8_te(x: te.Tensor, wq: te.Tensor, scale: Any, zp: Any) -> te.Tensor:
    n, k_dim = wq.shape
    return _decoded_matmul_te(x, n, k_dim, _int8_weight(wq, scale, zp))


def _matmul_int4_te(x: te.Tensor, packed: te.Tensor, scales: te.Tensor, group_size: int) -> te.Tensor:
    n, half_k = packed.shape
    return _decoded_matmul_te(x, n, half_k * 2, _int4_at(packed, scales, group_size))


def _nt_matmul_int8_te(x: te.Tensor, wq: te.Tensor, scale: te.Tensor, zp: Any) -> te.Tensor:
    """``x @ dequantize(Wq, scale, zp, axis=0).T`` in one reduction: each weight decoded where
    it is multiplied."""
    n, k_dim = wq.shape
    k = te.reduce_axis((IntImm(k_dim.dtype, 0), k_dim), "k")
    weight = _int8_weight(wq, scale, zp)
    return te.compute((*x.shape[:-1], n), lambda *i: te.sum(x[(*i[:-1], k)] * weight(i[-1], k), axis=k),
                      name="NT_matmul")


def _nt_matmul_int4_te(x: te.Tensor, packed: te.Tensor, scales: te.Tensor, group_size: int) -> te.Tensor:
    """``x @ unpack_int4(packed, scales).T`` in one reduction over (block, half, lane): the
    lanes read 16 consecutive bytes, both halves of a byte are used before the next."""
    n, half_k = packed.shape
    dtype = half_k.dtype  # the shape's index type for every reduction, so no casts join them
    blocks = te.reduce_axis((IntImm(dtype, 0), half_k * 2 // INT4_BLOCK), "kb")
    half = te.reduce_axis((IntImm(dtype, 0), IntImm(dtype, 2)), "kh")
    lane = te.reduce_axis((IntImm(dtype, 0), IntImm(dtype, INT4_BLOCK // 2)), "kl")

    def out(*idx: Any) -> Any:
        j = idx[-1]
        k = blocks * INT4_BLOCK + half * (INT4_BLOCK // 2) + lane
        w = _int4_weight(packed, scales, j, blocks, half, lane, group_size)
        return te.sum(x[(*idx[:-1], k)] * w, axis=[blocks, half, lane])
    return te.compute((*x.shape[:-1], n), out, name="NT_matmul")


# -- QuantizeLinearWeights ------------------------------------------------------------------------

_x, _w = wildcard(), wildcard()
_transpose = is_op("relax.permute_dims")(_w)
_LINEAR: DFPattern = is_op("relax.matmul")(_x, _transpose)


def _transposed_2d(perm: Any, w: Any) -> bool:
    """Whether ``permute_dims(w)`` swaps the two axes of a 2-D float32 ``w``."""
    sinfo = struct_info_of(w)
    axes = perm.attrs.get("axes")
    return (isinstance(sinfo, TensorStructInfo) and sinfo.ndim == 2 and sinfo.dtype == "float32"
            and (axes is None or [int(a) for a in axes] == [1, 0]))


class _Quantizer:
    """Rewrites the linear layers of one function; ``values`` maps a parameter to its value
    (from the ``"params"`` attribute), ``replaced`` collects each quantized parameter's new ones."""

    def __init__(self, bb: BlockBuilder, mode: str, group_size: int, values: dict[Var, np.ndarray]):
        self.bb, self.mode, self.group_size, self.values = bb, mode, group_size, values
        self.replaced: dict[Var, list[tuple[Var, np.ndarray]]] = {}

    def weight(self, w: Any) -> np.ndarray | None:
        if isinstance(w, Constant):
            return w.data.numpy()
        return self.values.get(w)

    def stored(self, w: Any, arrays: list[tuple[str, np.ndarray]]) -> list[Any]:
        """The quantized arrays as constants (a constant weight) or as new parameters."""
        if isinstance(w, Constant):
            return [const(a) for _, a in arrays]
        if w not in self.replaced:
            self.replaced[w] = [(Var(f"{w.name}_{suffix}", TensorStructInfo(a.shape, str(a.dtype))), a)
                                for suffix, a in arrays]
        return [v for v, _ in self.replaced[w]]

    def __call__(self, expr: Any, m: dict) -> Any:
        w, perm = m[_w], m[_transpose]
        array = self.weight(w)
        if array is None or not _transposed_2d(perm, w):
            return expr
        if self.mode == "int8":
            q, scale = quantize_int8(array)
            wq, s = self.stored(w, [("q", q), ("scale", scale)])
            dequantized = R.dequantize(wq, s, const(0, "int8"), axis=0)
        else:
            n, k = array.shape
            if k % INT4_BLOCK or k % self.group_size:
                return expr  # no packed layout for this K: the layer stays float
            packed, scales = pack_int4(array, self.group_size)
            wp, s = self.stored(w, [("q4", packed), ("scale", scales)])
            dequantized = self.bb.call_te(dequantize_int4_te, wp, s, self.group_size,
                                          primfunc_name_hint="dequantize_int4",
                                          primfunc_attrs={_INT4_LAYOUT_ATTR: self.group_size})
        return R.matmul(m[_x], R.permute_dims(dequantized, perm.attrs.get("axes")),
                        out_dtype=expr.attrs.get("out_dtype", "void"))


def _with_params(func: Function, quantizer: _Quantizer, num_input: int) -> Function:
    """``func`` with each quantized parameter replaced by its quantized arrays (parameters and
    ``"params"`` values); a parameter still used elsewhere keeps its float value too."""
    still_used = set(free_vars(func.body))
    params: list[Var] = list(func.params[:num_input])
    values: list[Any] = []
    for p, value in zip(func.params[num_input:], func.attrs["params"]):
        if p not in quantizer.replaced or p in still_used:
            params.append(p)
            values.append(value)
        for new, array in quantizer.replaced.get(p, []):
            params.append(new)
            values.append(array)
    return Function(params, func.body, func.ret_struct_info, func.is_pure, func.attrs).with_attr("params", values)


def _param_values(func: Function, params: dict[str, Any] | None) -> Function:
    """``func`` with a ``"params"`` attribute from ``params`` (by name, ``fc1.weight`` or
    ``fc1_weight``) when it has none and ``params`` holds every parameter after ``num_input``."""
    num_input = func.attrs.get("num_input")
    if params is None or num_input is None or func.attrs.get("params") is not None:
        return func
    named = {name.replace(".", "_"): value for name, value in params.items()}
    weights = func.params[int(num_input):]
    if not weights or not all(p.name in named for p in weights):
        return func
    return func.with_attr("params", [_as_array(named[p.name]) for p in weights])


def _quantize_function(func: Function, bb: BlockBuilder, mode: str, group_size: int,
                       params: dict[str, Any] | None) -> Function:
    func = _param_values(func, params)
    num_input = func.attrs.get("num_input")
    values: dict[Var, np.ndarray] = {}
    if func.attrs.get("params") is not None and num_input is not None:
        values = {p: _as_array(v) for p, v in zip(func.params[int(num_input):], func.attrs["params"])}
    quantizer = _Quantizer(bb, mode, group_size, values)
    new = rewrite_call(_LINEAR, quantizer, func)
    if quantizer.replaced:
        new = _with_params(new, quantizer, int(num_input))
    return new


@module_pass(opt_level=0, name="QuantizeLinearWeights")
class QuantizeLinearWeights:
    """``QuantizeLinearWeights(mode="int8" | "int4", group_size=32, fuse=True, params=None)``: store
    the weights of ``matmul(x, permute_dims(W))`` layers quantized (see the module docstring).
    ``params`` gives the values of a function's parameters after ``num_input`` by name (what
    ``nn.Module.export_tvm`` returns, as a dict): the function then carries them, quantized, in
    its ``"params"`` attribute (``relax.frontend.detach_params`` takes them off)."""

    def __init__(self, mode: str = "int8", group_size: int = 32, fuse: bool = True,
                 params: dict[str, Any] | None = None):
        if mode not in ("int8", "int4"):
            raise ValueError(f"QuantizeLinearWeights: mode must be 'int8' or 'int4', got {mode!r}")
        if mode == "int4" and (group_size <= 0 or group_size % (INT4_BLOCK // 2)):
            raise ValueError(f"QuantizeLinearWeights: the int4 group size must be a positive multiple of "
                             f"{INT4_BLOCK // 2}, got {group_size}")
        self.mode, self.group_size, self.fuse = mode, group_size, fuse
        self.params = dict(params) if params is not None else None

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        bb = BlockBuilder(mod)  # collects the dequantize_int4 PrimFuncs
        changed = False
        for gv, func in list(mod.functions.items()):
            if isinstance(func, Function):
                new = _quantize_function(func, bb, self.mode, self.group_size, self.params)
                if new is not func:
                    bb.update_func(gv, new)
                    changed = True
        if not changed:
            return mod
        out = bb.get()
        return FuseDequantizeMatmul()(out) if self.fuse else out


# -- FuseDequantizeMatmul -------------------------------------------------------------------------

_qx, _q8, _s8, _z8 = wildcard(), wildcard(), wildcard(), wildcard()
_q4, _s4 = wildcard(), wildcard()
_deq8 = is_op("relax.dequantize")(_q8, _s8, _z8)
_deq4 = is_call_tir("dequantize_int4", [_q4, _s4])
_t8, _t4 = is_op("relax.permute_dims")(_deq8), is_op("relax.permute_dims")(_deq4)
_FUSED: DFPattern = is_op("relax.matmul")(_qx, _t8) | is_op("relax.matmul")(_qx, _t4)


#: the fused kernels are matmuls to FuseOps (an epilogue joins them, a producer does not), as
#: TVM's matmul kernels are; AnnotateTIROpPattern alone would call the int8 one a plain
#: reduction (its right operand is no load) and let the previous layer's relu into it
_MATMUL_PATTERN = {"op_pattern": int(OpPattern.OUT_ELEMWISE_FUSABLE)}


def _per_row(p: Any, n: int) -> bool:
    """A dequantize parameter the fused kernel takes: a scalar, one value, or one per row."""
    sinfo = struct_info_of(p)
    return isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None and (
        sinfo.ndim == 0 or (sinfo.ndim == 1 and isinstance(sinfo.shape_values[0], IntImm)
                            and int(sinfo.shape_values[0]) in (1, n)))


def _fuse_function(func: Function, bb: BlockBuilder, mod: IRModule) -> Function:
    def fuse(expr: Any, m: dict) -> Any:
        t = m.get(_t8) if _t8 in m else m.get(_t4)
        if t is None or not _transposed_2d(t, t.args[0]) or expr.attrs.get("out_dtype", "void") not in ("void",
                                                                                                         "float32"):
            return expr
        rows = _static_rows(struct_info_of(m[_qx]))
        few = rows is not None and rows <= MAX_ROWS  # a dot product per output; else decode once, then tile
        if _t8 in m:
            deq = m[_deq8]
            n = int(struct_info_of(deq).shape_values[0])
            if deq.attrs["axis"] not in (0, -2) or deq.attrs["out_dtype"] != "float32" \
                    or not all(_per_row(p, n) for p in (m[_s8], m[_z8])):
                return expr
            return bb.call_te(_nt_matmul_int8_te if few else _matmul_int8_te, m[_qx], m[_q8],
                              _try_convert_to_scalar_const(m[_s8]), _try_convert_to_scalar_const(m[_z8]),
                              primfunc_name_hint="fused_dequantize_NT_matmul" if few else "fused_dequantize_matmul",
                              primfunc_attrs=_MATMUL_PATTERN)
        gv = m[_deq4].args[0]
        group_size = mod[gv].attrs.get(_INT4_LAYOUT_ATTR) if gv in mod.functions else None
        if group_size is None:
            return expr  # a dequantize_int4 this pass did not make: its layout is unknown
        return bb.call_te(_nt_matmul_int4_te if few else _matmul_int4_te, m[_qx], m[_q4], m[_s4], int(group_size),
                          primfunc_name_hint="fused_dequantize_int4_NT_matmul" if few
                          else "fused_dequantize_int4_matmul", primfunc_attrs=_MATMUL_PATTERN)

    return rewrite_call(_FUSED, fuse, func)


@module_pass(opt_level=0, name="FuseDequantizeMatmul")
class FuseDequantizeMatmul:
    """``matmul(x, permute_dims(dequantize(Wq, scale, zp, axis=0)))`` (or of the packed int4
    ``dequantize_int4``) -> one ``call_tir`` of a kernel that decodes each weight where it is
    used; the unused dequantize kernels are then dropped (``DeadCodeElimination``)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        bb = BlockBuilder(mod)
        changed = False
        for gv, func in list(mod.functions.items()):
            if isinstance(func, Function):
                new = _fuse_function(func, bb, mod)
                if new is not func:
                    bb.update_func(gv, new)
                    changed = True
        return DeadCodeElimination()(bb.get()) if changed else mod
