"""Target: what to compile for — ``Target("llvm -mcpu=native")`` or ``Target("python")``.

``llvm`` compiles to native code through LLVM, for this machine's CPU unless ``-mcpu`` names
another (code for a CPU this one is not can be read and saved, but refuses to run here:
:mod:`minitvm.target.codegen.cpu_check`); ``python`` runs kernels
in the numpy reference interpreter (slow, but every step can be inspected).  ``cuda`` gives
CUDA C source (and runs it where an NVIDIA GPU and cuda-python exist); ``cuda-emulated``
runs the same kernels on this CPU with CUDA's semantics (:mod:`minitvm.target.cuda`).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Iterable

from ..ir.deep import share_thread_local
from ..runtime.cpu import host_cpu_feature_names, host_cpu_features, host_cpu_name
from ..runtime.device import Device
from ..runtime.device import device as as_device
from ..runtime.registry import register_func
from ..tir.vector_unit import VectorUnit

__all__ = ["Target", "TargetKind", "host_cpu_name", "host_cpu_features", "GPU_KINDS"]

#: kind name -> default device type (DLPack code: 1 = CPU)
_KINDS = {"llvm": "cpu", "python": "cpu", "cuda": "gpu", "cuda-emulated": "gpu"}
_ALIASES = {"cpu": "llvm", "interpreter": "python", "nvidia/tesla-t4": "cuda"}
#: TVM's target tags for GPUs the emulator models: tag -> the target it stands for
_TAGS = {"nvidia/geforce-rtx-3090-ti": "cuda -model=rtx3090ti", "nvidia/geforce-rtx-3060": "cuda -model=rtx3060",
         "nvidia/geforce-rtx-3070": "cuda -model=rtx3070",  # the tag TVM's DefaultGPUSchedule tests use
         "nvidia/nvidia-a100": "cuda -model=a100", "nvidia/nvidia-t4": "cuda -model=t4"}
#: the GPU target kinds and the DLPack device type of their arrays (2 = CUDA)
GPU_KINDS = ("cuda", "cuda-emulated")


#: the x86 vector feature each one builds on: LLVM turns a feature off with the one it builds on
#: (``-mattr=-avx`` turns off AVX2 and FMA too), and so do :attr:`Target.features`, lest a kernel
#: call an instruction LLVM will not emit
_X86_BUILDS_ON = {"sse2": "sse", "sse3": "sse2", "ssse3": "sse3", "sse4.1": "ssse3", "sse4.2": "sse4.1",
                  "avx": "sse4.2", "avx2": "avx", "fma": "avx", "f16c": "avx", "avxvnni": "avx2",
                  "avx512f": "avx2"}


#: Target.features by (this CPU's features when the target is this CPU, else (), -mattr)
_FEATURES: dict[tuple, tuple[str, ...]] = {}


def _turned_off_with(feature: str, off: tuple[str, ...]) -> bool:
    """Whether ``feature`` or a feature it builds on is in ``off``."""
    while feature:
        if feature in off:
            return True
        feature = _X86_BUILDS_ON.get(feature) or ("avx512f" if feature.startswith("avx512") and feature != "avx512f"
                                                    else "")
    return False


class TargetKind:
    """The kind of a target (``target.kind.name == "llvm"``)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    @property
    def device_type(self) -> int:
        return 2 if self.name in GPU_KINDS else 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TargetKind) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return self.name


