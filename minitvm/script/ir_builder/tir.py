"""The TIR frames of the IR builder (TVM's ``tvm.script.ir_builder.tir``, imported as ``T``).

Scopes are ``with`` frames (``T.prim_func()``, ``T.block(name)``, ``T.serial(n)``,
``T.grid(...)``, ``T.Assert``, ``T.LetStmt``, ``T.If``/``T.Then``/``T.Else``,
``T.allocate``, ``T.decl_buffer``, ``T.attr``, ``T.launch_thread``, ``T.init()``); the
declarations a frame collects (``T.arg``, ``T.func_attr``, ``T.match_buffer``, ``T.axis.*``,
``T.reads``, ``T.writes``, ``T.where``, ``T.block_attr``, ``T.alloc_buffer``) and leaf
statements (``T.evaluate``, ``T.buffer_store``) act on the innermost open frame.  Expression
makers (``T.int32()``, ``T.float32(1)``, ``T.Buffer``, ``T.Cast`` ...) are TVMScript's own.
"""

from __future__ import annotations

from typing import Any

from ...ir.node import replace
from ...tir import op as _op
from ...tir.analysis import get_block_read_write_region
from ...tir.buffer import Buffer as _TirBuffer
from ...tir.buffer import BufferRegion
from ...tir.buffer import decl_buffer as _decl_buffer
from ...tir.expr import IntImm, IterVar, PrimExpr, Range, StringImm, Var, const, convert
from ...tir.function import PrimFunc
from ...tir.functor import StmtExprMutator, pre_order_visit
from ...tir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    Block,
    BlockRealize,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    MatchBufferRegion,
    Stmt,
    seq,
)
from ...tir.stmt import LetStmt as _LetStmtNode
from .. import tir as _script_tir
from .base import IRBuilder, IRBuilderFrame
from .ir import IRModuleFrame

# the annotation TVM's builder leaves on a block whose reads or writes were not declared, for
# a later pass to detect them (bit 1: reads, bit 2: writes)
_DETECT_ACCESS = "tir.script_parsing_detect_access"


def _body(frame: IRBuilderFrame, what: str) -> Stmt:
    if not frame.stmts:
        raise ValueError(f"{what} has an empty body: add a statement (e.g. T.evaluate(0))")
    return seq(*frame.stmts) if len(frame.stmts) > 1 else frame.stmts[0]


def _frame(kind: type, what: str) -> Any:
    frame = IRBuilder.current().find_frame(kind)
    if frame is None:
        raise ValueError(f"{what} must be inside {kind.__name__.replace('Frame', '')} frame")
    return frame


# -- functions ---------------------------------------------------------------------------------

class PrimFuncFrame(IRBuilderFrame):
    def __init__(self, is_private: bool = False) -> None:
        super().__init__()
        self.is_private = is_private
        self.name: str | None = None
        self.args: list[Var] = []
        self.buffer_map: dict = {}
        self.attrs: dict = {}
        self.ret_type: Any = None
        self.root_alloc_buffers: list[_TirBuffer] = []

    def finish(self, builder: IRBuilder) -> None:
        body = _body(self, "T.prim_func") if self.stmts else Evaluate(const(0, "int32"))
        body = _complete(body, self.root_alloc_buffers, list(self.buffer_map.values()))
        attrs = dict(self.attrs)
        if self.name is not None and not self.is_private:
            attrs.setdefault("global_symbol", self.name)
        func = PrimFunc(tuple(self.args), self.buffer_map, body, self.ret_type, attrs)
        module = builder.find_frame(IRModuleFrame)
        if module is not None:
            module.add_function(self.name or "main", func)
        else:
            builder.add(func)


def _complete(body: Stmt, root_allocs: list, params: list) -> Stmt:
    """What TVM's builder does to a finished function body (its ScriptComplete): a root block
    around a body that holds blocks, and each block's undeclared reads/writes detected."""
    if root_allocs or (isinstance(body, BlockRealize) and body.block.iter_vars) or \
            (not isinstance(body, BlockRealize) and _contains_block(body)):
        body = BlockRealize((), const(True, "bool"), Block("root", (), tuple(root_allocs), body=body))
    return _AccessDetector(params + list(root_allocs)).visit(body)


def _contains_block(stmt: Stmt) -> bool:
    found = []
    pre_order_visit(stmt, lambda n: found.append(n) if isinstance(n, BlockRealize) else not found)
    return bool(found)


