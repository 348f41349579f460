"""Run a test as if on another x86 CPU: the same tests then check an AVX-512 machine and an AVX2
one, whichever runs them.

minitvm asks about the CPU in one place (:mod:`minitvm.runtime.cpu`), so pretending there reaches
every decision that depends on it: what ``target="llvm"`` compiles for, whether a library may run
here (:mod:`minitvm.target.codegen.cpu_check`), whether the VM runs a model as one native entry,
and the register tiles of default schedules.  Only what is *checked* is pretended: code that the
real CPU cannot run must still not be called.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from ..runtime import cpu as _cpu
from ..target.tir_build import clear_kernel_cache

__all__ = ["pretend_cpu", "AVX2_CPU", "AVX512_CPU", "MASKED_AVX512_CPU"]

#: LLVM's names of two generic x86-64 levels: AVX2 + FMA, and that plus AVX-512 (F, CD, BW, DQ, VL)
AVX2_CPU, AVX512_CPU = "x86-64-v3", "x86-64-v4"
#: a Zen 4 whose AVX-512 the virtual machine hides (seen on CI machines): LLVM names the CPU
#: ``znver4``, a name that brings AVX-512, while its feature table says AVX-512 is off
MASKED_AVX512_CPU = "znver4"
_AVX512_OF_V4 = ("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl")


@contextlib.contextmanager
def pretend_cpu(name: str) -> Iterator[None]:
    """Within the block, this process's CPU is ``name`` (:data:`AVX2_CPU`, :data:`AVX512_CPU` or
    :data:`MASKED_AVX512_CPU`): the real CPU's features with every AVX-512 feature off (AVX2,
    masked), or with x86-64-v4's turned on.
    Kernels built before or during the pretence are not reused (the kernel cache is cleared)."""
    if name not in (AVX2_CPU, AVX512_CPU, MASKED_AVX512_CPU):
        raise ValueError(f"pretend_cpu: knows {AVX2_CPU!r}, {AVX512_CPU!r} and {MASKED_AVX512_CPU!r}, got {name!r}")
    real_host = _cpu._host
    _, features = real_host()
    pretended = {f: on and not f.startswith("avx512") for f, on in features.items()}
    if name == AVX512_CPU:
        pretended.update(dict.fromkeys(_AVX512_OF_V4, True))
    clear_kernel_cache()
    _cpu._host = lambda: (name, pretended)
    try:
        yield
    finally:
        _cpu._host = real_host
        clear_kernel_cache()
