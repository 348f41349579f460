"""Running the generated CUDA source on a real NVIDIA GPU, through the ``cuda-python`` package
(NVRTC compiles the source to PTX, the driver API loads and launches it).

Used only where :func:`real_gpu_status` finds a GPU and the package; everywhere else the
``cuda`` target's functions raise an error saying what is missing and pointing to
``cuda-python``'s install and to ``target="cuda-emulated"``.  Arrays stay NumPy-backed
minitvm NDArrays: each launch copies its buffers to the device and back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["real_gpu_status", "RealGPU"]


def _driver() -> tuple[Any, Any]:
    try:
        from cuda.bindings import driver, nvrtc  # type: ignore[import-not-found]
    except ImportError:
        from cuda import cuda as driver  # type: ignore[import-not-found,no-redef]
        from cuda import nvrtc  # type: ignore[import-not-found,no-redef]
    return driver, nvrtc


def real_gpu_status() -> str | None:
    """None when an NVIDIA GPU and the cuda-python package are usable, else why not."""
    try:
        driver, _ = _driver()
    except ImportError:
        return "the cuda-python package is not installed (pip install cuda-python)"
    try:
        err = driver.cuInit(0)[0]
        if int(err) != 0:
            return f"the CUDA driver did not initialize (cuInit returned {err}): no NVIDIA GPU or driver"
        err, count = driver.cuDeviceGetCount()
        if int(err) != 0 or count < 1:
            return "no NVIDIA GPU was found"
    except Exception as exc:  # the driver library missing, ...
        return f"the CUDA driver is not usable ({exc})"
    return None


def _check(result: Any, what: str) -> Any:
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise RuntimeError(f"CUDA {what} failed: {err}")
    return rest[0] if len(rest) == 1 else rest


class RealGPU:
    """The kernels of one CUDA source, compiled for GPU 0 and launched there."""

    def __init__(self, source: str):
        driver, nvrtc = _driver()
        self.driver = driver
        _check(driver.cuInit(0), "cuInit")
        device = _check(driver.cuDeviceGet(0), "cuDeviceGet")
        self.context = _check(driver.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
        _check(driver.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        major = _check(driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "attribute")
        minor = _check(driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), "attribute")
        prog = _check(nvrtc.nvrtcCreateProgram(source.encode(), b"minitvm.cu", 0, [], []), "nvrtcCreateProgram")
        opts = [f"--gpu-architecture=compute_{major}{minor}".encode()]
        err = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
        if int(err) != 0:
            size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "log size")
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise RuntimeError(f"NVRTC could not compile the CUDA source:\n{log.decode(errors='replace')}")
        size = _check(nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
        ptx = b" " * size
        _check(nvrtc.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
        self.module = _check(driver.cuModuleLoadData(ptx), "cuModuleLoadData")

    def launch(self, name: str, args: list[Any], grid: tuple[int, int, int], block: tuple[int, int, int]) -> None:
        """Copy the array arguments in, launch ``name``, wait, copy them back."""
        d = self.driver
        kernel = _check(d.cuModuleGetFunction(self.module, name.encode()), "cuModuleGetFunction")
        holders, device_ptrs = [], []
        try:
            for a in args:
                arr = a.numpy() if hasattr(a, "numpy") and not isinstance(a, np.ndarray) else a
                if isinstance(arr, np.ndarray):
                    ptr = _check(d.cuMemAlloc(max(arr.nbytes, 1)), "cuMemAlloc")
                    _check(d.cuMemcpyHtoD(ptr, arr.ctypes.data, arr.nbytes), "cuMemcpyHtoD")
                    device_ptrs.append((ptr, a, arr))
                    holders.append(np.array([int(ptr)], dtype=np.uint64))
                else:
                    holders.append(np.array([a], dtype=np.int32 if isinstance(a, (int, np.integer)) else np.float32))
            params = np.array([h.ctypes.data for h in holders], dtype=np.uint64)
            _check(d.cuLaunchKernel(kernel, *grid, *block, 0, 0, params.ctypes.data, 0), "cuLaunchKernel")
            _check(d.cuCtxSynchronize(), "cuCtxSynchronize")
            for ptr, a, arr in device_ptrs:
                out = np.empty_like(arr)
                _check(d.cuMemcpyDtoH(out.ctypes.data, ptr, arr.nbytes), "cuMemcpyDtoH")
                if hasattr(a, "copyfrom"):
                    a.copyfrom(out)
                else:
                    a[...] = out
        finally:
            for ptr, _, _ in device_ptrs:
                d.cuMemFree(ptr)
