"""FuseTIR: each ``Primitive`` function FuseOps made becomes one PrimFunc.

A fused function is a chain of ``R.call_tir`` in one dataflow block::

    def fused_matmul_add_relu(x, w0, b0):            # Primitive
        lv = R.call_tir(cls.matmul, (x, w0), ...)
        lv1 = R.call_tir(cls.add, (lv, b0), ...)
        gv = R.call_tir(cls.relu, (lv1,), ...)

FuseTIR writes one PrimFunc ``fused_matmul_add_relu(x, w0, b0, compute_intermediate)`` whose
root block holds the blocks of ``matmul``, ``add`` and ``relu`` one after another, named as
TVM names them:

* the fused function's parameters become buffers of the new PrimFunc, named after them and
  shaped by their struct info (the handle parameters are ``p_x`` ...; the output's is
  ``p_output0``);
* each kernel's output becomes a buffer named after the kernel's output buffer plus
  ``_intermediate`` (``T_matmul_intermediate``): an ``alloc_buffer`` of the root block for
  the values used inside (``lv``, ``lv1``), the last one the output parameter;
* each kernel's body is copied with its parameter buffers replaced by those buffers and
  new loop/block variables (a kernel may be called twice in one group); its own root
  ``alloc_buffers`` move, renewed, to the new root block, before its output; a block name
  that repeats gets a number (``T_add``, ``T_add1``; ``compute1`` -> ``compute2``).

Calls ``cls.fused_matmul_add_relu(x, w0, b0)`` become
``R.call_tir(cls.fused_matmul_add_relu, (x, w0, b0), out_sinfo=...)``; the Primitive
functions are removed, and then, as TVM's FuseTIR ends, ``DeadCodeElimination`` runs (the
kernels nothing calls any more go).

Symbolic dimensions (``n``) carry over: each kernel's own shape variables are replaced
by the fused function's, read off the buffers they meet.  A Primitive function this cannot
handle (a dimension that is an expression, a kernel with scalar parameters) is left as it is.

    mod = relax.transform.FuseTIR()(relax.transform.FuseOps()(mod))
"""

from __future__ import annotations

from typing import Any

from ...ir.module import GlobalVar, IRModule
from ...ir.node import replace
from ...ir.structural import structural_equal
from ...tir.buffer import Buffer, BufferRegion, decl_buffer
from ...tir.expr import BufferLoad, IntImm, IterVar, Var
from ...tir.function import PrimFunc
from ...tir.functor import StmtExprMutator, post_order_visit, substitute
from ...tir.stmt import Block, BlockRealize, BufferStore, For, LetStmt, seq
from ...transform import PassContext, module_pass
from ..expr import Call, DataflowBlock, Function, SeqExpr, VarBinding
from ..expr_functor import ExprMutator
from ..op.base import call_tir
from ..struct_info import TensorStructInfo
from ._util import map_functions
from .dead_code_elimination import DeadCodeElimination

__all__ = ["FuseTIR"]


class _BufferRenamer(StmtExprMutator):
    """Replace buffers (loads, stores, read/write regions) and rename blocks."""

    def __init__(self, buffers: dict[int, Buffer], taken_names: set[str]) -> None:
        self.buffers = buffers
        self.taken = taken_names

    def _buf(self, b: Buffer) -> Buffer:
        return self.buffers.get(id(b), b)

    def visit_buffer_load_(self, op: BufferLoad) -> Any:
        op = self.visit_children(op)
        new = self._buf(op.buffer)
        return op if new is op.buffer else replace(op, buffer=new)

    def visit_buffer_store_(self, op: BufferStore) -> Any:
        op = self.visit_children(op)
        new = self._buf(op.buffer)
        return op if new is op.buffer else replace(op, buffer=new)

    def visit_buffer_region_(self, op: BufferRegion) -> Any:
        op = self.visit_children(op)
        new = self._buf(op.buffer)
        return op if new is op.buffer else replace(op, buffer=new)

    def visit_block_(self, op: Block) -> Any:
        op = self.visit_children(op)
        name = _numbered(op.name_hint, self.taken)
        return op if name == op.name_hint else replace(op, name_hint=name)


