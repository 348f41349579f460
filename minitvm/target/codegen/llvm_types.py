"""LLVM types and small IR-building helpers shared by the scalar (``llvm_emit.py``) and the
vector (``vector.py``) emitters."""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from ...ir import dtype as _dt

__all__ = ["I1", "I8", "I32", "I64", "PTR", "VOID", "llvm_type", "mem_type", "FunctionAttrs", "LoopID",
           "alloca", "store_atomic", "CodegenError", "FoldingBuilder"]

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()


def llvm_type(dtype: str) -> ir.Type:
    """The register type of a TIR dtype (bool is ``i1``)."""
    dtype = str(dtype)
    if dtype == "bool":
        return I1
    if dtype == "float32":
        return ir.FloatType()
    if dtype == "float64":
        return ir.DoubleType()
    if dtype == "float16":
        return ir.HalfType()
    if dtype == "handle":
        return PTR
    if _dt.is_int(dtype):
        return ir.IntType(_dt.bits(dtype))
    raise TypeError(f"LLVM codegen: unsupported dtype {dtype!r}")


def mem_type(dtype: str) -> ir.Type:
    """The in-memory type: bool is stored in a byte, like numpy's."""
    return I8 if str(dtype) == "bool" else llvm_type(dtype)



def _int_constant(value: ir.Value) -> int | None:
    """The integer a scalar integer constant holds (None: not one)."""
    if isinstance(value, ir.Constant) and isinstance(value.type, ir.IntType) and value.type.width > 1 \
            and isinstance(value.constant, int) and not isinstance(value.constant, bool):
        return value.constant
    return None


def _wrapped(value: int, width: int) -> int:
    """``value`` modulo 2**width, as a signed number (what the instruction computes; an nsw
    overflow would be poison, which any value refines)."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


#: the IRBuilder methods whose instruction has no effect but its value, a function of its
#: operands (arguments) alone: :class:`FoldingBuilder` reuses an equal one of the same block
PURE_METHODS = ("add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr", "and_", "or_",
                "xor", "icmp_signed", "icmp_unsigned", "select", "gep", "zext", "sext", "trunc",
                "insert_element", "extract_element", "shuffle_vector")


class FoldingBuilder(ir.IRBuilder):
    """An IRBuilder that does integer add, sub and mul of constants itself, and drops adding 0
    and multiplying by 1: unrolled loops bind their variable to a constant, so index arithmetic
    was ~13% constant-only instructions (``add i64 0, 0``, ``mul i64 2, 16``) that Python
    formatted and LLVM parsed and folded, to the same optimized code.

    A pure instruction (:data:`PURE_METHODS`) equal to one already built at the end of the
    same block is that one: every element of an unrolled row computed its address from
    scratch (``mul rc, 81``, ``urem fused, 9``, ... again per element), which Python formatted
    and LLVM parsed and merged again (early CSE).  Operands compare as llvmlite does (constants
    by their text, other values by identity); named instructions are left alone."""

    def __init__(self, block: ir.Block | None = None) -> None:
        super().__init__(block)
        self._seen_block: ir.Block | None = None
        self._seen: dict[tuple, ir.Value] = {}

    def _pure(self, method: str, args: tuple, build: Any) -> ir.Value:
        """``build()``'s instruction (``method`` of ``args``), or the equal one built before it
        in this block."""
        if self._anchor != len(self._block.instructions):  # inserting in the middle: no earlier-than
            return build()
        if self._seen_block is not self._block:
            self._seen_block, self._seen = self._block, {}
        key = (method, *args)
        try:
            value = self._seen.get(key)
        except TypeError:  # an unhashable argument (a list of indices: made a tuple below)
            return build()
        if value is None:
            value = self._seen[key] = build()
        return value

    def _folded(self, op: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value | None:
        a, b = _int_constant(lhs), _int_constant(rhs)
        if a is not None and b is not None and lhs.type == rhs.type:
            value = a + b if op == "add" else a - b if op == "sub" else a * b
            return ir.Constant(lhs.type, _wrapped(value, lhs.type.width))
        if lhs.type != rhs.type:
            return None
        unit = 1 if op == "mul" else 0
        if b == unit:
            return lhs
        if a == unit and op != "sub":
            return rhs
        return None

    def add(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: tuple = ()) -> ir.Value:
        folded = self._folded("add", lhs, rhs)
        return self._reused("add", lhs, rhs, name=name, flags=flags) if folded is None else folded

    def sub(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: tuple = ()) -> ir.Value:
        folded = self._folded("sub", lhs, rhs)
        return self._reused("sub", lhs, rhs, name=name, flags=flags) if folded is None else folded

    def mul(self, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: tuple = ()) -> ir.Value:
        folded = self._folded("mul", lhs, rhs)
        return self._reused("mul", lhs, rhs, name=name, flags=flags) if folded is None else folded

    def _reused(self, method: str, *args: Any, name: str = "", **kwargs: Any) -> ir.Value:
        """The base builder's ``method(*args, **kwargs)``, or the equal instruction before it."""
        build = getattr(super(), method)
        if name:
            return build(*args, name=name, **kwargs)
        key = tuple(tuple(map(_key_part, a)) if isinstance(a, list) else _key_part(a) for a in args) \
            + tuple(sorted(kwargs.items()))
        return self._pure(method, key, lambda: build(*args, **kwargs))


