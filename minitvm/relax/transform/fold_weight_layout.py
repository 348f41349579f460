"""FoldWeightLayout: a kernel that copies a constant weight into another layout before using it
(the column panels a scheduled matmul packs ``B`` into) gets the copied weight instead, computed
once, here, at compile time.

``DefaultCPUSchedule`` packs a large matmul's right operand ``B[k, j]`` into panels
``B_packed[j // 32, k, j % 32]`` inside the kernel, in every call: at 128 rows that copy is a
full pass over the weight per 128 x K x N multiply-adds.  When every call of the kernel passes a
constant for ``B``, the copy is a function of constants: this pass evaluates it with numpy, gives
the kernel the packed buffer as its parameter (the copy block and its loops go) and passes the
packed constant.  TVM reaches the same end with its ``RewriteLayout`` postprocessor,
``SplitLayoutRewritePreproc`` and ``FoldConstant`` (or ``LiftTransformParams`` for weights that
are parameters)::

    call_tir(matmul, (x, W))   ->   call_tir(matmul', (x, W_packed))   # W_packed by numpy, now

Not in the default pipeline: measured on 2 cores (AMD EPYC, each variant in one process,
interleaved), the kernels reading the packed constant ran slower than the ones packing their
panel just before use -- ViT-tiny's 197 x 192 x 192 and 197 x 192 x 768 dense layers 1.35x
(130 -> 176 us, 354 -> 487 us; probably because a panel packed by the thread that uses it is
in that core's L1 cache) -- and GPT-2-mini's 128 x 256 x N layers only 2-8% faster.  Run it after
``DefaultCPUSchedule`` to fold the copies anyway.

A copy block qualifies when its body is ``Q[w(v)] = P[r(v)]`` with ``P`` a parameter that no
other block reads, ``Q`` a global buffer allocated in the root block, written by no other block,
and ``r``/``w`` made of ``+ - * // %`` of the block's iteration variables (whose domains the
copy then covers, wherever its loops were moved).  Everything else is left alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.module import IRModule
from ...ir.node import replace
from ...tir import stmt as _s
from ...tir.expr import BufferLoad, IntImm, Var
from ...tir.function import PrimFunc
from ...tir.index_map import _eval_numpy
from ...tir.stmt_functor import block_realizes, replace_stmt
from ...transform import PassContext, module_pass
from ..expr import Call, Constant, Function, Tuple, const
from ..expr_functor import ExprMutator
from ._util import map_functions

__all__ = ["FoldWeightLayout"]


def _static_shape(buf: Any) -> tuple[int, ...] | None:
    dims = tuple(d.value if isinstance(d, IntImm) else None for d in buf.shape)
    return None if None in dims else dims  # type: ignore[return-value]


def _layout_copies(func: PrimFunc) -> dict[int, tuple[Any, Any, tuple]]:
    """{parameter position: (copy block realize, its ancestors, the written buffer)} for each
    parameter that is only read by a qualifying layout copy (module docstring)."""
    root = func.body.block if isinstance(func.body, _s.BlockRealize) else None
    if root is None:
        return {}
    roots = {id(b) for b in root.alloc_buffers if b.scope == "global"}
    realizes = block_realizes(func.body)
    readers: dict[int, list] = {}
    writers: dict[int, int] = {}
    for r, _ in realizes:
        for region in r.block.reads:
            readers.setdefault(id(region.buffer), []).append(r)
        for region in r.block.writes:
            writers[id(region.buffer)] = writers.get(id(region.buffer), 0) + 1
    found = {}
    for pos, param in enumerate(func.params):
        buf = func.buffer_map.get(param)
        if buf is None or len(readers.get(id(buf), ())) != 1:
            continue
        realize = readers[id(buf)][0]
        blk, body = realize.block, realize.block.body
        if not (isinstance(body, _s.BufferStore) and isinstance(body.value, BufferLoad)
                and body.value.buffer is buf and id(body.buffer) in roots and writers.get(id(body.buffer)) == 1
                and blk.init is None and not blk.alloc_buffers and not blk.match_buffers
                and _static_shape(buf) and _static_shape(body.buffer) and body.buffer.dtype == buf.dtype):
            continue
        ancestors = next(a for r, a in realizes if r is realize)
        found[pos] = (realize, ancestors, body)
    return found


def _apply_copy(body: Any, block: Any, weight: np.ndarray) -> np.ndarray | None:
    """The copy's result on ``weight``: evaluated over the block's whole iteration domain, or
    None when an index cannot be evaluated or leaves its buffer."""
    extents = []
    for iv in block.iter_vars:
        lo, ext = iv.dom.min, iv.dom.extent
        if not (isinstance(lo, IntImm) and isinstance(ext, IntImm)) or iv.iter_type != "spatial":
            return None
        extents.append((lo.value, ext.value))
    grids = np.meshgrid(*(np.arange(lo, lo + e) for lo, e in extents), indexing="ij")
    env = {id(iv.var): g for iv, g in zip(block.iter_vars, grids)}
    try:
        src = [np.broadcast_to(_eval_numpy(i, env), grids[0].shape) for i in body.value.indices]
        dst = [np.broadcast_to(_eval_numpy(i, env), grids[0].shape) for i in body.indices]
    except NotImplementedError:
        return None
    out_shape = _static_shape(body.buffer)
    for idx, dims in ((src, weight.shape), (dst, out_shape)):
        if any(i.min() < 0 or i.max() >= d for i, d in zip(idx, dims)):
            return None
    out = np.zeros(out_shape, dtype=weight.dtype)  # a padded panel's unwritten tail is never read
    out[tuple(dst)] = weight[tuple(src)]
    return out


def _without_copy(func: PrimFunc, pos: int, realize: Any, ancestors: tuple, body: Any) -> PrimFunc:
    """``func`` taking the copy's destination as parameter ``pos``: the copy and the loops
    around it that hold nothing else go, and the root block no longer allocates it."""
    removed = realize
    for parent in reversed(ancestors):
        if not isinstance(parent, _s.For):  # a loop's body is one statement: it held only the copy
            break
        removed = parent
    root = func.body.block
    new_root = replace(root, alloc_buffers=tuple(b for b in root.alloc_buffers if b is not body.buffer))
    new_body = replace_stmt(replace(func.body, block=new_root), removed, None)
    param = Var(func.params[pos].name, func.params[pos].dtype)
    params = tuple(param if i == pos else p for i, p in enumerate(func.params))
    buffer_map = {(param if p is func.params[pos] else p): (body.buffer if p is func.params[pos] else b)
                  for p, b in func.buffer_map.items()}
    return replace(func, params=params, buffer_map=buffer_map, body=new_body)


def _call_tir_sites(mod: IRModule) -> dict[Any, list[Call]]:
    """{kernel GlobalVar: its ``R.call_tir`` calls} over every Relax function of ``mod``."""
    sites: dict[Any, list[Call]] = {}

    class Visit(ExprMutator):
        def visit_call_(self, op: Call) -> Any:
            if getattr(op.op, "name", None) == "relax.call_tir" and isinstance(op.args[1], Tuple):
                sites.setdefault(op.args[0], []).append(op)
            return super().visit_call_(op)

    for func in mod.functions.values():
        if isinstance(func, Function):
            Visit(mod).visit_expr(func)
    return sites


def _constant_arg(call: Call, pos: int) -> np.ndarray | None:
    arg = call.args[1].fields[pos] if pos < len(call.args[1].fields) else None
    return arg.data.numpy() if isinstance(arg, Constant) else None


def _fold_kernel(func: PrimFunc, calls: list[Call]) -> tuple[PrimFunc, dict[tuple[int, int], Any]] | None:
    """``func`` without the layout copies of the parameters every call passes a constant for,
    and {(id(call), position): packed constant}; None when there is none."""
    new_args: dict[tuple[int, int], Any] = {}
    for pos, (realize, ancestors, body) in sorted(_layout_copies(func).items(), reverse=True):
        weights = [_constant_arg(c, pos) for c in calls]
        if any(w is None for w in weights):
            continue
        packed = [_apply_copy(body, realize.block, w) for w in weights]
        if any(p is None for p in packed):
            continue
        try:
            func = _without_copy(func, pos, realize, ancestors, body)
        except ValueError:  # the copy is not in a sequence it can leave
            continue
        for c, p in zip(calls, packed):
            new_args[(id(c), pos)] = const(p)
    return (func, new_args) if new_args else None


class _Rewrite(ExprMutator):
    def __init__(self, mod: IRModule, new_args: dict[tuple[int, int], Any]) -> None:
        super().__init__(mod)
        self.new_args = new_args

    def visit_call_(self, op: Call) -> Any:
        fields = op.args[1].fields if getattr(op.op, "name", None) == "relax.call_tir" and \
            isinstance(op.args[1], Tuple) else ()
        swapped = [self.new_args.get((id(op), i)) for i in range(len(fields))]
        if not any(x is not None for x in swapped):
            return super().visit_call_(op)
        args = Tuple([new if new is not None else self.visit_expr(old) for old, new in zip(fields, swapped)])
        return Call(op.op, [op.args[0], args, *op.args[2:]], op.attrs, op.sinfo_args)


@module_pass(opt_level=0, name="FoldWeightLayout")
class FoldWeightLayout:
    """``FoldWeightLayout()``: layout copies of constant weights inside scheduled kernels are
    done now, once (see the module docstring)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        sites = _call_tir_sites(mod)
        funcs, new_args = dict(mod.functions), {}
        for gv, calls in sites.items():
            func = mod.functions.get(gv)
            if not isinstance(func, PrimFunc):
                continue
            folded = _fold_kernel(func, calls)
            if folded is not None:
                funcs[gv], args = folded
                new_args.update(args)
        if not new_args:
            return mod
        out = IRModule(funcs, mod.attrs, mod.global_infos)
        return map_functions(out, lambda f, m: _Rewrite(m, new_args).visit_expr(f))