def _numbered(name: str, taken: set[str]) -> str:
    """``name``, or when taken the first free ``base<k>`` counting on from its trailing
    number (``T_add`` -> ``T_add1``, ``compute1`` -> ``compute2``), as TVM's FuseTIR names
    repeated blocks."""
    candidate = name
    if candidate in taken:
        base = name.rstrip("0123456789")
        k = int(name[len(base):]) + 1 if len(base) < len(name) else 1
        while f"{base}{k}" in taken:
            k += 1
        candidate = f"{base}{k}"
    taken.add(candidate)
    return candidate


def _shape_ok(sinfo: Any) -> bool:
    """A tensor whose dimensions are numbers or symbolic variables (no expressions)."""
    return (isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None and not sinfo.is_unknown_dtype
            and all(isinstance(d, (IntImm, Var)) for d in sinfo.shape_values))


def _bind_dims(kernel_buffers: list[Buffer], buffers: list[Buffer]) -> dict[Var, Any] | None:
    """The kernel's symbolic dimensions in terms of the fused function's (``n`` -> ``n``,
    or -> ``4`` ...), reading each kernel buffer's shape against the buffer it becomes;
    None when the shapes do not fit."""
    dims: dict[int, tuple[Var, Any]] = {}
    for kb, b in zip(kernel_buffers, buffers):
        if kb.ndim != b.ndim or kb.dtype != b.dtype:
            return None
        for kd, d in zip(kb.shape, b.shape):
            if isinstance(kd, Var):
                if id(kd) in dims and not structural_equal(dims[id(kd)][1], d):
                    return None
                dims[id(kd)] = (kd, d)
            elif not (isinstance(kd, IntImm) and isinstance(d, IntImm) and kd.value == d.value):
                return None  # (int32 and int64 sizes are the same size)
    return dict(dims.values())


def _new_buffer(sinfo: TensorStructInfo, name: str) -> Buffer:
    return decl_buffer(tuple(sinfo.shape_values), sinfo.dtype, name)


def _unique(name: str, taken: set[str]) -> str:
    """``name``, else ``name_1``, then ``name_1_2`` ... (TVM's intermediate-buffer names)."""
    candidate, n = name, 0
    while candidate in taken:
        n += 1
        candidate = f"{candidate}_{n}"
    taken.add(candidate)
    return candidate


def _defined_vars(stmt: Any) -> list[Var]:
    """The loop, block and let variables ``stmt`` defines."""
    found: list[Var] = []

    def visit(n: Any) -> None:
        if isinstance(n, For):
            found.append(n.loop_var)
        elif isinstance(n, IterVar):
            found.append(n.var)
        elif isinstance(n, LetStmt):
            found.append(n.var)

    post_order_visit(stmt, visit)
    return found


def _fresh_vars(stmt: Any) -> Any:
    """``stmt`` with new variables where it defines some: a kernel called twice in one group
    must not define the same loop variable twice in the fused PrimFunc."""
    return substitute(stmt, {v: Var(v.name, v.dtype) for v in _defined_vars(stmt)})