class _AccessDetector(StmtExprMutator):
    def __init__(self, visible: list) -> None:
        self.visible = visible
        self.root = True

    def visit_block_(self, block: Block) -> Block:
        is_root, self.root = self.root, False
        self.visible.extend(block.alloc_buffers)
        self.visible.extend(m.buffer for m in block.match_buffers)
        new = self.visit_children(block)
        self.root = is_root
        mask = block.annotations.get(_DETECT_ACCESS)
        if mask is None:
            return new
        mask = mask.value if isinstance(mask, IntImm) else int(mask)
        reads, writes = get_block_read_write_region(new, self.visible)
        annotations = {k: v for k, v in new.annotations.items() if k != _DETECT_ACCESS}
        changes = {"annotations": annotations}
        if not is_root:
            if mask & 1:
                changes["reads"] = tuple(reads)
            if mask & 2:
                changes["writes"] = tuple(writes)
        return replace(new, **changes)


def prim_func(is_private: bool = False) -> PrimFuncFrame:
    """``with T.prim_func():`` -- a PrimFunc from the arguments and statements inside."""
    return PrimFuncFrame(is_private)


def arg(name: str, obj: Any) -> Any:
    """A parameter: a scalar variable, a handle, or a buffer (passed as ``<name>_handle``)."""
    frame = _frame(PrimFuncFrame, "T.arg")
    if isinstance(obj, _TirBuffer):
        handle = Var(f"{name}_handle", "handle")
        IRBuilder.name(name, obj)
        frame.args.append(handle)
        frame.buffer_map[handle] = obj
        return obj
    if isinstance(obj, Var):
        IRBuilder.name(name, obj)
        frame.args.append(obj)
        return obj
    raise TypeError(f"T.arg({name!r}): expected a variable or a T.Buffer, got {obj!r}")


def func_name(name: str) -> None:
    _frame(PrimFuncFrame, "T.func_name").name = name


def func_attr(attrs: dict) -> None:
    _frame(PrimFuncFrame, "T.func_attr").attrs.update(attrs)


def func_ret(ret_type: Any) -> Any:
    _frame(PrimFuncFrame, "T.func_ret").ret_type = ret_type
    return ret_type


def match_buffer(param: Any, shape: Any = None, dtype: str = "float32", data: Any = None,
                 strides: Any = None, elem_offset: Any = None, scope: str = "global",
                 align: int = -1, offset_factor: int = 0, buffer_type: str = "default",
                 axis_separators: Any = None) -> _TirBuffer:
    """A handle parameter (or, in a block, a buffer region) viewed as a buffer."""
    decl = _script_tir.match_buffer(param, shape, dtype, data, strides, elem_offset, scope, align,
                                    offset_factor, buffer_type, axis_separators)
    param = decl.source
    buf = decl.spec.make(param.name if isinstance(param, Var) else "buffer")
    if isinstance(param, BufferRegion):
        _frame(BlockFrame, "T.match_buffer of a region").match_buffers.append(MatchBufferRegion(buf, param))
        return buf
    frame = _frame(PrimFuncFrame, "T.match_buffer")
    if not any(a is param for a in frame.args):
        raise ValueError(f"T.match_buffer: {param!r} is not a parameter of the function")
    frame.buffer_map[param] = buf
    return buf


# -- blocks ------------------------------------------------------------------------------------

class BlockFrame(IRBuilderFrame):
    def __init__(self, name: str, no_realize: bool) -> None:
        super().__init__()
        self.name, self.no_realize = name, no_realize
        self.iter_vars: list[IterVar] = []
        self.iter_values: list[PrimExpr] = []
        self.reads: tuple | None = None
        self.writes: tuple | None = None
        self.predicate: Any = None
        self.annotations: dict = {}
        self.alloc_buffers: list[_TirBuffer] = []
        self.match_buffers: list[MatchBufferRegion] = []
        self.init: Stmt | None = None

    def finish(self, builder: IRBuilder) -> None:
        annotations = dict(self.annotations)
        detect = (1 if self.reads is None else 0) | (2 if self.writes is None else 0)
        if detect:
            annotations[_DETECT_ACCESS] = IntImm("int64", detect)
        block = Block(self.name, tuple(self.iter_vars), tuple(self.alloc_buffers), tuple(self.match_buffers),
                      self.reads or (), self.writes or (), self.init, _body(self, f"T.block({self.name!r})"),
                      annotations)
        if self.no_realize:
            if self.iter_values or self.predicate is not None:
                raise ValueError(f"T.block({self.name!r}, no_realize=True) cannot bind axes or a predicate")
            builder.add(block)
            return
        predicate = const(True, "bool") if self.predicate is None else convert(self.predicate)
        builder.add(BlockRealize(tuple(self.iter_values), predicate, block))


