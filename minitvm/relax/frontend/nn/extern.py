"""``nn.ExternModule``: hand-written C/C++ kernels called from an exported model.

    ext = nn.SourceModule(symbols={"my_add": lambda a, b: nn.Tensor.placeholder(a.shape, a.dtype)},
                          source_code=CPP_SOURCE, source_format="cpp")

    class Model(nn.Module):
        def forward(self, a, b):
            nn.add_extern(ext)            # once per export
            return ext["my_add"](a, b)   # R.call_dps_packed("my_add", (a, b), out=...)

    mod, params, ext_mods = Model().export_tvm(spec, allow_extern=True)
    mod = relax.transform.AttachExternModules(ext_mods)(mod)   # loads (compiles) them

``symbols`` maps each exported function to its shape/dtype function (placeholders of the outputs).
Calls are destination-passing, as TVM's: the function receives the inputs, then the outputs to
fill.  The source includes ``<dlpack/dlpack.h>`` and ``<tvm/ffi/function.h>`` (minitvm ships
small stand-ins of both) and exports with ``TVM_FFI_DLL_EXPORT_TYPED_FUNC(name, impl)``; a
tensor arrives as ``DLTensor*``, an int as ``int64_t``, a float as ``double``; ``impl`` returns
0 (or void).  A plain ``extern "C"`` function named ``name`` works too.  Compilation uses the
system C/C++ compiler (``$CXX``/``$CC``, else g++/gcc); CUDA sources are not supported.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable

from ....runtime.module import Module as RuntimeModule
from ....runtime.ndarray import NDArray
from ... import op as _op
from .core import Tensor, wrap_nested
from .op import _extern_arg

__all__ = ["ExternModule", "ObjectModule", "SourceModule"]

_INCLUDE = Path(__file__).parent / "_extern_include"


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DTYPE_CODES = {"int": 0, "uint": 1, "float": 2, "bfloat": 4, "bool": 6}


def _dl_tensor(arr: NDArray, keep: list) -> ctypes.c_void_p:
    """A DLTensor describing ``arr`` (its shape array is kept alive in ``keep``)."""
    dtype = str(arr.dtype)
    base = dtype.rstrip("0123456789")
    bits = 8 if dtype == "bool" else int(dtype[len(base):])
    shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    t = _DLTensor(arr._ptr, _DLDevice(1, 0), arr.ndim, _DLDataType(_DTYPE_CODES[base], bits, 1), shape, None, 0)
    keep += [shape, t]
    return ctypes.cast(ctypes.pointer(t), ctypes.c_void_p)


def _c_args(name: str, args: tuple) -> list:
    keep: list = []
    out = []
    for a in args:
        if isinstance(a, NDArray):
            out.append(_dl_tensor(a, keep))
        elif isinstance(a, bool) or not isinstance(a, (int, float)):
            raise TypeError(f"nn.ExternModule {name}: cannot pass a {type(a).__name__} to C (tensors, ints, floats)")
        else:
            out.append(ctypes.c_int64(a) if isinstance(a, int) else ctypes.c_double(a))
    return [out, keep]


def _c_function(lib: ctypes.CDLL, name: str) -> Callable[..., Any]:
    """A Python callable of the exported ``name``: DLTensors for NDArrays, a non-zero return an error."""
    accessor = getattr(lib, f"__minitvm_ffi_ptr_{name}", None)
    if accessor is not None:
        accessor.restype = ctypes.c_void_p
        address = accessor()
    else:
        try:
            address = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
        except AttributeError:
            raise AttributeError(f"nn.ExternModule: the compiled code exports no function {name!r} "
                                 f"(use TVM_FFI_DLL_EXPORT_TYPED_FUNC({name}, impl) or extern \"C\")") from None

    def call(*args: Any) -> None:
        c_args, _keep = _c_args(name, args)
        proto = ctypes.CFUNCTYPE(ctypes.c_int, *[type(a) for a in c_args])
        status = proto(address)(*c_args)
        if status not in (0, None):
            raise RuntimeError(f"nn.ExternModule function {name} returned error code {status}")

    call.__name__ = name
    return call


def _compiler(source_suffix: str, compiler: str | None) -> str:
    cpp = source_suffix != ".c"
    found = compiler or os.environ.get("CXX" if cpp else "CC") or shutil.which("g++" if cpp else "gcc") \
        or shutil.which("c++" if cpp else "cc")
    if not found:
        raise RuntimeError("nn.SourceModule: no C/C++ compiler found (set CXX / CC or install gcc)")
    return found


class ExternModule:
    """Functions implemented outside minitvm: ``symbols`` maps each name to a function of the
    call's arguments returning placeholder Tensor(s) of its outputs; ``ext["name"](*args)``
    emits the destination-passing call.  Subclasses say how :meth:`load` gets the code."""

    def __init__(self, symbols: dict[str, Callable]) -> None:
        if not isinstance(symbols, dict) or not all(callable(f) for f in symbols.values()):
            raise TypeError("nn.ExternModule: symbols must map names to shape/dtype functions")
        self._symbols = dict(symbols)

    def __getitem__(self, func_name: str) -> Callable[..., Any]:
        if func_name not in self._symbols:
            raise KeyError(f"nn.ExternModule has no symbol {func_name!r}; it has {sorted(self._symbols)}")
        infer = self._symbols[func_name]

        def _call(*args: Any) -> Any:
            out = infer(*args)
            outs = [out] if isinstance(out, Tensor) else list(out)
            sinfo = [o._expr.struct_info for o in outs]
            call = _op.call_dps_packed(func_name, _extern_arg(list(args)), sinfo if len(sinfo) > 1 else sinfo[0])
            return wrap_nested(call, func_name)

        return _call

    def _load_shared(self, path: Path) -> RuntimeModule:
        lib = ctypes.CDLL(str(path))
        funcs = {name: _c_function(lib, name) for name in self._symbols}
        module = RuntimeModule(funcs, type_key="static_library")
        module._cdll = lib  # keeps the library loaded as long as the module lives
        return module

    def _link(self, objects: list[Path], workdir: Path, compiler: str) -> Path:
        out = workdir / "extern.so"
        cmd = [compiler, "-shared", "-fPIC", "-o", str(out), *map(str, objects)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"nn.ExternModule: linking failed ({' '.join(cmd)}):\n{done.stderr}")
        return out

    def load(self) -> RuntimeModule:
        """The runtime Module of the functions (``AttachExternModules`` calls this)."""
        raise NotImplementedError(f"{type(self).__name__}.load")


class ObjectModule(ExternModule):
    """The functions of a compiled object file ``filepath`` (``.o``), linked when loaded."""

    def __init__(self, symbols: dict[str, Callable], filepath: Path | str) -> None:
        filepath = Path(filepath)
        if not filepath.is_file():
            raise ValueError(f"nn.ObjectModule: not a file: {filepath}")
        self.filepath = filepath
        super().__init__(symbols)

    def load(self) -> RuntimeModule:
        workdir = Path(tempfile.mkdtemp(prefix="minitvm_extern_"))
        try:  # once loaded, the library no longer needs its file
            return self._load_shared(self._link([self.filepath], workdir, _compiler(".cpp", None)))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


class SourceModule(ExternModule):
    """C (``source_format="c"``) or C++ (``"cpp"``) source — the text or a path — compiled when
    loaded.  ``compile_options`` replaces :meth:`get_compile_options`; ``compiler`` the default."""

    def __init__(self, symbols: dict[str, Callable], source_code: str | Path, source_format: str,
                 compile_options: list[str] | None = None, compiler: str | None = None,
                 output_format: str = "obj") -> None:
        suffixes = {"cpp": ".cpp", "c": ".c"}
        if source_format == "cu":
            raise NotImplementedError("nn.SourceModule: CUDA sources (source_format='cu') need a GPU; minitvm "
                                      "runs on the CPU")
        if source_format not in suffixes:
            raise ValueError(f"nn.SourceModule: source_format {source_format!r} is not 'cpp' or 'c'")
        if output_format != "obj":
            raise NotImplementedError(f"nn.SourceModule: output_format {output_format!r} (only 'obj')")
        path = Path(source_code) if isinstance(source_code, Path) or (
            isinstance(source_code, str) and "\n" not in source_code and len(source_code) < 4096
            and Path(source_code).is_file()) else None
        self.source_code = path.read_text(encoding="utf-8") if path is not None else str(source_code)
        self.source_suffix = suffixes[source_format]
        self.compile_options = (SourceModule.get_compile_options(source_format) if compile_options is None
                                else list(compile_options))
        self.compiler = compiler
        super().__init__(symbols)

    @staticmethod
    def get_includes(tvm_pkg: list[str] | None = None) -> list[Path]:
        """Where ``<dlpack/dlpack.h>`` and ``<tvm/ffi/function.h>`` come from (minitvm's stand-ins)."""
        if tvm_pkg:
            raise NotImplementedError("nn.SourceModule.get_includes(tvm_pkg=...): minitvm ships no TVM packages")
        return [_INCLUDE]

    @staticmethod
    def get_compile_options(source_format: str, tvm_pkg: list[str] | None = None) -> list[str]:
        includes = [f"-I{p}" for p in SourceModule.get_includes(tvm_pkg)]
        std = ["-std=c++17"] if source_format == "cpp" else []
        return [*std, "-O2", "-fPIC", *includes]

    def compile(self, output_path: Path) -> None:
        """Compile the source to the object file ``output_path``."""
        workdir = Path(output_path).parent
        src = workdir / f"source{self.source_suffix}"
        src.write_text(self.source_code, encoding="utf-8")
        cmd = [_compiler(self.source_suffix, self.compiler), "-c", *self.compile_options, "-o", str(output_path),
               str(src)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"nn.SourceModule: compilation failed ({' '.join(cmd)}):\n{done.stderr}")

    def load(self) -> RuntimeModule:
        workdir = Path(tempfile.mkdtemp(prefix="minitvm_extern_"))
        try:  # once loaded, the library no longer needs its files
            obj = workdir / "source.o"
            self.compile(obj)
            return self._load_shared(self._link([obj], workdir, _compiler(self.source_suffix, self.compiler)))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