class _IntConstantKey:
    """Marks an integer constant in a :class:`FoldingBuilder` key."""


_INT_KEY = _IntConstantKey()


def _key_part(value: Any) -> Any:
    """``value`` as part of a reuse key: an integer constant as its width and number (the same
    equality as llvmlite's, which compares and hashes constants by their text, formatted anew
    at every lookup), anything else as itself."""
    if value.__class__ is ir.Constant and value.type.__class__ is ir.IntType and value.constant.__class__ is int:
        return _INT_KEY, value.type.width, value.constant
    return value


def _reusing(method: str) -> Any:
    def reused(self: FoldingBuilder, *args: Any, **kwargs: Any) -> ir.Value:
        return self._reused(method, *args, **kwargs)

    reused.__name__ = method
    return reused


for _method in PURE_METHODS:
    if _method not in FoldingBuilder.__dict__:
        setattr(FoldingBuilder, _method, _reusing(_method))


class FunctionAttrs(ir.values.FunctionAttributes):
    """Function attributes that also accept string attributes (``"key"="value"``)."""

    def add(self, name: str) -> None:
        if name.startswith('"'):
            set.add(self, name)
        else:
            super().add(name)


class LoopID(ir.values.MDValue):
    """A distinct, self-referencing loop-ID metadata node (``!0 = distinct !{!0, ...}``)."""

    def __init__(self, module: ir.Module, properties: list):
        super().__init__(module, [], name=str(len(module.metadata)))
        self.operands = (self, *properties)

    def descr(self, buf: list) -> None:
        refs = ", ".join(op.get_reference() for op in self.operands)
        buf += (f"distinct !{{ {refs} }}", "\n")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)


def alloca(builder: ir.IRBuilder, ty: ir.Type, size: ir.Value | None = None, name: str = "") -> ir.Value:
    """A stack slot as an opaque ``ptr`` (llvmlite would type it ``ty*``)."""
    slot = builder.alloca(ty, size=size, name=name)
    slot.type = PTR
    return slot


def store_atomic(builder: ir.IRBuilder, value: ir.Value, ptr: ir.Value, align: int) -> None:
    """``store atomic ... monotonic``: llvmlite's own ``store_atomic`` still expects typed pointers."""
    builder._insert(ir.instructions.StoreAtomicInstr(builder.block, value, ptr, "monotonic", align))


class CodegenError(Exception):
    """The function is not in the form the LLVM code generator accepts."""
