"""Where TVM keeps its per-target tensor intrinsics (``tvm.tir.tensor_intrin.x86`` ...).

minitvm registers no target intrinsics of its own: the host CPU code is vectorized by LLVM.
Register one with ``tir.TensorIntrin.register(name, desc, impl)`` (see
``minitvm.tir.schedule.blockize``) and use it with ``sch.tensorize``. The package exists so
that code importing it, as TVM's schedule tests do, runs unchanged.
"""

from ..schedule.blockize import TensorIntrin

__all__ = ["TensorIntrin"]
