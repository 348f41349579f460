"""Core IR: nodes, structural equality, modules, dtypes."""

from . import base, dtype
from .global_info import DummyGlobalInfo, GlobalInfo, VDevice
from .module import GlobalVar, IRModule
from .node import Node, node, replace
from .op import Op, register_op, register_op_attr
from .structural import assert_structural_equal, structural_equal, structural_hash

__all__ = ["base", "Node", "node", "replace", "GlobalVar", "IRModule", "dtype", "Op", "register_op",
           "register_op_attr",
           "structural_equal", "structural_hash", "assert_structural_equal", "Range",
           "GlobalInfo", "VDevice", "DummyGlobalInfo"]


def Range(begin: object, end: object = None) -> object:  # noqa: N802 - TVM's tvm.ir.Range
    """TVM's ``tvm.ir.Range(begin, end)`` (``Range(n)`` = ``[0, n)``): a ``tir.Range`` of
    ``min=begin, extent=end - begin``.  The node lives in :mod:`minitvm.tir` (imported here
    lazily: ``ir`` sits below ``tir``)."""
    from ..tir import op
    from ..tir.expr import Range as _Range
    from ..tir.expr import const, convert

    if end is None:
        begin, end = 0, begin
    end = convert(end)
    begin = const(begin, end.dtype) if isinstance(begin, int) else convert(begin)
    return _Range(begin, op.sub(end, begin))


def _from_min_extent(min_value: object, extent: object) -> object:
    from ..tir.expr import Range as _Range

    return _Range.from_min_extent(min_value, extent)


Range.from_min_extent = _from_min_extent  # type: ignore[attr-defined]


def __getattr__(name: str):
    # ``tvm.ir.transform`` is the pass infrastructure; import it on first use, since
    # minitvm.transform itself imports this package
    if name == "transform":
        import importlib

        return importlib.import_module(".transform", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
