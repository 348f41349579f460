"""GPU targets: CUDA C source, and an emulated GPU that runs CUDA kernels on the CPU.

``minitvm.build(mod, target="cuda")`` gives the CUDA C source of every kernel
(``lib.imported_modules[0].get_source()``, as TVM) and runs on a real NVIDIA GPU where one
and the ``cuda-python`` package are found; elsewhere calling it raises an error that says so.

``target="cuda-emulated"`` builds the same kernels, with the same CUDA source, and runs them
on this CPU with CUDA's meaning (:mod:`.emulator`): a separate target *kind* rather than a
silent fallback of ``"cuda"``, so that a number measured or a result computed always says
where it came from.  ``lib.report()`` gives each kernel's launch, memory traffic and a
roofline estimate on a named GPU (``-model=t4`` by default, see :mod:`.device`).
"""

from __future__ import annotations

from typing import Any

from ...runtime.module import Module
from ...tir import expr as E
from ...tir import stmt as S
from ...tir.function import PrimFunc
from ...tir.transform.split_host_device import launch_dims
from ..signature import FunctionSignature
from ..target import Target
from .codegen_cuda import cuda_source
from .device import GPU_SPECS, GPUSpec, gpu_spec
from .emulator import (
    EmulatedKernel,
    GPUEmulatorError,
    KernelReport,
    LaunchConfigError,
    SharedMemoryRaceError,
    emulate_kernel,
)
from .real_gpu import RealGPU, real_gpu_status

__all__ = ["build_cuda", "CUDASourceModule", "GPUModule", "GPUReport", "cuda_source", "GPU_SPECS", "GPUSpec",
           "gpu_spec", "KernelReport", "GPUEmulatorError", "SharedMemoryRaceError", "LaunchConfigError",
           "EmulatedKernel", "real_gpu_status"]


class CUDASourceModule(Module):
    """The device side of a GPU build: its ``get_source()`` is the CUDA C of every kernel."""

    def __init__(self, source: str, kernels: dict[str, PrimFunc]):
        super().__init__({}, type_key="cuda")
        self.source, self.kernels = source, kernels

    def get_source(self, fmt: str = "") -> str:
        if fmt not in ("", "cu", "cuda"):
            raise ValueError(f"a CUDA module has CUDA source only (fmt 'cuda'), not {fmt!r}")
        return self.source


class GPUReport(list):
    """One :class:`KernelReport` per kernel launch of a function, printed one after another."""

    def __str__(self) -> str:
        return "\n".join(str(r) for r in self)

    __repr__ = __str__

    @property
    def estimated_seconds(self) -> float:
        return sum(r.estimated_seconds for r in self)


class _HostFunction:
    """A host function: checks its arguments, then launches its kernels in order."""

    def __init__(self, name: str, func: PrimFunc, launcher: Any):
        self.name = self.__name__ = name
        self.func = func
        self.signature = FunctionSignature.from_prim_func(name, func)
        self.launcher = launcher
        self.steps = _host_steps(name, func.body)

    def __call__(self, *args: Any) -> None:
        self.signature.bind(args)  # the argument check, with native code's messages
        by_var: dict[int, Any] = {}
        for p, raw in zip(self.func.params, args):
            buf = self.func.buffer_map.get(p)
            by_var[id(buf.data) if buf is not None else id(p)] = raw
        for kernel, call_args in self.steps:
            self.launcher(kernel, [by_var[id(a)] if isinstance(a, E.Var) else a for a in call_args])


def _host_steps(name: str, body: Any) -> list[tuple[str, list]]:
    steps: list[tuple[str, list]] = []

    def walk(s: Any) -> None:
        if isinstance(s, S.SeqStmt):
            for c in s.seq:
                walk(c)
        elif isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and s.value.op == "tir.tvm_call_packed":
            kernel = s.value.args[0].value
            steps.append((kernel, list(s.value.args[1:])))
        elif isinstance(s, S.Evaluate) and isinstance(s.value, E.IntImm):
            pass
        else:
            raise NotImplementedError(f"{name}: host code other than kernel launches ({type(s).__name__}) is not "
                                      "supported by minitvm's GPU targets: every loop must run under "
                                      "blockIdx/threadIdx loops. Did you forget to bind?")

    walk(body)
    return steps