def block(name: str = "", no_realize: bool = False) -> BlockFrame:
    return BlockFrame(name, no_realize)


class BlockInitFrame(IRBuilderFrame):
    def finish(self, builder: IRBuilder) -> None:
        outer = builder.find_frame(BlockFrame)
        if outer is None:
            raise ValueError("T.init() must be inside a T.block")
        outer.init = _body(self, "T.init()")


def init() -> BlockInitFrame:
    return BlockInitFrame()


def where(predicate: Any) -> None:
    _frame(BlockFrame, "T.where").predicate = predicate


def reads(*regions: Any) -> None:
    _frame(BlockFrame, "T.reads").reads = _script_tir.reads(*regions).regions


def writes(*regions: Any) -> None:
    _frame(BlockFrame, "T.writes").writes = _script_tir.writes(*regions).regions


def block_attr(attrs: dict) -> None:
    _frame(BlockFrame, "T.block_attr").annotations.update(attrs)


def alloc_buffer(shape: Any, dtype: str = "float32", data: Any = None, strides: Any = None,
                 elem_offset: Any = None, scope: str = "global", align: int = -1,
                 offset_factor: int = 0, buffer_type: str = "default", axis_separators: Any = None) -> _TirBuffer:
    """A buffer allocated by the innermost block (or the function's root block)."""
    spec = _script_tir.alloc_buffer(shape, dtype, data, strides, elem_offset, scope, align, offset_factor,
                                    buffer_type, axis_separators).spec
    buf = spec.make("buffer")
    builder = IRBuilder.current()
    frame = builder.find_frame(BlockFrame)
    if frame is not None:
        frame.alloc_buffers.append(buf)
    else:
        _frame(PrimFuncFrame, "T.alloc_buffer").root_alloc_buffers.append(buf)
    return buf


def _axis_dom(dom: Any, dtype: str) -> Range:
    if isinstance(dom, Range):
        return dom
    if isinstance(dom, (tuple, list)) and len(dom) == 2:
        begin, end = _op._promote(dom[0], dom[1])
        return Range(begin, _script_tir.extent_between(begin, end))
    extent = convert(dom, dtype) if isinstance(dom, int) else convert(dom)
    return Range(const(0, extent.dtype), extent)


def _axis(kind: str, dom: Any, binding: Any, dtype: str) -> Var:
    frame = _frame(BlockFrame, f"T.axis.{kind}")
    binding = convert(binding)
    var = Var("", binding.dtype if isinstance(binding, PrimExpr) else dtype)
    frame.iter_vars.append(IterVar(_axis_dom(dom, var.dtype), var, kind))
    frame.iter_values.append(binding)
    return var


class _Axis:
    """``T.axis.spatial / reduce / scan / opaque / remap`` -- each adds a block iterator."""

    @staticmethod
    def spatial(dom: Any, binding: Any, dtype: str = "int32") -> Var:
        return _axis("spatial", dom, binding, dtype)

    @staticmethod
    def reduce(dom: Any, binding: Any, dtype: str = "int32") -> Var:
        return _axis("reduce", dom, binding, dtype)

    @staticmethod
    def scan(dom: Any, binding: Any, dtype: str = "int32") -> Var:
        return _axis("scan", dom, binding, dtype)

    @staticmethod
    def opaque(dom: Any, binding: Any, dtype: str = "int32") -> Var:
        return _axis("opaque", dom, binding, dtype)

    S, R = spatial, reduce

    @staticmethod
    def remap(kinds: str, bindings: Any, dtype: str = "int32") -> list[Var]:
        decl = _script_tir.axis.remap(kinds, bindings, dtype)
        out = []
        for k, b in zip(decl.kinds, decl.bindings):
            loop = _loop_of(b)
            if loop is None:
                raise ValueError(f"T.axis.remap: {b!r} is not the variable of an enclosing loop")
            out.append(_axis(_script_tir._kind_of(k), Range(loop.min, loop.extent), b, dtype))
        return out