def fuse_primitive(func: Function, mod: IRModule) -> PrimFunc | None:
    """The PrimFunc doing what the Primitive function ``func`` does, or None when it is not
    a chain of call_tir this pass can merge."""
    body = func.body
    if not (isinstance(body, SeqExpr) and len(body.blocks) == 1 and isinstance(body.blocks[0], DataflowBlock)):
        return None
    bindings = body.blocks[0].bindings
    if not all(_shape_ok(p.struct_info) for p in func.params):
        return None
    buffer_names: set[str] = set()
    value_buffer: dict[int, Buffer] = {}  # id(relax var) -> the buffer holding it
    params, buffer_map = [], {}
    for p in func.params:
        buf = _new_buffer(p.struct_info, p.name_hint)
        value_buffer[id(p)] = buf
        params.append(Var(f"p_{buf.name}", "handle"))
        buffer_map[params[-1]] = buf

    block_names: set[str] = set()
    allocs: list[Buffer] = []
    stmts = []
    for n, b in enumerate(bindings):
        call = b.value
        if not (isinstance(b, VarBinding) and isinstance(call, Call) and len(call.args) == 2
                and getattr(call.op, "name", None) == "relax.call_tir"):
            return None
        kernel = mod[call.args[0]]
        out_sinfo = call.sinfo_args[0]
        if not isinstance(kernel, PrimFunc) or not _shape_ok(out_sinfo):
            return None
        if not isinstance(kernel.body, BlockRealize) or kernel.body.block.name_hint != "root":
            return None
        args = list(call.args[1].fields)
        kernel_buffers = kernel.buffers
        if (len(kernel.params) != len(kernel_buffers) or len(kernel_buffers) != len(args) + 1
                or any(id(a) not in value_buffer for a in args)):
            return None  # scalar parameters, several outputs, or an argument we do not know
        root = kernel.body.block
        for buf in root.alloc_buffers:
            buffer_names.add(buf.name)
        out_buf = _new_buffer(out_sinfo, _unique(f"{kernel_buffers[-1].name}_intermediate", buffer_names))
        value_buffer[id(b.var)] = out_buf
        targets = [*(value_buffer[id(a)] for a in args), out_buf]
        dims = _bind_dims(kernel_buffers, targets)
        if dims is None:
            return None
        mapping = {id(kb): target for kb, target in zip(kernel_buffers, targets)}
        for buf in root.alloc_buffers:  # the kernel's own temporaries: a new buffer per call
            mapping[id(buf)] = replace(buf, data=Var(buf.data.name, buf.data.dtype),
                                       shape=tuple(substitute(d, dims) for d in buf.shape))
            allocs.append(mapping[id(buf)])
        if n + 1 < len(bindings):
            allocs.append(out_buf)
        else:
            params.append(Var("p_output0", "handle"))
            buffer_map[params[-1]] = out_buf
        kernel_body = substitute(_fresh_vars(root.body), dims)
        stmts.append(_BufferRenamer(mapping, block_names).visit(kernel_body))
    if body.body is not bindings[-1].var:
        return None
    known = {id(d) for buf in buffer_map.values() for d in buf.shape if isinstance(d, Var)}
    if any(isinstance(d, Var) and id(d) not in known for buf in allocs for d in buf.shape):
        return None  # a temporary's size no parameter tells
    root = Block("root", iter_vars=(), alloc_buffers=tuple(allocs), reads=(), writes=(), body=seq(*stmts))
    realize = BlockRealize((), IntImm("bool", 1), root)
    return PrimFunc(tuple(params), buffer_map, realize, None, {"tir.noalias": True})


class _CallsToCallTIR(ExprMutator):
    def __init__(self, mod: IRModule, fused: dict[GlobalVar, Function]) -> None:
        super().__init__(mod)
        self.fused = fused

    def visit_call_(self, op: Call) -> Any:
        call = super().visit_call_(op)
        if isinstance(call.op, GlobalVar) and call.op in self.fused:
            return call_tir(call.op, list(call.args), self.fused[call.op].ret_struct_info)
        return call


@module_pass(opt_level=0, name="FuseTIR")
class FuseTIR:
    """Merge each ``Primitive`` function's PrimFuncs into one PrimFunc: ``FuseTIR()(mod)``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        fused: dict[GlobalVar, Function] = {}
        prim_funcs: dict[GlobalVar, PrimFunc] = {}
        for gv, func in mod.functions.items():
            if isinstance(func, Function) and func.attrs.get("Primitive"):
                prim = fuse_primitive(func, mod)
                if prim is not None:
                    fused[gv] = func
                    prim_funcs[gv] = prim
        if not fused:
            return mod
        rewritten = map_functions(mod, lambda f, m: f if f.attrs.get("Primitive") else
                                  _CallsToCallTIR(m, fused).visit_expr(f))
        functions = {gv: prim_funcs.get(gv, f) for gv, f in rewritten.functions.items()}
        return DeadCodeElimination()(IRModule(functions, mod.attrs))
