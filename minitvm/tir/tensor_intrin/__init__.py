"""Per-target tensor intrinsics, as TVM's ``tvm.tir.tensor_intrin``.

``x86`` registers AVX-512 FMA intrinsics (``avx512_fma_f32_1x16``, and register-tile
micro-kernels made by ``x86.avx512_fma_tile(rows, cols, k)``) and TVM's int8 dot product
``dot_16x4_vnni`` (``x86.VNNI_DOT_16x4_INTRIN``: one AVX-512 VNNI ``vpdpbusd``); use them with
``sch.tensorize(loop, name)``.  Register your own with ``tir.TensorIntrin.register(name, desc,
impl)`` (see ``minitvm.tir.schedule.blockize``).
"""

from ..schedule.blockize import TensorIntrin
from . import x86

__all__ = ["TensorIntrin", "x86"]
