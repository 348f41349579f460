"""``tvm_ffi.access_path``: paths into an object, for underlining and annotating printed text."""

from minitvm.ir.access_path import AccessKind, AccessPath, AccessStep

__all__ = ["AccessKind", "AccessPath", "AccessStep"]
