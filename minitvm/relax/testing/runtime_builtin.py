"""The codes of the VM's shape builtins under TVM's names (``relax.testing.runtime_builtin``):
``vm.builtin.match_shape`` takes ``(MatchShapeCode, value)`` per dimension,
``vm.builtin.make_shape`` ``(MakeShapeCode, value)``."""

from __future__ import annotations

from enum import IntEnum

from ...runtime.vm import builtins as _b

__all__ = ["MatchShapeCode", "MakeShapeCode"]


class MatchShapeCode(IntEnum):
    ASSERT_EQUAL_TO_IMM = _b.MATCH_IMM
    STORE_TO_HEAP = _b.MATCH_STORE
    NO_OP = _b.MATCH_ANY
    ASSERT_EQUAL_TO_LOAD = _b.MATCH_HEAP


class MakeShapeCode(IntEnum):
    USE_IMM = _b.MAKE_IMM
    LOAD_SHAPE = _b.MAKE_LOAD
