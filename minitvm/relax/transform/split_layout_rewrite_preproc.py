"""SplitLayoutRewritePreproc (TVM's ``relax.transform.SplitLayoutRewritePreproc``): a PrimFunc
whose root block starts with layout-rewrite blocks (annotated
``meta_schedule.layout_rewrite_preproc``, each copying one weight parameter into a
re-laid-out buffer) is split in two -- ``<name>_weight_prepack`` does the rewrites, and
``<name>_prepacked`` the computation on the rewritten buffers -- and each ``R.call_tir`` of
it becomes a call of the one feeding the other, so the weight rewrite can be lifted out
(LiftTransformParams) and done once.  Dead PrimFuncs are removed afterwards."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ...ir.module import IRModule
from ...support.identity_cache import IdentityCache
from ...tir.expr import IntImm
from ...tir.expr import Var as TirVar
from ...tir.function import PrimFunc
from ...tir.functor import StmtExprMutator
from ...tir.stmt import Block, BlockRealize, SeqStmt
from ...tir.stmt_functor import path_to
from ...transform import PassContext, Sequential, module_pass
from ..expr import Call, Tuple, TupleGetItem
from ..expr_functor import ExprMutator
from ..op.base import call_tir
from ..struct_info import TensorStructInfo
from ._util import rewrite_with_builder
from .dead_code_elimination import DeadCodeElimination

__all__ = ["SplitLayoutRewritePreproc"]

_KEY = "meta_schedule.layout_rewrite_preproc"


@dataclass
class _Rewrite:
    index: int  # the parameter the rewrite reads
    before: Any  # its buffer
    after: Any  # the re-laid-out buffer the computation reads instead


def _is_preproc(block: Block) -> bool:
    flag = (block.annotations or {}).get(_KEY)
    return bool(flag.value if isinstance(flag, IntImm) else flag)


class _Splitter(StmtExprMutator):
    """Drops the annotation from the layout-rewrite blocks, noting what each rewrites."""

    def __init__(self, func: PrimFunc) -> None:
        self.func, self.rewrites = func, []

    def visit_block_(self, op: Block) -> Any:
        block = self.visit_children(op)
        if not _is_preproc(op):
            return block
        where = f"SplitLayoutRewritePreproc: layout-rewrite block {op.name_hint!r}"
        if len(op.reads) != 1 or len(op.writes) != 1 or op.alloc_buffers or op.match_buffers:
            raise ValueError(f"{where} must read one buffer, write one, and allocate or match none")
        src = op.reads[0].buffer
        index = next((i for i, p in enumerate(self.func.params) if self.func.buffer_map.get(p) is src), None)
        if index is None:
            raise ValueError(f"{where} reads {src.name}, which is not a parameter of the PrimFunc")
        self.rewrites.append(_Rewrite(index, src, op.writes[0].buffer))
        return replace(block, annotations={k: v for k, v in block.annotations.items() if k != _KEY})


def _kind(stmt: Any) -> int:
    """1: only layout-rewrite blocks, -1: only others (a mix is refused), 0: no block."""
    found = {_is_preproc(b) for b, _ in path_to(stmt, lambda s: isinstance(s, Block))}  # (no block in an expression)
    if found == {True, False}:
        raise ValueError("SplitLayoutRewritePreproc: a statement mixes layout-rewrite and other blocks")
    return 0 if not found else (1 if True in found else -1)


def _attrs(func: PrimFunc, suffix: str) -> dict:
    out = {}
    for key, value in (func.attrs or {}).items():
        if key == "global_symbol":
            out[key] = str(value) + suffix
        elif key != "layout_free_buffers":
            out[key] = value
    return out


def _root(stmts: list, alloc: tuple = ()) -> BlockRealize:
    body = stmts[0] if len(stmts) == 1 else SeqStmt(tuple(stmts))
    return BlockRealize((), True, Block("root", body=body, alloc_buffers=tuple(alloc)))


#: split_prim_func's answers for the last few kernels, by the identity of the (immutable)
#: PrimFunc: relax.build splits each scheduled kernel when it compiles it early, then this pass
#: splits the same kernel again
_SPLITS = IdentityCache(256)


def split_prim_func(func: PrimFunc) -> tuple[PrimFunc, PrimFunc, list] | None:
    """(weight prepack, prepacked compute, rewrites), or None when nothing is rewritten."""
    return _SPLITS.get(func, _split_prim_func)


def _split_prim_func(func: PrimFunc) -> tuple[PrimFunc, PrimFunc, list] | None:
    if not isinstance(func.body, BlockRealize):
        return None
    root = func.body.block
    stmts = list(root.body.seq) if isinstance(root.body, SeqStmt) else [root.body]
    splitter = _Splitter(func)
    prepack, compute = [], []
    for stmt in stmts:
        new = splitter.visit(stmt)
        (prepack if _kind(stmt) == 1 else compute).append(new)
    if not prepack:
        return None
    rewrites = sorted(splitter.rewrites, key=lambda r: r.index)
    params = [TirVar(r.before.name, "handle") for r in rewrites] + [TirVar(r.after.name, "handle") for r in rewrites]
    bufs = [r.before for r in rewrites] + [r.after for r in rewrites]
    pre = PrimFunc(tuple(params), dict(zip(params, bufs)), _root(prepack), None,
                   _attrs(func, "_weight_prepack"))
    buffer_map = dict(func.buffer_map)
    for r in rewrites:
        buffer_map[func.params[r.index]] = r.after
    rewritten = {id(r.after) for r in rewrites}
    alloc = [b for b in root.alloc_buffers if id(b) not in rewritten]
    main = PrimFunc(func.params, buffer_map, _root(compute or [SeqStmt(())], alloc), None,
                    _attrs(func, "_prepacked"))
    return pre, main, rewrites


class _CallSplitter(ExprMutator):
    def __init__(self, mod: IRModule, split: dict) -> None:
        super().__init__(mod)
        self.split = split
        self.added: dict[Any, tuple[Any, Any]] = {}  # a split kernel -> its two parts' GlobalVars

    def visit_call_(self, op: Call) -> Any:
        call = super().visit_call_(op)
        if getattr(call.op, "name", None) != "relax.call_tir" or call.args[0] not in self.split:
            return call
        gv = call.args[0]
        pre, main, rewrites = self.split[gv]
        if gv not in self.added:  # (each call of a kernel, one layer after another, adds the same two)
            self.added[gv] = (self.builder_.add_func(pre, gv.name_hint + "_weight_prepack"),
                              self.builder_.add_func(main, gv.name_hint + "_prepacked"))
        pre_gv, main_gv = self.added[gv]
        args = list(call.args[1].fields)
        outs = []
        for r in rewrites:
            if any(not isinstance(d, IntImm) for d in r.after.shape):
                raise ValueError(f"SplitLayoutRewritePreproc: the rewritten buffer {r.after.name} has a "
                                 "symbolic shape, which is not supported")
            outs.append(TensorStructInfo(list(r.after.shape), r.after.dtype))
        packed = self.builder_.emit(call_tir(pre_gv, Tuple([args[r.index] for r in rewrites]),
                                             outs[0] if len(outs) == 1 else outs))
        for i, r in enumerate(rewrites):
            args[r.index] = packed if len(rewrites) == 1 else TupleGetItem(packed, i)
        return self.builder_.emit(call_tir(main_gv, Tuple(args), call.sinfo_args[0]))


@module_pass(opt_level=0, name="SplitLayoutRewritePreprocImpl")
class _Split:
    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        split = {}
        for gv, func in mod.functions.items():
            if isinstance(func, PrimFunc):
                found = split_prim_func(func)
                if found is not None:
                    split[gv] = found
        if not split:
            return mod
        new, _ = rewrite_with_builder(mod, _CallSplitter(mod, split))
        return new


def SplitLayoutRewritePreproc() -> Sequential:  # noqa: N802 - TVM's name
    """``SplitLayoutRewritePreproc()``: the split, then DeadCodeElimination."""
    return Sequential([_Split(), DeadCodeElimination()], name="SplitLayoutRewritePreproc")
