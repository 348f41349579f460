"""x86 tensor intrinsics (as TVM's ``tvm.tir.tensor_intrin.x86``), written for AVX-512.

Each intrinsic is a *description* (the loops it replaces, in plain TIR) and an
*implementation* (the same work, written with ``T.call_llvm_pure_intrin("float32",
"llvm.fma", a, b, c)`` in 16-lane vectorized loops, which the LLVM backend turns into
``vfmadd231ps`` on ``zmm`` registers: one instruction, 16 multiply-adds, one rounding each).

* ``avx512_fma_f32_1x16`` -- ``C[0:16] += A[0] * B[0:16]``: a single FMA instruction.
* :func:`avx512_fma_tile` -- a register-tile micro-kernel ``C[rows, cols] += A[rows, k] @ B[k, cols]``
  whose ``rows * cols / 16`` accumulators stay in ``zmm`` registers for all ``k`` steps; it is
  registered on first use as ``avx512_fma_f32_<rows>x<cols>x<k>`` (the description has fixed
  extents, as every TVM intrinsic has).

* ``dot_16x4_vnni`` (TVM's ``VNNI_DOT_16x4_INTRIN``) -- ``C[i] += sum_k int32(A[k]) * int32(B[i, k])``
  for ``i < 16, k < 4``, A uint8, B int8, C int32: one ``vpdpbusd`` (AVX-512 VNNI), 64 byte
  multiply-adds.  The implementation reads A's four bytes as one int32 word and B's 16 x 4 bytes
  as 16 words through word views of their memory (``T.Buffer((16,), "int32", data=B.data)``,
  minitvm's spelling of TVM's ``B.vload([0, 0], "int8x64")`` + ``T.reinterpret``), and calls
  ``T.call_llvm_pure_intrin("int32", "llvm.x86.avx512.vpdpbusd", C[i], A_i32[0], B_i32[i])`` in a
  16-lane vectorized loop.  B is laid out as TVM's VNNI schedules pack it: ``[N/16, K/4, 16, 4]``.

As in TVM, ``sch.tensorize`` never asks which CPU it runs on: it is a transformation of the
program.  The implementations are portable LLVM, so a tensorized kernel builds and runs on
every x86-64 CPU; :attr:`TensorIntrin.requires` names the features (AVX-512F, and VNNI for
``dot_16x4_vnni``) with which each step is *one* instruction.  Without them LLVM does the same
work with narrower instructions: each 16-lane FMA becomes two 8-lane ``ymm`` FMAs on AVX2, and
``vpdpbusd`` plain integer multiplies and adds (``tir/semantics.py``).  To read the AVX-512 code
on any machine, build for an AVX-512 CPU: ``minitvm.build(mod, target="llvm -mcpu=skylake-avx512
-mattr=+avx512f")`` (only ``-mattr`` features make the code generator prefer 512-bit vectors);
such a library refuses to run on a CPU without them.
"""

from __future__ import annotations

from typing import Callable

from ...runtime.cpu import host_cpu_features
from ..buffer import Buffer, BufferRegion, decl_buffer
from ..expr import BufferLoad, Cast, IterVar, PrimExpr, Range, Var, const
from ..function import PrimFunc
from ..op import call_llvm_pure_intrin
from ..schedule.blockize import TensorIntrin
from ..stmt import Block, BlockRealize, BufferStore, For, ForKind, Stmt, seq

__all__ = ["AVX512_FMA_F32_1x16", "avx512_fma_tile", "host_cpu_features", "has_avx512f",
           "AVX512_FEATURES", "VNNI_DOT_16x4_INTRIN", "VNNI_FEATURES", "has_vnni", "AVX512_TARGET",
           "VNNI_TARGET"]

#: the CPU features with which each step of the FMA intrinsics here is one instruction
AVX512_FEATURES = ("avx512f",)
#: ... and of the int8 dot product (LLVM's name of AVX-512 VNNI)
VNNI_FEATURES = ("avx512f", "avx512vnni")

#: a target whose code has every step of the FMA intrinsics as one instruction, whatever CPU builds it
#: (for reading its assembly; it runs only on a CPU with AVX-512F)
AVX512_TARGET = "llvm -mcpu=skylake-avx512 -mattr=+avx512f"
#: ... and of ``dot_16x4_vnni`` (a CPU with AVX-512 VNNI)
VNNI_TARGET = "llvm -mcpu=cascadelake -mattr=+avx512f,+avx512vnni"

VNNI_DOT_16x4_INTRIN = "dot_16x4_vnni"

AVX512_FMA_F32_1x16 = "avx512_fma_f32_1x16"


def has_avx512f() -> bool:
    """Whether this CPU runs AVX-512 Foundation instructions (16 float32 lanes per register)."""
    return "avx512f" in host_cpu_features()


def has_vnni() -> bool:
    """Whether this CPU has AVX-512 VNNI (``vpdpbusd``: 64 u8 x s8 multiply-adds into 16 int32)."""
    return all(f in host_cpu_features() for f in VNNI_FEATURES)


