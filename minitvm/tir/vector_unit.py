"""The vector registers a CPU schedule sizes its tiles for.

A register tile of a matmul or a convolution keeps its accumulators in vector registers for
a whole reduction loop: it is fast while they fit (and leave room for the operands) and falls
off a cliff when they do not -- the compiler then spills them to the stack on every step.  So
the right tile depends on the CPU: AVX-512 has 32 registers of 16 float32 lanes, AVX2 16 of
8.  Measured on a Zen 3 core (AVX2), a 1024^3 matmul with AVX-512's 8 x 32 tile (32 ymm
accumulators) ran at 25 GFLOP/s, with a 4 x 16 tile (8 accumulators) at 75.

``VectorUnit.current()`` is the unit of the innermost ``with target:`` (``Target`` enters its
``vector_unit``) or ``with unit:``; outside both, this machine's.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Iterable

from ..ir.deep import share_thread_local
from ..runtime.cpu import host_cpu_features

__all__ = ["VectorUnit", "AVX512", "AVX2", "NEON", "SSE", "MAX_SHUFFLED_STRIDE"]

#: a vector load whose index grows by at most this much per lane is one contiguous load and a
#: shuffle (the LLVM codegen emits it so; a schedule that subsamples rows counts on it)
MAX_SHUFFLED_STRIDE = 4


@dataclass(frozen=True)
class VectorUnit:
    """``lanes`` float32 lanes per vector register, ``registers`` architectural vector registers."""

    name: str
    lanes: int
    registers: int

    @staticmethod
    def from_features(features: Iterable[str]) -> "VectorUnit":
        """The unit of a CPU with these features (LLVM's names: ``avx512f``, ``avx2`` ...)."""
        feats = set(features)
        if "avx512f" in feats:
            return AVX512
        if "avx" in feats or "avx2" in feats:
            return AVX2
        if "neon" in feats:
            return NEON
        return SSE

    @staticmethod
    def host() -> "VectorUnit":
        """This machine's unit."""
        return VectorUnit.from_features(host_cpu_features())

    @staticmethod
    def current() -> "VectorUnit":
        """The unit in scope (``with target:`` or ``with unit:``), else this machine's."""
        stack = getattr(_scope, "stack", None)
        return stack[-1] if stack else VectorUnit.host()

    @property
    def accumulators(self) -> int:
        """How many registers a register tile may keep as accumulators: half of them, the rest
        hold the operands of each step (measured: more spills, fewer leave the FMA units idle).
        A large matmul's peeled tile takes more, as many as leave one row of B and a broadcast
        (AVX2: 12 of 16, the 6 x 16 tile; ``default_schedule._peeled_tile_rows``)."""
        return self.registers // 2

    def __enter__(self) -> "VectorUnit":
        if not hasattr(_scope, "stack"):
            _scope.stack = []
        _scope.stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _scope.stack.pop()


_scope = share_thread_local(threading.local())

#: AVX-512: 32 zmm registers of 16 float32
AVX512 = VectorUnit("avx512", 16, 32)
#: AVX / AVX2: 16 ymm registers of 8 float32
AVX2 = VectorUnit("avx2", 8, 16)
#: AArch64's Advanced SIMD: 32 registers of 4 float32
NEON = VectorUnit("neon", 4, 32)
#: SSE (and anything else): 16 xmm registers of 4 float32
SSE = VectorUnit("sse", 4, 16)
