"""Core IR: nodes, structural equality, modules, dtypes."""

from . import base, dtype
from .global_info import DummyGlobalInfo, GlobalInfo, VDevice
from .module import GlobalVar, IRModule
from .node import Node, node, replace
from .op import Op, register_op, register_op_attr
from .structural import assert_structural_equal, structural_equal, structural_hash

__all__ = ["base", "GlobalInfo", "DummyGlobalInfo", "VDevice",
           "Node", "node", "replace", "GlobalVar", "IRModule", "dtype", "Op", "register_op",
           "register_op_attr",
           "structural_equal", "structural_hash", "assert_structural_equal"]