class GPUModule(Module):
    """The host side of a GPU build: ``lib["main"](*arrays)`` launches the kernels.

    ``imported_modules[0]`` holds the CUDA source (as TVM); ``lib.get_source("cuda")`` too.
    For ``cuda-emulated`` the kernels run in the emulator and ``lib.report()`` describes them;
    ``lib.time_evaluator`` then times the *emulation on this CPU* (a real measurement of the
    emulator, not of any GPU: compare GPUs with ``lib.report()``'s estimate).
    """

    def __init__(self, host: dict[str, PrimFunc], kernels: dict[str, PrimFunc], target: Target):
        self.target = target
        self.kernels = kernels
        self.emulated = target.kind.name == "cuda-emulated"
        self.device = gpu_spec(str(target.attrs.get("model", "t4")), target.attrs.get("max_num_threads"),
                               target.attrs.get("max_shared_memory_per_block"))
        self.emulations: dict[str, EmulatedKernel] = {}
        self._cpu: Any = None
        self._gpu: Any = None
        if self.emulated:
            for name, k in kernels.items():
                self.emulations[name] = emulate_kernel(name, k, self.device)
            from ..codegen.llvm import build_llvm  # lazy: only the emulator compiles with LLVM (llvmlite)

            self._cpu = build_llvm({n: e.cpu_func for n, e in self.emulations.items()}, "llvm",
                                   module_name="gpu_emulated")
        launcher = self._emulate if self.emulated else self._real
        self.host_funcs = host
        funcs = {name: _HostFunction(name, f, launcher) for name, f in host.items()}
        super().__init__(funcs, type_key="cuda-emulated" if self.emulated else "cuda_host")
        self.import_module(CUDASourceModule(cuda_source(kernels), kernels))

    def _emulate(self, kernel: str, args: list) -> None:
        self._cpu[kernel](*args[:len(self.kernels[kernel].params)])  # (the launch extents follow)

    def _real(self, kernel: str, args: list) -> None:
        why = real_gpu_status()
        if why is not None:
            raise RuntimeError(f"cannot run kernel {kernel} on a GPU: {why}. Build with target=\"cuda-emulated\" to "
                               "run the same kernels on this CPU with CUDA's semantics "
                               "(lib.imported_modules[0].get_source() shows the CUDA source either way)")
        if self._gpu is None:
            self._gpu = RealGPU(self.imported_modules[0].get_source())
        dims = {tag: e.value for tag, e, _ in launch_dims(self.kernels[kernel].body)}
        grid = tuple(dims.get(f"blockIdx.{d}", 1) for d in "xyz")
        block = tuple(dims.get(f"threadIdx.{d}", 1) for d in "xyz")
        self._gpu.launch(kernel, args[:len(self.kernels[kernel].params)], grid, block)

    def get_source(self, fmt: str = "") -> str:
        if fmt in ("cuda", "cu"):
            return self.imported_modules[0].get_source()
        if fmt in ("", "tir"):
            return "\n\n".join(f.script() for f in self.host_funcs.values())
        if fmt == "cpu" and self.emulated:
            return "\n\n".join(e.cpu_func.script() for e in self.emulations.values())
        raise ValueError(f"get_source: formats are 'cuda', 'tir' (the host code) and, emulated, 'cpu'; got {fmt!r}")

    def report(self, func_name: str | None = None) -> GPUReport:
        """The emulator's report on every kernel a function launches (all kernels by default)."""
        if not self.emulated:
            raise ValueError("lib.report() describes emulated kernels; build with target=\"cuda-emulated\"")
        names = list(self.emulations)
        if func_name is not None:
            names = [k for k, _ in self._functions[func_name].steps]
        return GPUReport(self.emulations[n].report for n in names)


def build_cuda(funcs: dict[str, PrimFunc], target: Target) -> GPUModule:
    """Build lowered, split functions: device kernels (``calling_conv`` 2) and host functions."""
    kernels = {n: f for n, f in funcs.items() if f.attrs.get("calling_conv") == 2}
    host = {n: f for n, f in funcs.items() if f.attrs.get("calling_conv") != 2}
    for n, f in host.items():
        _host_steps(n, f.body)  # refuse host code we cannot run now, not at the first call
    return GPUModule(host, kernels, target)