axis = _Axis()


# -- loops -------------------------------------------------------------------------------------

class ForFrame(IRBuilderFrame):
    def __init__(self, specs: list) -> None:
        super().__init__()
        self.specs = specs
        self.vars = [Var("", s.extent.dtype) for s in specs]

    def enter_value(self) -> Any:
        return self.vars[0] if len(self.vars) == 1 else list(self.vars)

    def finish(self, builder: IRBuilder) -> None:
        body = _body(self, "a loop")
        for var, spec in reversed(list(zip(self.vars, self.specs))):
            thread = None if spec.thread is None else IterVar(None, Var("", var.dtype), IterVar.ThreadIndex,
                                                             spec.thread)
            body = For(var, spec.min, spec.extent, spec.kind, body, thread, dict(spec.annotations))
        builder.add(body)


def _loop_of(var: Any) -> Any:
    for frame in reversed(IRBuilder.current()._frames):
        if isinstance(frame, ForFrame):
            for v, spec in zip(frame.vars, frame.specs):
                if v is var:
                    return spec
    return None


def serial(start: Any, stop: Any = None, *, annotations: dict | None = None) -> ForFrame:
    return ForFrame([_script_tir.serial(start, stop, annotations=annotations)])


def parallel(start: Any, stop: Any = None, *, annotations: dict | None = None) -> ForFrame:
    return ForFrame([_script_tir.parallel(start, stop, annotations=annotations)])


def vectorized(start: Any, stop: Any = None, *, annotations: dict | None = None) -> ForFrame:
    return ForFrame([_script_tir.vectorized(start, stop, annotations=annotations)])


def unroll(start: Any, stop: Any = None, *, annotations: dict | None = None) -> ForFrame:
    return ForFrame([_script_tir.unroll(start, stop, annotations=annotations)])


def thread_binding(start: Any, stop: Any = None, thread: str | None = None, *,
                   annotations: dict | None = None) -> ForFrame:
    return ForFrame([_script_tir.thread_binding(start, stop, thread, annotations=annotations)])


def grid(*extents: Any) -> ForFrame:
    return ForFrame(list(_script_tir.grid(*extents)))


# -- other scopes ------------------------------------------------------------------------------

class _BodyFrame(IRBuilderFrame):
    """A frame whose node wraps its statements: ``make(body)`` builds it."""

    def __init__(self, what: str, make: Any, value: Any = None) -> None:
        super().__init__()
        self.what, self.make, self.value = what, make, value

    def enter_value(self) -> Any:
        return self if self.value is None else self.value

    def finish(self, builder: IRBuilder) -> None:
        builder.add(self.make(_body(self, self.what)))


def Assert(condition: Any, message: str) -> _BodyFrame:  # noqa: N802 - TVM's name
    msg = message.value if isinstance(message, StringImm) else message
    return _BodyFrame("T.Assert", lambda body: AssertStmt(convert(condition), msg, body))


def LetStmt(value: Any, type_annotation: Any = None, *, var: Any = None) -> _BodyFrame:  # noqa: N802
    value = convert(value)
    if var is None:
        dtype = getattr(type_annotation, "dtype", None) or value.dtype
        var = Var("", dtype)
    return _BodyFrame("T.LetStmt", lambda body: _LetStmtNode(var, value, body), var)


def attr(node: Any, attr_key: str, value: Any) -> _BodyFrame:
    value = convert(value) if isinstance(value, (int, float, PrimExpr)) else value
    return _BodyFrame("T.attr", lambda body: AttrStmt(node, attr_key, value, body))


def env_thread(thread_tag: str, dtype: str = "int32") -> IterVar:
    return IterVar(None, Var(thread_tag, dtype), IterVar.ThreadIndex, thread_tag)


def launch_thread(thread: Any, extent: Any) -> _BodyFrame:
    iv = env_thread(thread) if isinstance(thread, str) else thread
    if not isinstance(iv, IterVar):
        raise TypeError(f"T.launch_thread: expected a thread tag or T.env_thread(...), got {thread!r}")
    extent = convert(extent)
    iv = IterVar(Range(const(0, extent.dtype), extent), iv.var, IterVar.ThreadIndex, iv.thread_tag)
    return _BodyFrame("T.launch_thread", lambda body: AttrStmt(iv, "thread_extent", extent, body), iv.var)


