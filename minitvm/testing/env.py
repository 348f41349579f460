"""``tvm.testing.env`` (TVM 0.27): what this environment can run, for ``pytest.mark.skipif``.

minitvm compiles for the CPU through LLVM (llvmlite) and has no GPU device, no vendor library
(cuDNN, cuBLAS, NCCL ...) and no Hexagon toolchain: ``has_llvm()`` is true, the device and
library probes are false, and the CPU-feature probes ask LLVM about this machine's CPU.
"""

from __future__ import annotations

import functools

__all__ = ["build_flag_enabled", "has_adreno_opencl", "has_cpu_feature", "has_cublas", "has_cuda",
           "has_cuda_compute", "has_cudagraph", "has_cudnn", "has_gpu", "has_hexagon", "has_hexagon_toolchain",
           "has_hipblas", "has_llvm", "has_llvm_min_version", "has_matrixcore", "has_metal", "has_multi_gpu",
           "has_nccl", "has_nvcc_version", "has_nvptx", "has_nvshmem", "has_opencl", "has_rocm", "has_vulkan",
           "has_x86_avx512", "has_x86_vnni"]

#: the build flags minitvm's "build" has on (TVM's libinfo): the LLVM back end only
_BUILD_FLAGS = frozenset({"USE_LLVM"})


def build_flag_enabled(flag: str) -> bool:
    """Whether TVM's build flag ``flag`` (``USE_CUTLASS`` ...) is on: only ``USE_LLVM`` is."""
    return flag in _BUILD_FLAGS


def has_llvm() -> bool:
    """The LLVM back end is minitvm's native code generator: always there."""
    return True


@functools.cache
def _llvm_major() -> int:
    import llvmlite.binding as llvm  # lazy: asking for the version loads LLVM

    return int(llvm.llvm_version_info[0])


def has_llvm_min_version(major: int) -> bool:
    """Whether the LLVM llvmlite ships is at least version ``major``."""
    return _llvm_major() >= major


def _never(*_: object, **__: object) -> bool:
    """No such device, library or toolchain in minitvm."""
    return False


has_cuda = has_rocm = has_vulkan = has_metal = has_opencl = has_nvptx = has_gpu = has_multi_gpu = _never
has_cudnn = has_cublas = has_nccl = has_hipblas = has_nvshmem = has_matrixcore = has_cudagraph = _never
has_cuda_compute = has_nvcc_version = has_hexagon = has_hexagon_toolchain = has_adreno_opencl = _never


@functools.cache
def _host_features() -> frozenset[str]:
    import llvmlite.binding as llvm  # lazy: asking for the CPU's features loads LLVM

    return frozenset(name for name, on in llvm.get_host_cpu_features().items() if on)


def has_cpu_feature(features: str | list[str] | tuple[str, ...]) -> bool:
    """Whether this machine's CPU has every LLVM feature named (``"avx512f"`` or a list)."""
    wanted = [features] if isinstance(features, str) else list(features)
    return all(f.lstrip("+") in _host_features() for f in wanted)


def has_x86_vnni() -> bool:
    return has_cpu_feature("avx512vnni") or has_cpu_feature("avxvnni")


def has_x86_avx512() -> bool:
    return has_cpu_feature(["avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx512f"])
