"""``tvm.runtime.container``: where TVM's code reaches the runtime's containers (``ShapeTuple``)."""

from .vm.builtins import ShapeTuple

__all__ = ["ShapeTuple"]