class Target:
    """A compilation target, parsed from a string such as ``"llvm -mcpu=native -opt-level=3"``.

    Options become ``attrs`` (``{"mcpu": "native"}``); flags without a value become True.
    Recognised llvm options: ``-mcpu`` (``native`` means this CPU), ``-mattr=+avx2,-fma``,
    ``-opt-level=0..3``, ``-num-cores``.
    """

    _local = share_thread_local(threading.local())

    def __init__(self, target: "str | dict | Target" = "llvm", host: Any = None):
        if isinstance(target, Target):
            self.kind, self.attrs, self.keys = target.kind, dict(target.attrs), target.keys
        elif isinstance(target, dict):
            spec = dict(target)
            kind = spec.pop("kind", None)
            if kind is None:
                raise ValueError("Target: a dict target needs a 'kind' key")
            self.kind = TargetKind(self._kind_name(str(kind)))
            # TVM's exported form carries host, tag and keys beside the options
            if host is None and spec.get("host") is not None:
                host = spec["host"]
            spec.pop("host", None)
            spec.pop("tag", None)
            keys = spec.pop("keys", None)
            gpu = self.kind.name in GPU_KINDS
            # a CPU's options are spelled with dashes (opt-level); a GPU's with underscores, as TVM's
            self.attrs = {k.replace("_", "-") if k != "mattr" and not gpu else k: v for k, v in spec.items()}
            self.keys = tuple(keys) if keys else ("cuda", "gpu") if gpu else ("cpu",)
        elif isinstance(target, str):
            self._parse(target)
        else:
            raise TypeError(f"Target: expected a str, dict or Target, got {type(target).__name__}")
        self.host = Target(host) if host is not None and not isinstance(host, Target) else host
        self._validate()

    # -- parsing ------------------------------------------------------------------
    @staticmethod
    def _kind_name(name: str) -> str:
        name = _ALIASES.get(name, name)
        if name not in _KINDS:
            raise ValueError(f"unsupported target kind {name!r}; minitvm supports: "
                             f"{', '.join(sorted(_KINDS))}")
        return name

    def _parse(self, text: str) -> None:
        words = text.split()
        if words and words[0] in _TAGS:  # a tag, then any options of the user's own
            words = _TAGS[words[0]].split() + words[1:]
        if not words:
            raise ValueError("Target: empty target string")
        self.kind = TargetKind(self._kind_name(words[0]))
        self.keys = ("cuda", "gpu") if self.kind.name in GPU_KINDS else ("cpu",)
        self.attrs: dict[str, Any] = {}
        for word in words[1:]:
            if not word.startswith("-"):
                raise ValueError(f"Target {text!r}: option {word!r} must look like -key=value")
            key, eq, value = word.lstrip("-").partition("=")
            if not eq:
                self.attrs[key] = True
            elif key == "mattr":
                self.attrs[key] = [v for v in value.split(",") if v]
            elif value.lstrip("-").isdigit():
                self.attrs[key] = int(value)
            else:
                self.attrs[key] = value

    def _validate(self) -> None:
        if self.kind.name in GPU_KINDS:
            known = {"model", "max_num_threads", "max_shared_memory_per_block", "arch", "thread_warp_size"}
            unknown = set(self.attrs) - known
            if unknown:
                raise ValueError(f"Target {self.kind.name}: unknown option(s) {', '.join(sorted(unknown))}; "
                                 f"known: {', '.join(sorted(known))}")
            from .cuda.device import GPU_SPECS  # lazy: cycle -- the cuda package builds for a Target

            model = self.attrs.get("model", "t4")
            if model not in GPU_SPECS:
                raise ValueError(f"Target {self.kind.name}: -model={model} is not a GPU minitvm knows "
                                 f"({', '.join(GPU_SPECS)})")
        if self.kind.name == "llvm":
            level = self.attrs.get("opt-level", 3)
            if not isinstance(level, int) or not 0 <= level <= 3:
                raise ValueError(f"Target: -opt-level must be 0..3, got {level!r}")
            for feat in self.attrs.get("mattr", []):
                if feat[:1] not in "+-":
                    raise ValueError(f"Target: -mattr entries start with + or -, got {feat!r}")

    # -- properties -----------------------------------------------------------------
    @property
    def mcpu(self) -> str:
        """The CPU to tune for, with ``native`` (or no -mcpu) resolved to the host CPU."""
        return host_cpu_name() if self.for_this_cpu else str(self.attrs["mcpu"])

    @property
    def for_this_cpu(self) -> bool:
        """Code for this machine's CPU with its features (no -mcpu, or -mcpu=native or empty), rather than
        for a CPU named with -mcpu (which brings that CPU's features, whatever this one has)."""
        return self.attrs.get("mcpu", "native") in ("native", "", True)

    @property
    def mattr(self) -> list[str]:
        return list(self.attrs.get("mattr", []))

    @property
    def opt_level(self) -> int:
        return int(self.attrs.get("opt-level", 3))

    @property
    def features(self) -> tuple[str, ...]:
        """CPU features enabled for code generation: this CPU's, adjusted by -mattr; for a CPU named
        with -mcpu only the -mattr ones (LLVM adds that CPU's own, which llvmlite cannot list)."""
        # asked per kernel built and per CPU-specific intrinsic emitted: worked out once per
        # (CPU features, -mattr); keyed by the features themselves, which a test may pretend
        host = host_cpu_features() if self.for_this_cpu else ()
        key = (host, tuple(self.mattr))
        found = _FEATURES.get(key)
        if found is None:
            feats = set(host)
            feats |= {f for f, on in self._mattr_switches().items() if on}
            off = self.disabled_features
            found = _FEATURES[key] = tuple(sorted(f for f in feats if not _turned_off_with(f, off)))
        return found

    @property
    def disabled_features(self) -> tuple[str, ...]:
        """The features -mattr turns off (``-avx2``).  LLVM is told them as they are: the CPU -mcpu
        names (this one, without -mcpu) brings its own features, so leaving one out of
        :attr:`features` does not turn it off."""
        return tuple(sorted(f for f, on in self._mattr_switches().items() if not on))

    @property
    def features_off(self) -> tuple[str, ...]:
        """The features LLVM is told to turn off: :attr:`disabled_features`, and for this CPU every
        feature it lacks.  A CPU's name brings that CPU's features, and a virtual machine may hide
        some of them: on a Zen 4 whose AVX-512 is masked, ``znver4`` alone would emit AVX-512."""
        return self.features_off_beyond(self.features)

    def features_off_beyond(self, features: Iterable[str]) -> tuple[str, ...]:
        """What to turn off for code that uses only ``features`` (a saved library's): -mattr's, and
        for this CPU each feature its detection knows outside ``features``."""
        off = set(self.disabled_features)
        if self.for_this_cpu:
            off |= set(host_cpu_feature_names()) - set(features)
        return tuple(sorted(off))

    def _mattr_switches(self) -> dict[str, bool]:
        """Each feature -mattr names, and whether it ends up on (its last entry decides)."""
        return {f[1:]: f[0] == "+" for f in self.mattr}

    @property
    def num_cores(self) -> int:
        return int(self.attrs.get("num-cores", os.cpu_count() or 1))

    def has_feature(self, name: str) -> bool:
        return name in self.features

    @property
    def vector_unit(self) -> VectorUnit:
        """The vector registers its code has (what default schedules size register tiles for):
        from its features for ``llvm`` -- for another CPU named with -mcpu, also those LLVM gives
        that CPU's code -- and this machine's for the interpreter."""
        if self.kind.name != "llvm":
            return VectorUnit.host()
        features = set(self.features)
        if not self.for_this_cpu:
            # lazy: cycle target.target <-> target.codegen (which builds for a Target)
            from .codegen.cpu_check import named_cpu_vector_features

            features |= named_cpu_vector_features(self.mcpu)
        return VectorUnit.from_features(features)

    @staticmethod
    def from_device(device: Any) -> "Target":
        """The target that compiles for a device (``tvm.cpu()``, ``tvm.cuda(0)`` or its name), as
        TVM's ``Target.from_device``: the host CPU's ``llvm``, and for the GPU ``cuda`` where a real
        NVIDIA GPU runs it, else ``cuda-emulated`` (minitvm's ``cuda(0)`` is the emulated GPU when
        there is no real one).  A device that does not exist is a ValueError, as in TVM."""
        dev = device if isinstance(device, Device) else as_device(device)
        if not dev.exist:
            raise ValueError(f"Target.from_device: cannot detect device {dev!r}: it does not exist "
                             "(minitvm has cpu(0) and cuda(0))")
        if dev.device_type == Device.kDLCPU:
            return Target("llvm")
        from .cuda.real_gpu import real_gpu_status  # lazy: cycle -- the cuda package builds for a Target

        return Target("cuda" if real_gpu_status() is None else "cuda-emulated")

    # -- context -----------------------------------------------------------------------
    @classmethod
    def current(cls, allow_none: bool = True) -> "Target | None":
        stack = getattr(cls._local, "stack", [])
        if not stack and not allow_none:
            raise ValueError("no Target is set; use `with Target('llvm'):`")
        return stack[-1][0] if stack else None

    def __enter__(self) -> "Target":
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        self._local.stack.append((self, self.vector_unit.__enter__()))
        return self

    def __exit__(self, *exc: Any) -> None:
        _, unit = self._local.stack.pop()
        unit.__exit__(*exc)

    # -- text -------------------------------------------------------------------------
    def __str__(self) -> str:
        parts = [self.kind.name]
        for key, value in self.attrs.items():
            if value is True:
                parts.append(f"-{key}")
            elif isinstance(value, list):
                parts.append(f"-{key}={','.join(value)}")
            else:
                parts.append(f"-{key}={value}")
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def export(self) -> dict[str, Any]:
        return {"kind": self.kind.name, **self.attrs}


# tir's passes sit a floor below Target: they read the Target in scope through the registry (TVM's name)
register_func("target.TargetCurrent", lambda allow_none=True: Target.current(allow_none), override=True)
