"""The GPUs the emulator models: their limits and the two numbers of a roofline.

Numbers are the vendors' published specifications (not measurements):

* ``t4`` -- NVIDIA Tesla T4 (Turing, 40 SMs): 8.1 TFLOP/s FP32 peak, 320 GB/s GDDR6.
  The default: the GPU of free notebook services, so an estimate a learner can compare.
* ``rtx3060`` -- NVIDIA GeForce RTX 3060 (Ampere, 28 SMs): 12.7 TFLOP/s FP32, 360 GB/s.
* ``a100`` -- NVIDIA A100 40GB SXM (Ampere): 19.5 TFLOP/s FP32, 1555 GB/s HBM2.

Every CUDA device of compute capability >= 3 allows 1024 threads per block (x, y <= 1024,
z <= 64) and 48 KiB of static shared memory per block (more only through dynamic shared
memory and an opt-in, which minitvm does not model).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["GPUSpec", "GPU_SPECS", "gpu_spec"]


@dataclass(frozen=True)
class GPUSpec:
    """What the emulator checks a launch against and estimates its time with."""

    key: str
    name: str
    peak_flops: float  # FP32 FLOP/s
    bandwidth: float  # global memory bytes/s
    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_shared_memory_per_block: int = 48 * 1024

    def describe(self) -> str:
        return (f"{self.name} ({self.peak_flops / 1e12:.1f} TFLOP/s FP32, {self.bandwidth / 1e9:.0f} GB/s; "
                "published peaks)")


GPU_SPECS = {
    "t4": GPUSpec("t4", "NVIDIA Tesla T4", 8.1e12, 320e9),
    "rtx3060": GPUSpec("rtx3060", "NVIDIA GeForce RTX 3060", 12.7e12, 360e9),
    "rtx3070": GPUSpec("rtx3070", "NVIDIA GeForce RTX 3070", 20.3e12, 448e9),
    "a100": GPUSpec("a100", "NVIDIA A100 40GB SXM", 19.5e12, 1555e9),
    "rtx3090ti": GPUSpec("rtx3090ti", "NVIDIA GeForce RTX 3090 Ti", 40.0e12, 1008e9),
}


def gpu_spec(key: str = "t4", max_threads_per_block: int | None = None,
             max_shared_memory_per_block: int | None = None) -> GPUSpec:
    """The spec of a named GPU (``Target("cuda-emulated -model=rtx3060")``), with the target's
    ``-max_num_threads`` / ``-max_shared_memory_per_block`` overriding its limits."""
    if key not in GPU_SPECS:
        raise ValueError(f"unknown GPU model {key!r}; the emulator knows {', '.join(GPU_SPECS)}")
    spec = GPU_SPECS[key]
    if max_threads_per_block is not None or max_shared_memory_per_block is not None:
        spec = replace(spec, max_threads_per_block=max_threads_per_block or spec.max_threads_per_block,
                       max_shared_memory_per_block=max_shared_memory_per_block or
                       spec.max_shared_memory_per_block)
    return spec
