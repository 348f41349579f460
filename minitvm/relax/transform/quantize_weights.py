"""Weight-only quantization of linear layers, and the dequantize-matmul kernel it runs on.

A linear layer is ``matmul(x, permute_dims(W))`` with ``W`` of shape ``[N, K]`` (what
``nn.Linear`` and the torch importer give).  At batch 1 (a decode step) its kernel is a
matrix-vector product that reads each weight once: its time is the weights' bytes over the
memory bandwidth, so storing them in fewer bits makes it faster as well as smaller.

* ``QuantizeLinearWeights(mode="int8")``: one scale per output channel (row of ``W``),
  symmetric (zero point 0): ``Wq = clip(round(W / scale), -128, 127)`` with
  ``scale = max|W[j, :]| / 127`` -- the layer reads ``R.dequantize(Wq, scale, 0, axis=0)``,
  TVM's op, exactly what ``R.quantize(W, scale, 0, axis=0)`` would have stored.
* ``QuantizeLinearWeights(mode="int4", group_size=32)``: 4 bits per weight, eight to a 32-bit
  word, one scale per ``group_size`` consecutive weights of a row: ``q = clip(round(W / scale),
  -8, 7) + 8`` with ``scale = max|group| / 7``.  TVM's ``dequantize`` has no packed form (MLC's
  group quantization decodes in TE as well), so the layer reads ``R.call_tir(dequantize_int4,
  (packed, scales))``.  The packed layout (:func:`pack_int4`) is tiled by 64 rows: word
  ``packed[t, w, r]`` holds weights ``8w .. 8w + 7`` of row ``64t + r`` (weight ``8w + i`` in bits
  ``4i .. 4i + 3``) and ``scales[t, g, r]`` is group ``g``'s scale of that row, so that a vector
  of 16 lanes loads one word of 16 rows at once and decodes a weight of each with a mask: the
  lanes are output rows (no lane's sum is added up across the vector), and the 64 rows a step
  of the kernel computes lie in one stretch of memory (``tir.transform.schedule_int4_gemv``).
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
from ...tir.transform.quantized_gemv import INT4_DOT_BLOCK, INT4_X_BLOCK, INT4_XSUM_BLOCK
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
           "dequantize_int4_te", "int4_tile_rows", "constant_bytes"]

#: weights per packed 32-bit word (4 bits each)
INT4_WORD = 8
#: rows per tile of the packed layout (fewer when they do not divide N): four vectors' lanes
INT4_TILE_ROWS = 64
_INT4_LAYOUT_ATTR = "minitvm.int4_group_size"


# -- the numbers (numpy): what the pass stores, and the reference the tests compare with -------


def quantize_int8(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Wq int8 [N, K], scale float32 [N])`` with ``W ~ Wq * scale[:, None]``: symmetric, per row."""
    w = np.asarray(w, "float32")
    scale = np.abs(w).max(axis=1) / np.float32(127)
    scale = np.where(scale > 0, scale, np.float32(1)).astype("float32")  # an all-zero row
    q = np.clip(np.round(w / scale[:, None]), -128, 127).astype("int8")
    return q, scale


def _check_int4_shape(k: int, group_size: int, where: str) -> None:
    if group_size <= 0 or group_size % INT4_WORD or k % group_size:
        raise ValueError(f"{where}: packed int4 needs a group size that is a positive multiple of {INT4_WORD} "
                         f"(here {group_size}) and K a multiple of it (here {k})")


def int4_tile_rows(n: int) -> int:
    """Rows per tile of the packed layout for ``n`` rows: 64, or the largest power of two below
    it that divides ``n``."""
    return next(t for t in (INT4_TILE_ROWS, 32, 16, 8, 4, 2, 1) if n % t == 0)


