"""Core IR: nodes, structural equality, modules, dtypes."""

import importlib

from . import base, diagnostics, dtype, expr
from .container import Array, Map
from .global_info import DummyGlobalInfo, GlobalInfo, VDevice
from .json_io import load_json, save_json
from .module import GlobalVar, IRModule
from .node import Node, node, replace
from .op import Op, register_op, register_op_attr
from .span import Span
from .structural import assert_structural_equal, structural_equal, structural_hash
from .type import PointerType, PrimType, TupleType, Type

__all__ = ["Array", "Map", "base", "Node", "node", "replace", "GlobalVar", "IRModule", "dtype", "Op", "register_op",
           "register_op_attr",
           "structural_equal", "structural_hash", "assert_structural_equal", "Range",
           "GlobalInfo", "VDevice", "DummyGlobalInfo", "Span", "Type", "PrimType", "PointerType", "TupleType",
           "save_json", "load_json"]


# ``Range`` (TVM's ``tvm.ir.Range(begin, end)``) builds a ``tir.Range``, a node of the floor above;
# minitvm.tir installs it here as ``tir.expr.ir_range`` when it loads (``import minitvm`` loads both).


def __getattr__(name: str):
    if name == "transform":  # ``tvm.ir.transform`` is the pass infrastructure
        # lazy: cycle -- minitvm.transform itself imports this package
        return importlib.import_module(".transform", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
