"""External backends that ship with minitvm (TVM's ``relax.backend.contrib``)."""

from . import ccompiler

__all__ = ["ccompiler"]
