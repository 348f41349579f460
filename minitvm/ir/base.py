"""``tvm.ir.base``'s names: the node base and structural comparison.

TVM's tests import ``assert_structural_equal`` from here; the implementations live in
:mod:`minitvm.ir.node` and :mod:`minitvm.ir.structural`.
"""

from __future__ import annotations

from .node import Node
from .structural import assert_structural_equal, structural_equal, structural_hash

__all__ = ["Node", "structural_equal", "structural_hash", "assert_structural_equal"]