def pack_int4(w: np.ndarray, group_size: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """``(packed uint32 [N/T, K/8, T], scales float32 [N/T, K/group_size, T])`` with ``T =
    int4_tile_rows(N)`` (16 when it divides N): each group of a row scaled by ``max|group| / 7``
    and stored as ``q + 8`` in 4 bits; ``packed[t, w, r]`` holds weights ``8w .. 8w + 7`` of row
    ``tT + r``, weight ``8w + i`` in bits ``4i .. 4i + 3``; ``scales[t, g, r]`` is its group's scale."""
    w = np.asarray(w, "float32")
    n, k = w.shape
    _check_int4_shape(k, group_size, "pack_int4")
    t = int4_tile_rows(n)
    groups = w.reshape(n, k // group_size, group_size)
    scale = np.abs(groups).max(axis=2) / np.float32(7)
    scale = np.where(scale > 0, scale, np.float32(1)).astype("float32")
    q = (np.clip(np.round(groups / scale[:, :, None]), -8, 7) + 8).astype("uint32")
    q = q.reshape(n, k // INT4_WORD, INT4_WORD)
    words = np.bitwise_or.reduce(q << (4 * np.arange(INT4_WORD, dtype="uint32")), axis=2)
    return _tiled(words, t), _tiled(scale, t)


def _tiled(a: np.ndarray, t: int) -> np.ndarray:
    """``[N, C]`` -> ``[N/t, C, t]``: ``t`` rows side by side."""
    n, c = a.shape
    return np.ascontiguousarray(a.reshape(n // t, t, c).transpose(0, 2, 1))


def _untiled(a: np.ndarray) -> np.ndarray:
    tiles, c, t = a.shape
    return a.transpose(0, 2, 1).reshape(tiles * t, c)


def unpack_int4(packed: np.ndarray, scales: np.ndarray, group_size: int = 32) -> np.ndarray:
    """The float32 ``[N, K]`` weights that :func:`pack_int4`'s output stands for."""
    words = _untiled(packed).astype("uint32")
    q = (words[:, :, None] >> (4 * np.arange(INT4_WORD, dtype="uint32"))) & 15
    n = words.shape[0]
    return (q.reshape(n, -1).astype("float32") - 8) * np.repeat(_untiled(scales), group_size, axis=1)


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


def _nibble(word: Any, i: Any) -> Any:
    """Weight ``i`` (0..7) of a packed word as a float, still offset by 8: ``(word >> 4i) & 15``."""
    return _op.cast(_op.bitwise_and(_op.shift_right(word, _op.cast(i * 4, "uint32")), IntImm("uint32", 15)),
                    "float32")


def _nibble_in_place(word: Any, i: Any) -> Any:
    """Weight ``i`` (0..7) of a packed word, still offset by 8, times ``16**i`` (``16**0`` for
    ``i = 7``): the nibble masked where it lies (``word & (15 << 4i)``), one operation fewer
    than shifting it down; the top one is shifted down instead, as a signed 32-bit conversion
    would read it as negative.  :func:`_x_over_nibble_place` divides x to match."""
    shift = _op.cast((i // 7) * 28, "uint32")
    mask = _op.shift_left(IntImm("uint32", 15), _op.cast(i * 4 % 28, "uint32"))
    return _op.cast(_op.cast(_op.bitwise_and(_op.shift_right(word, shift), mask), "int32"), "float32")


def _x_over_nibble_place(x: te.Tensor) -> te.Tensor:
    """x[.., k] divided by the ``16**i`` that :func:`_nibble_in_place` leaves on weight ``k``
    (``i = k % 8``): a power of two, so every product is exactly the unscaled one."""
    def scaled(*i: Any) -> Any:
        place = _op.shift_left(IntImm("int32", 1), _op.cast(i[-1] % INT4_WORD * 4 % 28, "int32"))
        return x[i] / _op.cast(place, "float32")
    return te.compute(x.shape, scaled, name=INT4_X_BLOCK)


def _int4_at(packed: te.Tensor, scales: te.Tensor, group_size: int) -> Any:
    """``(j, k) -> `` weight k of row j, decoded (its tile, word and nibble worked out from j and k)."""
    t = packed.shape[2]

    def weight(j: Any, k: Any) -> Any:
        q = _nibble(packed[j // t, k // INT4_WORD, j % t], k % INT4_WORD) - FloatImm("float32", 8.0)
        return q * scales[j // t, k // group_size, j % t]
    return weight


def dequantize_int4_te(packed: te.Tensor, scales: te.Tensor, group_size: int = 32) -> te.Tensor:
    """The float32 ``[N, K]`` weights of packed int4 ones (:func:`pack_int4`'s layout)."""
    tiles, words, t = packed.shape
    return te.compute((tiles * t, words * INT4_WORD), _int4_at(packed, scales, group_size), name="dequantize_int4")


def _decoded_matmul_te(x: te.Tensor, n: Any, k_dim: Any, weight: Any) -> te.Tensor:
    """For many rows of x: the weights decoded once per call into ``W_t[k, j]`` (transposed, so
    that the matmul reads rows of it along j, as ``schedule_matmul_like`` tiles it), then
    ``x @ W_t``: still one kernel reading the quantized weights."""
    w_t = te.compute((k_dim, n), lambda k, j: weight(j, k), name="dequantize_T")
    k = te.reduce_axis((IntImm(k_dim.dtype, 0), k_dim), "k")
    return te.compute((*x.shape[:-1], n), lambda *i: te.sum(x[(*i[:-1], k)] * w_t[k, i[-1]], axis=k), name="matmul")


def _row_value(p: Any, j: Any) -> Any:
    """Row j's scale or zero point: a folded scalar, a 0-d or 1-element tensor, or one per row."""
    if not isinstance(p, te.Tensor):
        return p
    return p[(0,) * p.ndim] if p.ndim == 0 or int(p.shape[0]) == 1 else p[j]


def _int8_weight(wq: te.Tensor, scale: Any, zp: Any) -> Any:
    """``(j, k) -> (Wq[j, k] - zp) * scale`` with a scalar or per-row scale and zero point."""
    def weight(j: Any, k: Any) -> Any:
        w = _op.cast(wq[j, k], "float32")
        z = _row_value(zp, j)
        if not (isinstance(z, IntImm) and z.value == 0):  # the pass's own weights are symmetric
            w = w - _op.cast(z, "float32")
        return w * _op.cast(_row_value(scale, j), "float32")
    return weight


def _matmul_int8_te(x: te.Tensor, wq: te.Tensor, scale: Any, zp: Any) -> te.Tensor:
    n, k_dim = wq.shape
    return _decoded_matmul_te(x, n, k_dim, _int8_weight(wq, scale, zp))


def _matmul_int4_te(x: te.Tensor, packed: te.Tensor, scales: te.Tensor, group_size: int) -> te.Tensor:
    tiles, words, t = packed.shape
    return _decoded_matmul_te(x, tiles * t, words * INT4_WORD, _int4_at(packed, scales, group_size))


def _nt_matmul_int8_te(x: te.Tensor, wq: te.Tensor, scale: te.Tensor, zp: Any) -> te.Tensor:
    """``x @ dequantize(Wq, scale, zp, axis=0).T``.  A zero point of 0 (the pass's own weights):
    ``sum_k Wq[j, k] * x[k]`` first, times the row's scale after the reduction, so the loop over
    k only converts and multiplies; another zero point: each weight decoded where it is used."""
    n, k_dim = wq.shape
    k = te.reduce_axis((IntImm(k_dim.dtype, 0), k_dim), "k")
    if not (isinstance(zp, IntImm) and zp.value == 0):
        weight = _int8_weight(wq, scale, zp)
        return te.compute((*x.shape[:-1], n), lambda *i: te.sum(x[(*i[:-1], k)] * weight(i[-1], k), axis=k),
                          name="NT_matmul")
    dot = te.compute((*x.shape[:-1], n), lambda *i: te.sum(x[(*i[:-1], k)] * _op.cast(wq[i[-1], k], "float32"),
                                                           axis=k), name="NT_matmul_q")
    return te.compute(dot.shape, lambda *i: dot[i] * _op.cast(_row_value(scale, i[-1]), "float32"),
                      name="NT_matmul")


def _nt_matmul_int4_te(x: te.Tensor, packed: te.Tensor, scales: te.Tensor, group_size: int) -> te.Tensor:
    """``x @ unpack_int4(packed, scales).T`` for a few rows of x, in three steps that
    ``tir.transform.schedule_int4_gemv`` schedules as one loop nest over the weights:

    * ``int4_xsum[r, g]``: the sum of x over group g;
    * ``int4_group_dot[r, j, g]``: ``sum (q + 8) * x`` over group g of row j -- the 4 bits as
      they are stored, neither the offset nor the scale applied, so the inner loop per weight
      is a shift, a mask, a conversion and a multiply-add;
    * ``NT_matmul[r, j]``: ``sum_g scale[j, g] * (dot - 8 * xsum)``, once per group."""
    tiles, words, t = packed.shape
    dtype = words.dtype  # the shape's index type for every reduction, so no casts join them
    n, groups, per_group = tiles * t, words * INT4_WORD // group_size, group_size // INT4_WORD
    rows = x.shape[:-1]
    kk = te.reduce_axis((IntImm(dtype, 0), IntImm(dtype, group_size)), "kk")
    xsum = te.compute((*rows, groups), lambda *i: te.sum(x[(*i[:-1], i[-1] * group_size + kk)], axis=kk),
                      name=INT4_XSUM_BLOCK)
    xs = _x_over_nibble_place(x)
    w = te.reduce_axis((IntImm(dtype, 0), IntImm(dtype, per_group)), "kw")
    nib = te.reduce_axis((IntImm(dtype, 0), IntImm(dtype, INT4_WORD)), "ki")

    def group_dot(*i: Any) -> Any:
        r, j, g = i[:-2], i[-2], i[-1]
        q = _nibble_in_place(packed[j // t, g * per_group + w, j % t], nib)
        return te.sum(q * xs[(*r, g * group_size + w * INT4_WORD + nib)], axis=[w, nib])
    dot = te.compute((*rows, n, groups), group_dot, name=INT4_DOT_BLOCK)
    g = te.reduce_axis((IntImm(dtype, 0), groups), "kg")

    def out(*i: Any) -> Any:
        j = i[-1]
        centred = dot[(*i, g)] - FloatImm("float32", 8.0) * xsum[(*i[:-1], g)]
        return te.sum(scales[j // t, g, j % t] * centred, axis=g)
    return te.compute((*rows, n), out, name="NT_matmul")


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
            k = array.shape[1]
            if k % self.group_size:
                return expr  # no whole groups in a row: the layer stays float
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
        if mode == "int4" and (group_size <= 0 or group_size % INT4_WORD):
            raise ValueError(f"QuantizeLinearWeights: the int4 group size must be a positive multiple of "
                             f"{INT4_WORD}, got {group_size}")
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
