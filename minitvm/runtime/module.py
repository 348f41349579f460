"""Module: a compiled library of named functions, and timing them (``time_evaluator``)."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from .device import Device
from .registry import PackedFunc

__all__ = ["Module", "BenchmarkResult", "make_time_evaluator", "BoundsError", "BoundsCheck"]

@dataclass(frozen=True)
class BoundsCheck:
    """One bounds check that ``tir.transform.InstrumentBoundCheckers`` put before an access.

    The pass records it on the function (attribute ``tir.bounds_checks``), the code
    generator keeps it in the compiled function's table of failures, and the runtime raises
    :meth:`error` with it and the index the program computed.  ``index`` and ``extent`` are
    the TIR expressions as text (``i + 1``, ``n``); ``line`` is the TVMScript line of the
    access when the IR knows it (None otherwise).
    """

    buffer: str
    index: str
    extent: str
    line: int | None = None

    def message(self, value: int | None = None) -> str:
        """``buffer B: index 8 is out of bounds for extent 8 (at B[i + 1]) on TVMScript line 12``
        (the line when the IR knows it); without a value, the text of the check in the IR."""
        line = "" if self.line is None else f" on TVMScript line {self.line}"
        index = "index out of bounds" if value is None else f"index {value} is out of bounds"
        return f"buffer {self.buffer}: {index} for extent {self.extent} (at {self.buffer}[{self.index}]){line}"

    def error(self, func_name: str, value: int | None) -> "BoundsError":
        """The exception for this check failing in ``func_name`` with index ``value`` (None: unknown)."""
        err = BoundsError(f"{func_name}: " + self.message("?" if value is None else value))
        err.check, err.index = self, value
        return err

    def to_json(self) -> dict[str, Any]:
        return {"buffer": self.buffer, "index": self.index, "extent": self.extent, "line": self.line}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "BoundsCheck":
        line = d.get("line")
        return BoundsCheck(str(d["buffer"]), str(d["index"]), str(d["extent"]), None if line is None else int(line))


class BoundsError(IndexError):
    """An out-of-range buffer access that bounds-checked native code stopped before it happened.

    Raised instead of a segfault when code built under
    ``PassContext(config={"tir.bounds_check": True})`` computes a bad index; the message names
    the function, the buffer, the index and the buffer's extent.  ``check`` is the
    :class:`BoundsCheck` that failed, ``index`` the index the program computed (None if unknown).
    """

    check: BoundsCheck | None = None
    index: int | None = None


class BenchmarkResult:
    """Timing of repeated runs, in seconds (as TVM's ``BenchmarkResult``).

    ``results`` holds one time per repeat: the mean time of one call in that repeat.
    """

    def __init__(self, results: Iterable[float]):
        self.results = tuple(float(r) for r in results)
        if not self.results:
            raise ValueError("BenchmarkResult needs at least one measurement")
        self.mean = statistics.fmean(self.results)
        self.median = statistics.median(self.results)
        self.min = min(self.results)
        self.max = max(self.results)
        self.std = statistics.pstdev(self.results) if len(self.results) > 1 else 0.0

    def __repr__(self) -> str:
        return (f"BenchmarkResult(mean={self.mean:.6g}s, median={self.median:.6g}s, "
                f"min={self.min:.6g}s, max={self.max:.6g}s, std={self.std:.3g}s, "
                f"repeats={len(self.results)})")

    def __str__(self) -> str:
        ms = 1e3
        return ("Execution time summary:\n"
                f" {'mean (ms)':>10} {'median (ms)':>12} {'max (ms)':>10} {'min (ms)':>10} {'std (ms)':>10}\n"
                f" {self.mean * ms:10.4f} {self.median * ms:12.4f} {self.max * ms:10.4f} "
                f"{self.min * ms:10.4f} {self.std * ms:10.4f}")


class Module:
    """A library of compiled functions: ``lib["name"](*args)`` calls one.

    Code generators subclass it and fill ``_functions`` (name -> callable); they override
    :meth:`get_source` to show what they produced.
    """

    def __init__(self, functions: dict[str, Callable[..., Any]] | None = None, type_key: str = "module",
                 entry_name: str | None = None):
        self._functions: dict[str, Callable[..., Any]] = dict(functions or {})
        self.type_key = type_key
        self._entry_name = entry_name
        self.imported_modules: list[Module] = []

    # -- lookup -----------------------------------------------------------------
    @property
    def mod(self) -> "Module":
        """The library itself: ``tvm.compile(tir_mod)`` returns an Executable in TVM 0.2x whose
        ``.mod`` is the runtime module (``lib.mod.time_evaluator("main", dev)``); here the
        build result is that module."""
        return self

    @property
    def entry_name(self) -> str | None:
        """The function called by ``lib(...)``: "main" if present, else the only one."""
        if self._entry_name is not None:
            return self._entry_name
        if "main" in self._functions:
            return "main"
        if len(self._functions) == 1:
            return next(iter(self._functions))
        return None

    def function_names(self) -> list[str]:
        return list(self._functions)

    def get_function(self, name: str, query_imports: bool = False) -> PackedFunc:
        fn = self._functions.get(name)
        if fn is None and query_imports:
            for m in self.imported_modules:
                if name in m:
                    return m.get_function(name, True)
        if fn is None:
            have = ", ".join(self._functions) or "(none)"
            raise AttributeError(f"module has no function {name!r}; it has: {have}")
        return fn if isinstance(fn, PackedFunc) else PackedFunc(fn, name)

    def __getitem__(self, name: str) -> PackedFunc:
        if not isinstance(name, str):
            raise TypeError(f"functions are looked up by name (str), got {type(name).__name__}")
        return self.get_function(name)

    def __contains__(self, name: object) -> bool:
        return name in self._functions

    def __call__(self, *args: Any) -> Any:
        name = self.entry_name
        if name is None:
            raise ValueError(f"module has several functions ({', '.join(self._functions)}) and no 'main'; "
                             "call one by name: lib['name'](...)")
        return self._functions[name](*args)

    def import_module(self, other: "Module") -> None:
        self.imported_modules.append(other)

    def export_library(self, file_name: str, *, workspace_dir: str | None = None, **kwargs: Any) -> None:
        """Save the library to ``file_name`` for ``minitvm.runtime.load_module``: a minitvm
        executable file holding kernels only (signed, as every file minitvm writes; TVM writes a
        shared library here).  ``workspace_dir`` keeps the object file and LLVM IR for a look."""
        from .vm.executable import Executable  # lazy: the executable file format builds on Module

        Executable(lib=self).export_library(file_name, workspace_dir=workspace_dir, **kwargs)

    # -- inspection -------------------------------------------------------------
    def get_source(self, fmt: str = "") -> str:
        return ""

    def __repr__(self) -> str:
        return f"Module({self.type_key}: {', '.join(self._functions)})"

    # -- timing -----------------------------------------------------------------
    def time_evaluator(self, func_name: str, dev: Device | None = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, cooldown_interval_ms: float = 0,
                       f_preproc: str = "") -> Callable[..., BenchmarkResult]:
        """A function that runs ``func_name`` and times it.

        Each of ``repeat`` measurements calls the function ``number`` times and records the
        mean; when ``min_repeat_ms`` is set, ``number`` grows until one measurement lasts at
        least that long.  One untimed call warms up first.
        """
        fn = self.get_function(func_name)
        return make_time_evaluator(fn, dev, number, repeat, min_repeat_ms, cooldown_interval_ms, f_preproc)


def make_time_evaluator(fn: Callable[..., Any], dev: Device | None = None, number: int = 10,
                        repeat: int = 1, min_repeat_ms: float = 0,
                        cooldown_interval_ms: float = 0, f_preproc: str = "") -> Callable[..., BenchmarkResult]:
    """Timing wrapper shared by modules and the VM."""
    if f_preproc:  # TVM names a registered function run before each repeat (cache flushing)
        raise NotImplementedError(f"time_evaluator(f_preproc={f_preproc!r}): minitvm runs no preprocessing "
                                  "function between repeats")
    if number < 1 or repeat < 1:
        raise ValueError(f"time_evaluator: number and repeat must be >= 1, got {number} and {repeat}")

    def evaluator(*args: Any) -> BenchmarkResult:
        fn(*args)  # warm up (first-touch of memory, lazy binding)
        n = number
        results = []
        for r in range(repeat):
            while True:
                start = time.perf_counter()
                for _ in range(n):
                    fn(*args)
                if dev is not None:
                    dev.sync()
                elapsed = time.perf_counter() - start
                if elapsed * 1e3 >= min_repeat_ms or min_repeat_ms <= 0:
                    break
                # grow the batch so that one measurement lasts min_repeat_ms
                grow = min_repeat_ms / max(elapsed * 1e3, 1e-3)
                n = max(int(n * min(grow * 1.2, 100.0)), n + 1)
            results.append(elapsed / n)
            if cooldown_interval_ms > 0 and r + 1 < repeat:
                time.sleep(cooldown_interval_ms / 1e3)
        return BenchmarkResult(results)

    return evaluator