def allocate(extents: Any, dtype: str = "float32", scope: str = "global", condition: Any = None,
             annotations: Any = None) -> _BodyFrame:
    if condition is not None or annotations:
        raise NotImplementedError("T.allocate(condition=/annotations=): minitvm's Allocate has neither")
    buf = _decl_buffer(extents, dtype, "", scope=scope)  # unnamed, as TVM's (printed "v")
    return _BodyFrame("T.allocate", lambda body: Allocate(buf, body), buf)


def decl_buffer(shape: Any, dtype: str = "float32", data: Any = None, strides: Any = None,
                elem_offset: Any = None, scope: str = "global", align: int = -1, offset_factor: int = 0,
                buffer_type: str = "default", axis_separators: Any = None) -> _BodyFrame:
    decl = _script_tir.decl_buffer(shape, dtype, data, strides, elem_offset, scope, align, offset_factor,
                                   buffer_type, axis_separators)
    if data is not None:
        raise NotImplementedError("T.decl_buffer(data=...) in the IR builder: minitvm has no DeclBuffer "
                                  "statement viewing existing memory")
    buf = decl.spec.make("buffer")
    return _BodyFrame("T.decl_buffer", lambda body: Allocate(buf, body), buf)


class IfFrame(IRBuilderFrame):
    def __init__(self, condition: Any) -> None:
        super().__init__()
        self.condition = convert(condition)
        self.then_case: Stmt | None = None
        self.else_case: Stmt | None = None

    def finish(self, builder: IRBuilder) -> None:
        if self.stmts:
            raise ValueError("T.If: statements belong in T.Then() / T.Else() frames")
        if self.then_case is None:
            raise ValueError("T.If needs a T.Then() frame")
        builder.add(IfThenElse(self.condition, self.then_case, self.else_case))


class _BranchFrame(IRBuilderFrame):
    def __init__(self, branch: str) -> None:
        super().__init__()
        self.branch = branch

    def finish(self, builder: IRBuilder) -> None:
        frame = builder._frames[-1] if builder._frames else None
        if not isinstance(frame, IfFrame):
            raise ValueError(f"T.{self.branch}() must be directly inside T.If")
        setattr(frame, "then_case" if self.branch == "Then" else "else_case", _body(self, f"T.{self.branch}()"))


def If(condition: Any) -> IfFrame:  # noqa: N802 - TVM's name
    return IfFrame(condition)


def Then() -> _BranchFrame:  # noqa: N802
    return _BranchFrame("Then")


def Else() -> _BranchFrame:  # noqa: N802
    return _BranchFrame("Else")


def While(condition: Any) -> None:  # noqa: N802
    raise NotImplementedError("T.While: minitvm's TIR has no while loop")


def realize(buffer_slice: Any, storage_scope: str, condition: Any = True) -> None:
    raise NotImplementedError("T.realize: minitvm's TIR has no BufferRealize (TVM's pre-schedule form)")


# -- leaf statements ---------------------------------------------------------------------------

def evaluate(value: Any) -> Evaluate:
    stmt = _script_tir.evaluate(value)
    IRBuilder.current().add(stmt)
    return stmt


def buffer_store(buffer: _TirBuffer, value: Any, indices: Any, predicate: Any = None) -> BufferStore:
    if predicate is not None:
        raise NotImplementedError("T.buffer_store(predicate=): minitvm's TIR has no predicated stores")
    stmt = BufferStore(buffer, convert(value, buffer.dtype) if isinstance(value, (int, float)) else value,
                       tuple(convert(i) for i in indices))
    IRBuilder.current().add(stmt)
    return stmt


def __getattr__(name: str) -> Any:
    """Everything else -- scalar types, T.Buffer, operators, intrinsics -- is TVMScript's."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_script_tir, name)



def Buffer(shape: Any, dtype: str = "float32", data: Any = None, strides: Any = None,  # noqa: N802
           elem_offset: Any = None, scope: str = "global", align: int = -1, offset_factor: int = 0,
           buffer_type: str = "", axis_separators: Any = None) -> Any:
    """A buffer (TVM's builder makes one at once; a ``T.arg`` or ``IRBuilder.name`` names it)."""
    return _script_tir.Buffer(shape, dtype, data, strides, elem_offset, scope, align, offset_factor,
                              buffer_type, axis_separators).make("buffer")
