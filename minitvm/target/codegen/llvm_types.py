"""LLVM types and small IR-building helpers shared by the scalar (``llvm_emit.py``) and the
vector (``vector.py``) emitters."""

from __future__ import annotations

from llvmlite import ir

from ...ir import dtype as _dt

__all__ = ["I1", "I8", "I32", "I64", "PTR", "VOID", "llvm_type", "mem_type", "FunctionAttrs", "LoopID",
           "alloca", "store_atomic", "CodegenError"]

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
