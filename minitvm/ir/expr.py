"""``tvm.ir.expr``: where TVM's code names ``GlobalVar`` (the same object as ``minitvm.ir.GlobalVar``)."""

from .module import GlobalVar

__all__ = ["GlobalVar"]