# -- building the PrimFuncs (the tir floor writes nodes, not TVMScript; the docstrings show the script)


def _i32(v: int) -> PrimExpr:
    return const(v, "int32")


def _loop(name: str, extent: int, kind: str, body: Callable[[Var], Stmt]) -> For:
    var = Var(name, "int32")
    return For(var, _i32(0), _i32(extent), kind, body(var))


def _region(buf: Buffer) -> BufferRegion:
    return BufferRegion.full_region(buf)


def _func(buffers: list[Buffer], reads: list[Buffer], writes: list[Buffer], body: Stmt,
          alloc: tuple = ()) -> PrimFunc:
    """A PrimFunc over ``buffers`` whose root block reads and writes the whole of them."""
    root = Block("root", reads=tuple(_region(b) for b in reads), writes=tuple(_region(b) for b in writes),
                 alloc_buffers=alloc, body=body)
    params = [Var(b.name, "handle") for b in buffers]
    return PrimFunc(tuple(params), dict(zip(params, buffers)), BlockRealize((), const(True, "bool"), root))


def _fma(a: PrimExpr, b: PrimExpr, c: PrimExpr) -> PrimExpr:
    return call_llvm_pure_intrin("float32", "llvm.fma", a, b, c)


def _register_1x16() -> None:
    """``C[0:16] += A[0] * B[0:16]``; impl: ``for j in T.vectorized(16): C[j] =
    T.call_llvm_pure_intrin("float32", "llvm.fma", A[0], B[j], C[j])`` (one ``vfmadd231ps``)."""
    def buffers() -> tuple[Buffer, Buffer, Buffer]:
        return (decl_buffer((1,), "float32", "A"), decl_buffer((16,), "float32", "B"),
                decl_buffer((16,), "float32", "C"))

    A, B, C = buffers()

    def update(j: Var) -> Stmt:
        vj = Var("vj", "int32")
        block = Block("update", iter_vars=(IterVar(Range(_i32(0), _i32(16)), vj, "spatial"),),
                      reads=(BufferRegion(C, (Range(vj, _i32(1)),)), BufferRegion(A, (Range(_i32(0), _i32(1)),)),
                             BufferRegion(B, (Range(vj, _i32(1)),))),
                      writes=(BufferRegion(C, (Range(vj, _i32(1)),)),),
                      body=BufferStore(C, BufferLoad(C, (vj,)) + BufferLoad(A, (_i32(0),)) * BufferLoad(B, (vj,)),
                                       (vj,)))
        return BlockRealize((j,), const(True, "bool"), block)

    desc = _func([A, B, C], [C, A, B], [C], _loop("j", 16, ForKind.SERIAL, update))
    A, B, C = buffers()
    impl = _func([A, B, C], [C, A, B], [C], _loop("j", 16, ForKind.VECTORIZED, lambda j: BufferStore(
        C, _fma(BufferLoad(A, (_i32(0),)), BufferLoad(B, (j,)), BufferLoad(C, (j,))), (j,))))
    TensorIntrin.register(AVX512_FMA_F32_1x16, desc, impl, override=True, requires=AVX512_FEATURES)


