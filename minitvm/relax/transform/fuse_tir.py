"""FuseTIR: each ``Primitive`` function FuseOps made becomes one PrimFunc.

A fused function is a chain of ``R.call_tir`` in one dataflow block::

    def fused_matmul_add_relu(x, w0, b0):            # Primitive
        lv = R.call_tir(cls.matmul, (x, w0), ...)
        lv1 = R.call_tir(cls.add, (lv, b0), ...)
        gv = R.call_tir(cls.relu, (lv1,), ...)

FuseTIR writes one PrimFunc ``fused_matmul_add_relu(x, w0, b0, T_relu_intermediate)`` whose
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
from ..analysis.struct_info_analysis import definable_tir_vars_in_struct_info
from ..analysis.vars import free_vars
from ..expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    Function,
    SeqExpr,
    Tuple,
    TupleGetItem,
    VarBinding,
    _set_struct_info,
)
from ..expr import Var as RelaxVar
from ..expr_functor import ExprMutator
from ..op.base import call_tir
from ..struct_info import TensorStructInfo, TupleStructInfo
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


def _is_exposed(func: Function) -> bool:
    return bool(func.attrs and func.attrs.get("global_symbol"))


def _replace_callees(mod: IRModule, new_funcs: dict[GlobalVar, tuple[GlobalVar, Function]],
                     update_args: Any) -> IRModule:
    """``mod`` with the private functions in ``new_funcs`` replaced (under a new GlobalVar of
    the same name) and every call of them rewritten by ``update_args(old_gv, args)``."""
    replacements = {old: new for old, (new, _) in new_funcs.items()}

    class _CallSites(ExprMutator):
        def visit_call_(self, op: Call) -> Any:
            call = super().visit_call_(op)
            if isinstance(call.op, GlobalVar) and call.op in replacements:
                new = Call(replacements[call.op], update_args(call.op, list(call.args)), call.attrs, call.sinfo_args)
                return self.builder_.normalize(new)
            return call

    functions = {}
    for gv, func in mod.functions.items():
        if gv in new_funcs:
            new_gv, new_func = new_funcs[gv]
            functions[new_gv] = new_func
        else:
            functions[gv] = func
    out = IRModule(functions, mod.attrs)
    return map_functions(out, lambda f, m: _CallSites(m).visit_expr(f))


def expand_tuple_arguments(mod: IRModule) -> IRModule:
    """TVM's ExpandTupleArguments (without its cleanup): a private function's tuple parameter
    ``p`` becomes one parameter per field (``p_0``, ``p_1`` ..., nested tuples recursively),
    rebuilt as ``p = (p_0, p_1)`` at the top of its body; callers pass ``t[0], t[1]``."""
    new_funcs: dict[GlobalVar, tuple[GlobalVar, Function]] = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, Function) or _is_exposed(func):
            continue
        if not any(isinstance(p.struct_info, TupleStructInfo) for p in func.params):
            continue
        params: list[Var] = []
        bindings: list[VarBinding] = []

        def expand(param: Var, params: list = params, bindings: list = bindings) -> None:
            sinfo = param.struct_info
            if isinstance(sinfo, TupleStructInfo):
                fields = []
                for i, field in enumerate(sinfo.fields):
                    new = RelaxVar(f"{param.name_hint}_{i}", field)
                    fields.append(new)
                    expand(new)
                tup = Tuple(fields)
                _set_struct_info(tup, sinfo)
                bindings.append(VarBinding(param, tup))
            else:
                params.append(param)

        for p in func.params:
            expand(p)
        body = SeqExpr((BindingBlock(tuple(bindings)), *func.body.blocks), func.body.body) \
            if isinstance(func.body, SeqExpr) else SeqExpr((BindingBlock(tuple(bindings)),), func.body)
        new_func = Function(params, body, func.ret_struct_info, func.is_pure, func.attrs)
        new_funcs[gv] = (GlobalVar(gv.name_hint), new_func)
    if not new_funcs:
        return mod

    def flatten(_: GlobalVar, args: list) -> list:
        out: list = []

        def expand_arg(arg: Any) -> None:
            sinfo = arg.struct_info
            if isinstance(sinfo, TupleStructInfo):
                for i in range(len(sinfo.fields)):
                    expand_arg(TupleGetItem(arg, i))
            else:
                out.append(arg)

        for a in args:
            expand_arg(a)
        return out

    return _replace_callees(mod, new_funcs, flatten)


def remove_unused_parameters(mod: IRModule) -> IRModule:
    """TVM's RemoveUnusedParameters: a private function's parameters its body never reads go,
    and the callers stop passing them."""
    new_funcs: dict[GlobalVar, tuple[GlobalVar, Function]] = {}
    masks: dict[GlobalVar, list[bool]] = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, Function) or _is_exposed(func):
            continue
        used = {id(v) for v in free_vars(func.body)}
        mask = [id(p) in used for p in func.params]
        if all(mask):
            continue
        kept = [p for p, m in zip(func.params, mask) if m]
        defined = {id(v) for p in kept for v in definable_tir_vars_in_struct_info(p.struct_info)}
        needed = [v for p in func.params for v in definable_tir_vars_in_struct_info(p.struct_info)
                  if id(v) not in defined]
        if needed:
            continue  # a dropped parameter defines a symbolic variable: kept (no PrimValue params here)
        new_funcs[gv] = (GlobalVar(gv.name_hint), Function(kept, func.body, func.ret_struct_info, func.is_pure,
                                                           func.attrs))
        masks[gv] = mask
    if not new_funcs:
        return mod
    return _replace_callees(mod, new_funcs, lambda gv, args: [a for a, m in zip(args, masks[gv]) if m])


@module_pass(opt_level=0, name="FuseTIR")
class FuseTIR:
    """Merge each ``Primitive`` function's PrimFuncs into one PrimFunc: ``FuseTIR()(mod)``.

    As TVM's FuseTIR, it first flattens the tuple parameters of private functions
    (ExpandTupleArguments), canonicalizes bindings, removes dead code and unused parameters,
    and ends with DeadCodeElimination."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        from .canonicalize_bindings import CanonicalizeBindings  # noqa: PLC0415 - a sibling pass

        if not any(isinstance(f, Function) and f.attrs.get("Primitive") for f in mod.functions.values()):
            # nothing to fuse (e.g. a module already lowered for the VM, whose direct PrimFunc
            # calls the cleanup passes cannot re-normalize): only the final cleanup
            return DeadCodeElimination()(mod)
        mod = DeadCodeElimination()(CanonicalizeBindings()(expand_tuple_arguments(mod)))
        mod = remove_unused_parameters(mod)
        return _fuse_tir(mod)


def _fuse_tir(mod: IRModule) -> IRModule:
    fused: dict[GlobalVar, Function] = {}
    prim_funcs: dict[GlobalVar, PrimFunc] = {}
    for gv, func in mod.functions.items():
        if isinstance(func, Function) and func.attrs.get("Primitive"):
            prim = fuse_primitive(func, mod)
            if prim is not None:
                fused[gv] = func
                prim_funcs[gv] = prim
    if fused:
        mod = map_functions(mod, lambda f, m: f if f.attrs.get("Primitive") else
                            _CallsToCallTIR(m, fused).visit_expr(f))
        mod = IRModule({gv: prim_funcs.get(gv, f) for gv, f in mod.functions.items()}, mod.attrs)
    return DeadCodeElimination()(mod)
