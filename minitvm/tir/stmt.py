"""TensorIR statements: loops, blocks, stores and control flow."""

from __future__ import annotations

from typing import Any, ClassVar

from ..ir.node import Node, defines, node
from .buffer import Buffer, BufferRegion
from .expr import PrimExpr, StringImm, Var, const, convert

__all__ = ["Stmt", "BufferStore", "Evaluate", "LetStmt", "AttrStmt", "AssertStmt", "ForKind", "For",
           "IfThenElse", "SeqStmt", "Allocate", "AllocateConst", "MatchBufferRegion", "Block", "BlockRealize",
           "seq"]


class Stmt(Node):
    __slots__ = ()


@node
class BufferStore(Stmt):
    """``buffer[indices] = value``."""

    buffer: Buffer
    value: PrimExpr
    indices: tuple
    span: Any = None  # ir.Span: where TVMScript wrote it (error messages only)
    predicate: Any = None  # a vector store: a bool vector of the lanes written (TVM's predicated store)

    def __post_init__(self) -> None:
        super().__post_init__()
        # as TVM's constructor: a Python number is a constant of the buffer's dtype
        if isinstance(self.value, (int, float)):
            object.__setattr__(self, "value", const(self.value, self.buffer.dtype))
        if any(isinstance(i, int) for i in self.indices):
            object.__setattr__(self, "indices", tuple(convert(i) for i in self.indices))


@node
class Evaluate(Stmt):
    """Evaluate an expression for its side effect (an extern call)."""

    value: PrimExpr

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.value, (int, float)):  # Evaluate(0), as TVM: a constant
            object.__setattr__(self, "value", convert(self.value))


@node
class LetStmt(Stmt):
    var: Var = defines()
    value: PrimExpr = None  # type: ignore[assignment]
    body: Stmt = None  # type: ignore[assignment]


@node
class AttrStmt(Stmt):
    """``body`` annotated with ``attr_key = value`` about ``node`` (TVM's AttrStmt).

    ``attr_key == "thread_extent"`` with an :class:`IterVar` node launches GPU threads
    (``T.launch_thread``): the thread index ``node.var`` runs over ``[0, value)`` in ``body``.
    """

    node: Any
    attr_key: str
    value: PrimExpr
    body: Stmt

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.value, (int, float)):  # AttrStmt(iv, "thread_extent", 1, ...) as TVM
            object.__setattr__(self, "value", convert(self.value))


@node
class AssertStmt(Stmt):
    condition: PrimExpr
    message: str
    body: Stmt

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.message, StringImm):  # TVM holds the message as a StringImm
            object.__setattr__(self, "message", self.message.value)


class ForKind:
    """Loop kinds; the strings are what ``T.serial``/``T.parallel``/... produce."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    THREAD_BINDING = "thread_binding"
    ALL = (SERIAL, PARALLEL, VECTORIZED, UNROLLED, THREAD_BINDING)


@node
class For(Stmt):
    """``for loop_var in range(min, min + extent)``, run as ``kind`` says."""

    loop_var: Var = defines()
    min: PrimExpr = None  # type: ignore[assignment]
    extent: PrimExpr = None  # type: ignore[assignment]
    kind: str = ForKind.SERIAL
    body: Stmt = None  # type: ignore[assignment]
    thread_binding: Any = None
    annotations: dict = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.annotations is None:
            object.__setattr__(self, "annotations", {})
        for key in ("min", "extent"):  # For(v, 0, 8): constants of the loop variable's dtype
            if isinstance(getattr(self, key), int):
                object.__setattr__(self, key, const(getattr(self, key), self.loop_var.dtype))
        if self.kind not in ForKind.ALL:
            raise ValueError(f"unknown loop kind {self.kind!r}; expected one of {ForKind.ALL}")


@node
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@node
class SeqStmt(Stmt):
    """Statements run one after another."""

    seq: tuple

    def __len__(self) -> int:
        return len(self.seq)

    def __getitem__(self, i: int) -> Stmt:
        return self.seq[i]


def seq(*stmts: Stmt) -> Stmt:
    """Sequence statements, flattening nested sequences; one statement stays itself."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            flat.extend(s.seq)
        else:
            flat.append(s)
    return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat))


@node
class Allocate(Stmt):
    """Storage for ``buffer`` (its shape and dtype) live while ``body`` runs.

    TVM splits this into ``Allocate`` + ``DeclBuffer``; one node is enough here.
    """

    buffer: Buffer = defines()
    body: Stmt = None  # type: ignore[assignment]


@node
class AllocateConst(Stmt):
    """Constant data (``T.allocate_const``) at ``buffer_var`` while ``body`` runs; buffers view
    it with ``T.decl_buffer(shape, dtype, data=buffer_var)``.

    ``data`` holds the values flat, in row-major order of ``extents``.
    """

    buffer_var: Var = defines()
    dtype: str = "float32"
    extents: tuple = ()
    data: tuple = ()
    body: Stmt = None  # type: ignore[assignment]
    annotations: dict = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.annotations is None:
            object.__setattr__(self, "annotations", {})


@node
class MatchBufferRegion(Node):
    """Inside a block, ``buffer`` is a view of the region ``source``."""

    buffer: Buffer = defines()
    source: BufferRegion = None  # type: ignore[assignment]


@node
class Block(Stmt):
    """A unit of computation with its own iteration variables (``T.block``).

    The block's signature (iter_vars with domains, reads, writes) lets schedules
    move and transform it without looking inside its body.
    """

    # TVM's structural equality ignores a block's name (schedules rename blocks freely)
    _seq_ignore: ClassVar[frozenset[str]] = frozenset({"name_hint"})

    name_hint: str
    iter_vars: tuple = defines(())
    alloc_buffers: tuple = defines(())
    match_buffers: tuple = ()
    reads: tuple = ()
    writes: tuple = ()
    init: Stmt | None = None
    body: Stmt = None  # type: ignore[assignment]
    annotations: dict = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.annotations is None:
            object.__setattr__(self, "annotations", {})
        for key in ("alloc_buffers", "match_buffers", "reads", "writes"):  # None: none (TVM)
            if getattr(self, key) is None:
                object.__setattr__(self, key, ())
        if self.body is None:
            raise ValueError(f"block {self.name_hint!r} needs a body")

    @property
    def name(self) -> str:
        return self.name_hint


@node
class BlockRealize(Stmt):
    """Runs ``block`` with its iter_vars bound to ``iter_values`` when ``predicate`` holds."""

    iter_values: tuple
    predicate: PrimExpr
    block: Block
    span: Any = None  # ir.Span of the ``with T.block`` line (error messages only)

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.predicate, (bool, int)):  # BlockRealize(..., predicate=True)
            object.__setattr__(self, "predicate", const(bool(self.predicate), "bool"))