def avx512_fma_tile(rows: int, cols: int, k: int) -> str:
    """Register (once) and name the micro-kernel ``C[rows, cols] += A[rows, k] @ B[k, cols]``.

    The description's loops are ``k, rows, cols`` (reduction outermost: the order of a matmul
    register-tiled with its k loop outside the tile).  The implementation loads the C tile into
    a ``local`` accumulator of ``rows * cols / 16`` zmm registers, runs the ``k`` steps as
    broadcast(A) x load(B) FMAs on it, and stores it back once.
    """
    for what, value in (("rows", rows), ("cols", cols), ("k", k)):
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"avx512_fma_tile: {what} must be a positive int, got {value!r}")
    if cols % 16:
        raise ValueError(f"avx512_fma_tile: cols={cols} must be a multiple of 16 (one zmm holds 16 float32)")
    if rows * cols // 16 > 28:
        raise ValueError(f"avx512_fma_tile: a {rows}x{cols} tile needs {rows * cols // 16} zmm accumulators; "
                         "AVX-512 has 32 registers and the kernel needs a few for A and B (at most 28)")
    name = f"avx512_fma_f32_{rows}x{cols}x{k}"
    if name in TensorIntrin._registry:
        return name
    R, N, K = rows, cols, k

    def buffers() -> tuple[Buffer, Buffer, Buffer]:
        return (decl_buffer((R, K), "float32", "A"), decl_buffer((K, N), "float32", "B"),
                decl_buffer((R, N), "float32", "C"))

    A, B, C = buffers()

    def update(kk: Var, i: Var, j: Var) -> Stmt:
        vk, vi, vj = Var("vk", "int32"), Var("vi", "int32"), Var("vj", "int32")
        ivs = (IterVar(Range(_i32(0), _i32(K)), vk, "reduce"), IterVar(Range(_i32(0), _i32(R)), vi, "spatial"),
               IterVar(Range(_i32(0), _i32(N)), vj, "spatial"))

        def at(buf: Buffer, x: PrimExpr, y: PrimExpr) -> BufferRegion:
            return BufferRegion(buf, (Range(x, _i32(1)), Range(y, _i32(1))))

        value = BufferLoad(C, (vi, vj)) + BufferLoad(A, (vi, vk)) * BufferLoad(B, (vk, vj))
        block = Block("update", iter_vars=ivs, reads=(at(C, vi, vj), at(A, vi, vk), at(B, vk, vj)),
                      writes=(at(C, vi, vj),), body=BufferStore(C, value, (vi, vj)))
        return BlockRealize((kk, i, j), const(True, "bool"), block)

    desc_body = _loop("k", K, ForKind.SERIAL, lambda kk: _loop("i", R, ForKind.SERIAL, lambda i: _loop(
        "j", N, ForKind.SERIAL, lambda j: update(kk, i, j))))
    desc = _func([A, B, C], [C, A, B], [C], desc_body)

    A, B, C = buffers()
    acc = decl_buffer((R, N), "float32", "acc", scope="local")

    def tile(body: Callable[[Var, Var], Stmt]) -> Stmt:  # unrolled rows x one vector per row
        return _loop("i", R, ForKind.UNROLLED, lambda i: _loop("j", N, ForKind.VECTORIZED, lambda j: body(i, j)))

    load = tile(lambda i, j: BufferStore(acc, BufferLoad(C, (i, j)), (i, j)))
    steps = _loop("k", K, ForKind.SERIAL, lambda kk: tile(lambda i, j: BufferStore(
        acc, _fma(BufferLoad(A, (i, kk)), BufferLoad(B, (kk, j)), BufferLoad(acc, (i, j))), (i, j))))
    store = tile(lambda i, j: BufferStore(C, BufferLoad(acc, (i, j)), (i, j)))
    impl = _func([A, B, C], [C, A, B], [C], seq(load, steps, store), alloc=(acc,))
    TensorIntrin.register(name, desc, impl, override=True, requires=AVX512_FEATURES)
    return name


def _register_vnni_16x4() -> None:
    """TVM's ``dot_16x4_vnni``: ``C[i] = C[i] + int32(A[k]) * int32(B[i, k])`` over ``i < 16`` (spatial),
    ``k < 4`` (reduction); impl::

        A_i32 = T.Buffer((1,), "int32", data=A.data)    # A's 4 bytes as one word
        B_i32 = T.Buffer((16,), "int32", data=B.data)   # row i of B as word i
        for i in T.vectorized(16):
            C[i] = T.call_llvm_pure_intrin("int32", "llvm.x86.avx512.vpdpbusd", C[i], A_i32[0], B_i32[i])
    """
    def buffers() -> tuple[Buffer, Buffer, Buffer]:
        return (decl_buffer((4,), "uint8", "A"), decl_buffer((16, 4), "int8", "B"),
                decl_buffer((16,), "int32", "C"))

    A, B, C = buffers()

    def update(i: Var, k: Var) -> Stmt:
        vi, vk = Var("vi", "int32"), Var("vk", "int32")
        ivs = (IterVar(Range(_i32(0), _i32(16)), vi, "spatial"), IterVar(Range(_i32(0), _i32(4)), vk, "reduce"))
        value = BufferLoad(C, (vi,)) + Cast("int32", BufferLoad(A, (vk,))) * Cast("int32", BufferLoad(B, (vi, vk)))
        block = Block("update", iter_vars=ivs,
                      reads=(BufferRegion(C, (Range(vi, _i32(1)),)), BufferRegion(A, (Range(vk, _i32(1)),)),
                             BufferRegion(B, (Range(vi, _i32(1)), Range(vk, _i32(1))))),
                      writes=(BufferRegion(C, (Range(vi, _i32(1)),)),), body=BufferStore(C, value, (vi,)))
        return BlockRealize((i, k), const(True, "bool"), block)

    desc = _func([A, B, C], [C, A, B], [C], _loop("i", 16, ForKind.SERIAL, lambda i: _loop(
        "k", 4, ForKind.SERIAL, lambda k: update(i, k))))
    A, B, C = buffers()
    a_word = decl_buffer((1,), "int32", "A_i32", data=A.data)
    b_words = decl_buffer((16,), "int32", "B_i32", data=B.data)
    impl = _func([A, B, C], [C, A, B], [C], _loop("i", 16, ForKind.VECTORIZED, lambda i: BufferStore(
        C, call_llvm_pure_intrin("int32", "llvm.x86.avx512.vpdpbusd", BufferLoad(C, (i,)),
                                 BufferLoad(a_word, (_i32(0),)), BufferLoad(b_words, (i,))), (i,))))
    TensorIntrin.register(VNNI_DOT_16x4_INTRIN, desc, impl, override=True, requires=VNNI_FEATURES)


_register_1x16()
_register_vnni_16x4()
