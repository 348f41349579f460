"""Executable: bytecode functions, their constants and the kernel library, and its file format.

An Executable is what the compiler produces and the VirtualMachine runs.  It holds

* ``constants``  -- numpy arrays (weights), shapes (:class:`ShapeTuple`), strings (dtypes,
  error messages), ints, floats, bools, None and tuples of these;
* ``func_table`` -- the functions that ``Call`` can reach, by index: a :class:`VMFunction`
  (bytecode) or a name (a ``str``) that the VM looks up in the kernel library first and
  in the global function registry second;
* ``lib``        -- the compiled kernels (a runtime ``Module``), or None.

File format (version 2), little-endian::

    b"MINITVM-EXEC"                  12 bytes, magic
    u32  format version              (2)
    u64  metadata length M
    u64  data length D
    u32  CRC-32 of the 32 + M + D bytes that follow (the MAC, metadata and data)
    32 bytes  HMAC-SHA256, under this installation's key (:mod:`minitvm.runtime.signing`), of
             the magic, version, M, D, metadata and data
    M bytes  metadata, UTF-8 JSON:   {"functions", "func_table", "constants", "kernels"}
    D bytes  data sections, back to back: the raw bytes of each tensor constant (in
             constant order), then the kernel payload

The kernels become machine code that runs in this process, and no check over LLVM IR can
prove that code safe, so a file is loaded only if its MAC shows that this installation wrote
it, or if the caller says ``trust=True`` (as TVM's ``.so`` modules, which run code by
design).  The MAC is checked before the metadata is read.  The CRC only tells accidental
damage ("corrupted") from a file someone else signed.  Beyond that, whether signed or
trusted: no pickle, dtypes limited to numbers, every index in the bytecode checked
(:meth:`Executable.verify`) before a VM runs it, and the kernel IR checked against what
minitvm's code generator emits before it is compiled.

Kernels are saved through two hooks in the global function registry, provided by the code
generator that made the library:

* ``"runtime.module.export_<type_key>"(lib) -> {"format": str, "payload": str | bytes,
  "metadata": dict}``: turn the library into bytes (minitvm's LLVM code generator registers
  the one for ``llvm`` modules when first imported; saving imports it when needed).
* ``"runtime.module.loadfrom_<format>"(payload, metadata) -> Module``: turn them back into a
  library (called when the loaded Executable's ``lib`` is first needed).
"""

from __future__ import annotations

import hmac
import importlib
import json
import math
import os
import struct
import zlib
from typing import Any

import numpy as np

from ...ir.node import script_printer
from ..module import Module
from ..ndarray import NDArray
from ..registry import get_global_func
from ..signing import MAC_SIZE, key_path, mac, signing_key
from .builtins import ShapeTuple, check_dtype
from .bytecode import Call, FuncRef, VMFunction
from .native import EntryPlan, plan_entry

#: kernel formats minitvm itself writes, and the module whose import registers their loader
_KNOWN_LOADERS = {"llvm_ir": "minitvm.target.codegen.llvm_export"}
#: kernel library types minitvm builds, and the module whose import registers their exporter
_KNOWN_EXPORTERS = {"llvm": "minitvm.target.codegen.llvm_export"}


def _codegen_hook(name: str, module: str | None) -> Any:
    """The registered function ``name``; when missing, the code generator ``module`` (a fixed
    name, never one read from a file) is imported first, since importing it registers the hook.
    The one upward import of the runtime: a TIR-only build never imports the saving code."""
    hook = get_global_func(name, allow_missing=True)
    if hook is None and module is not None:
        importlib.import_module(module)
        hook = get_global_func(name, allow_missing=True)
    return hook

__all__ = ["Executable", "VMExecutableModule", "load_executable", "load_module", "pack_executable", "MAGIC",
           "FORMAT_VERSION", "HEADER_SIZE"]

MAGIC = b"MINITVM-EXEC"
FORMAT_VERSION = 3  # 2: signed with this installation's key; 3: match_shape codes numbered as TVM's
_HEADER = struct.Struct(f"<IQQI{MAC_SIZE}s")  # version, metadata length, data length, crc32, mac
HEADER_SIZE = len(MAGIC) + _HEADER.size
_SIGNED_HEAD = len(MAGIC) + struct.calcsize("<IQQ")  # magic, version and lengths: covered by the MAC


class Executable:
    """Bytecode functions + constants + kernel library; ``save``/``load_executable`` on disk."""

    def __init__(self, func_table: list[VMFunction | str] | None = None, constants: list[Any] | None = None,
                 lib: Module | None = None):
        self.func_table: list[VMFunction | str] = list(func_table or [])
        self.constants: list[Any] = [_normalize_constant(c) for c in (constants or [])]
        self._lib = lib
        # the saved form of the kernels, set by load (or filled lazily by save)
        self.kernel_format: str | None = None
        self.kernel_payload: str | bytes | None = None
        self.kernel_metadata: dict = {}
        #: "compiled": the kernel library also holds native entries of the VM functions
        #: (see :mod:`.native`); "bytecode": bytecode only
        self.exec_mode = "bytecode"
        self._saved_plans: dict[str, Any] | None = None  # from a file: for printing before the library loads

    # -- building ---------------------------------------------------------------------------------
    def add_constant(self, value: Any) -> int:
        """Index of ``value`` in the constant pool (scalars, strings and shapes are shared)."""
        value = _normalize_constant(value)
        if not isinstance(value, (np.ndarray, tuple)) or isinstance(value, ShapeTuple):
            for i, c in enumerate(self.constants):
                if type(c) is type(value) and c == value:
                    return i
        self.constants.append(value)
        return len(self.constants) - 1

    def add_extern(self, name: str) -> int:
        """Index of the function called ``name`` (adds a library/registry name if new)."""
        for i, entry in enumerate(self.func_table):
            if (entry.name if isinstance(entry, VMFunction) else entry) == name:
                return i
        self.func_table.append(name)
        return len(self.func_table) - 1

    def add_function(self, func: VMFunction) -> int:
        """Add a bytecode function; it replaces a same-named entry that calls reached first."""
        for i, entry in enumerate(self.func_table):
            if isinstance(entry, str) and entry == func.name:
                self.func_table[i] = func
                return i
            if isinstance(entry, VMFunction) and entry.name == func.name:
                raise ValueError(f"Executable already has a VM function named {func.name!r}")
        self.func_table.append(func)
        return len(self.func_table) - 1

    # -- lookup -----------------------------------------------------------------------------------
    @property
    def func_names(self) -> list[str]:
        return [e.name if isinstance(e, VMFunction) else e for e in self.func_table]

    @property
    def vm_functions(self) -> dict[str, VMFunction]:
        return {e.name: e for e in self.func_table if isinstance(e, VMFunction)}

    @property
    def lib(self) -> Module | None:
        """The kernel library; for a loaded executable, rebuilt by its loader on first use."""
        if self._lib is None and self.kernel_format is not None:
            loader_name = f"runtime.module.loadfrom_{self.kernel_format}"
            loader = _codegen_hook(loader_name, _KNOWN_LOADERS.get(self.kernel_format))
            if loader is None:
                raise ValueError(f"the executable's kernels are saved as {self.kernel_format!r}, and no "
                                 f"loader {loader_name!r} is registered (the code generator registers it: "
                                 "import minitvm.target first)")
            lib = loader(self.kernel_payload, self.kernel_metadata)
            if not isinstance(lib, Module):
                raise TypeError(f"{loader_name} returned {type(lib).__name__}, not a runtime Module")
            self._lib = lib
        return self._lib

    @property
    def mod(self) -> "VMExecutableModule":
        """The executable as a runtime module, as TVM's ``ex.mod`` (type ``relax.VMExecutable``):
        ``get_source()`` is the bytecode text and ``imported_modules[0]`` the kernel library
        (``ex.mod.imported_modules[0].get_source()`` shows the kernels' LLVM IR)."""
        return VMExecutableModule(self)

    def _kernel_names(self) -> set[str]:
        if self._lib is not None:
            return set(self._lib.function_names())
        return set(self.kernel_metadata.get("functions", []))

    def native_plans(self, *, load: bool = True) -> dict[str, Any]:
        """Per VM function: its native entry's :class:`~.native.EntryPlan` when the kernel library
        holds one, else why not (a sentence).  Empty in exec_mode "bytecode".

        The plans are made again from the bytecode and the library's kernels (what the VM
        runs).  ``load=False`` on an executable read from a file whose library is not loaded yet
        gives the plans saved with it instead (for printing only)."""
        if self.exec_mode != "compiled":
            return {}
        if not load and self._lib is None and self._saved_plans is not None:
            return dict(self._saved_plans)
        lib = self.lib
        have = getattr(lib, "native_entries", None)
        info = getattr(lib, "kernel_info", None)
        names = self.func_names
        out: dict[str, Any] = {}
        for entry in self.func_table:
            if not isinstance(entry, VMFunction):
                continue
            if have is None or info is None:
                out[entry.name] = "the kernel library has no native code (no kernels, or not an LLVM library)"
                continue
            plan = plan_entry(entry, names, self.constants, info)
            if isinstance(plan, EntryPlan) and plan.symbol not in have:
                plan = "the kernel library has no native entry for this bytecode"
            out[entry.name] = plan
        return out

    def verify(self) -> None:
        """Check every function's references (ValueError names the function and instruction)."""
        names = self.func_names
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"function table has duplicate names: {', '.join(dup)}")
        for entry in self.func_table:
            if isinstance(entry, VMFunction):
                entry.verify(len(self.constants), len(self.func_table))
            elif not isinstance(entry, str) or not entry:
                raise ValueError(f"function table entry {entry!r} is neither a VMFunction nor a name")
        for i, c in enumerate(self.constants):
            if isinstance(c, FuncRef) and c.name not in names:
                raise ValueError(f"constant {i} refers to function {c.name!r}, which is not in the function table")

    # -- printing ---------------------------------------------------------------------------------
    def as_text(self) -> str:
        """Constants, the function table, then every bytecode function."""
        kernels = self._kernel_names()
        lines = ["constants:"]
        lines += [f"  c[{i}] = {_describe_constant(c)}" for i, c in enumerate(self.constants)] or ["  (none)"]
        lines.append("functions:")
        for i, entry in enumerate(self.func_table):
            if isinstance(entry, VMFunction):
                what = (f"VM function, {len(entry.params)} params, {entry.num_registers} registers, "
                        f"{len(entry.instructions)} instructions")
                lines.append(f"  f[{i}] = @{entry.name} ({what})")
            else:
                lines.append(f"  f[{i}] = {entry} ({'kernel' if entry in kernels else 'packed'})")
        names = self.func_names
        for entry in self.func_table:
            if isinstance(entry, VMFunction):
                lines += ["", entry.as_text(names)]
        for name, plan in self.native_plans(load=False).items():
            if isinstance(plan, EntryPlan):
                lines += ["", plan.as_text()]
            else:
                lines += ["", f"@{name}: no native entry, the bytecode runs: {plan}"]
        return "\n".join(lines)

    def stats(self) -> str:
        """A summary: constants by kind and size, functions by size, what each calls."""
        kinds: dict[str, list[int]] = {}
        for c in self.constants:
            kind = _constant_kind(c)
            entry = kinds.setdefault(kind, [0, 0])
            entry[0] += 1
            entry[1] += c.nbytes if isinstance(c, np.ndarray) else 0
        lines = [f"constants: {len(self.constants)}"]
        for kind, (count, nbytes) in sorted(kinds.items()):
            lines.append(f"  {kind:8} {count:5}" + (f"  {_human_bytes(nbytes)}" if kind == "tensor" else ""))
        vm = [e for e in self.func_table if isinstance(e, VMFunction)]
        ext = [e for e in self.func_table if isinstance(e, str)]
        lines.append(f"VM functions: {len(vm)}")
        names = self.func_names
        for f in vm:
            calls = sorted({names[i.func_index] for i in f.instructions if isinstance(i, Call)})
            lines.append(f"  @{f.name}: {len(f.instructions)} instructions, {f.num_registers} registers; "
                         f"calls {', '.join(calls) or 'nothing'}")
        kernels = self._kernel_names()
        lines.append(f"external functions: {len(ext)} ({sum(n in kernels for n in ext)} kernels, "
                     f"{sum(n not in kernels for n in ext)} packed)")
        lines += [f"  {n}" for n in ext]
        if self._lib is not None:
            lines.append(f"kernel library: {self._lib.type_key}, {len(self._lib.function_names())} functions")
        elif self.kernel_format is not None:
            lines.append(f"kernel library: saved as {self.kernel_format} "
                         f"({_human_bytes(len(self.kernel_payload or b''))}), not loaded yet")
        else:
            lines.append("kernel library: none")
        return "\n".join(lines)

    def __repr__(self) -> str:
        vm = [e.name for e in self.func_table if isinstance(e, VMFunction)]
        return f"<minitvm Executable: functions {', '.join(vm) or '(none)'}; {len(self.constants)} constants>"

    def _repr_html_(self) -> str:
        """The bytecode listing, highlighted in Jupyter (the same highlighter as TVMScript)."""
        return script_printer().to_html(self.as_text())

    # -- saving -----------------------------------------------------------------------------------
    def _export_kernels(self) -> tuple[str, bytes, str, dict] | None:
        """(format, payload bytes, encoding, metadata) of the kernel library, or None."""
        if self._lib is None and self.kernel_format is None:
            return None
        if self._lib is not None and self.kernel_format is None:
            lib = self._lib
            if not lib.function_names():
                return None
            # (a TIR-only build, tvm.compile of a PrimFunc module, has not imported the exporter yet)
            exporter = _codegen_hook(f"runtime.module.export_{lib.type_key}", _KNOWN_EXPORTERS.get(lib.type_key))
            if exporter is not None:
                out = exporter(lib)
                fmt, payload, meta = out["format"], out["payload"], dict(out.get("metadata", {}))
            else:
                raise ValueError(f"cannot save the kernel library: modules of type {lib.type_key!r} have no "
                                 f"exporter (register 'runtime.module.export_{lib.type_key}')")
        else:
            fmt, payload, meta = self.kernel_format, self.kernel_payload, self.kernel_metadata
        if isinstance(payload, str):
            return fmt, payload.encode("utf-8"), "utf-8", meta
        if isinstance(payload, (bytes, bytearray)):
            return fmt, bytes(payload), "binary", meta
        raise TypeError(f"kernel payload must be str or bytes, got {type(payload).__name__}")

    def save(self, path: str) -> None:
        """Write the executable to ``path`` (format described in the module docstring)."""
        self.verify()
        sections: list[bytes] = []
        constants = [_constant_to_json(c, sections) for c in self.constants]
        kernels = self._export_kernels()
        kernel_meta = None
        if kernels is not None:
            fmt, payload, encoding, meta = kernels
            kernel_meta = {"format": fmt, "encoding": encoding, "nbytes": len(payload), "metadata": meta}
            sections.append(payload)
        meta_json = {
            "func_table": [{"vm": e.name} if isinstance(e, VMFunction) else {"extern": e}
                           for e in self.func_table],
            "functions": [e.to_json() for e in self.func_table if isinstance(e, VMFunction)],
            "constants": constants,
            "kernels": kernel_meta,
        }
        if self.exec_mode != "bytecode":  # a bytecode-only file stays as it was before native entries
            meta_json["exec_mode"] = self.exec_mode
            meta_json["native_plans"] = {name: plan.to_json() if isinstance(plan, EntryPlan) else plan
                                         for name, plan in self.native_plans(load=False).items()}
        meta = json.dumps(meta_json, separators=(",", ":"), allow_nan=False).encode("utf-8")
        blob = pack_executable(meta, b"".join(sections))
        with open(path, "wb") as f:
            f.write(blob)

    def __getitem__(self, name: str) -> Any:
        """TVM's executable module functions by name: ``ex["stats"]()``, ``ex["as_text"]()``."""
        functions = {"stats": self.stats, "as_text": self.as_text}
        if name not in functions:
            raise AttributeError(f"the executable has no function {name!r}; it has: {', '.join(functions)} "
                                 "(its Relax functions run through relax.VirtualMachine(ex, dev))")
        return functions[name]

    def export_library(self, file_name: str, *, workspace_dir: str | None = None, **kwargs: Any) -> None:
        """TVM's name for :meth:`save`.  ``workspace_dir`` keeps what went into the file, for a
        look: ``lib0.o`` (the kernels' object code, as TVM's intermediate object), ``lib0.ll``
        (their LLVM IR) and ``bytecode.txt`` (the VM program).  minitvm writes its own signed
        format, not a shared library, so TVM's packaging options (``fcompile``, ``addons`` ...)
        have nothing to act on and are refused by name."""
        if kwargs:
            raise NotImplementedError(f"export_library: minitvm writes its own file format, so "
                                      f"{', '.join(sorted(kwargs))} (TVM's shared-library packaging) does not apply")
        self.save(file_name)
        if workspace_dir is not None:
            self._write_workspace(workspace_dir)

    def _write_workspace(self, workspace_dir: str) -> None:
        os.makedirs(workspace_dir, exist_ok=True)
        with open(os.path.join(workspace_dir, "bytecode.txt"), "w") as f:
            f.write(self.as_text())
        lib = self.lib
        if lib is None or not lib.function_names():
            return
        if lib.type_key == "llvm":
            lib.save(os.path.join(workspace_dir, "lib0.o"))
            lib.save(os.path.join(workspace_dir, "lib0.ll"))
        else:  # e.g. the CUDA source of cuda-emulated kernels
            with open(os.path.join(workspace_dir, f"lib0.{lib.type_key}.txt"), "w") as f:
                f.write(lib.get_source())

    @staticmethod
    def load(path: str, trust: bool = False) -> "Executable":
        return load_executable(path, trust=trust)


def pack_executable(meta: bytes, data: bytes, *, key: bytes | None = None) -> bytes:
    """The bytes of an executable file holding ``meta`` (JSON) and ``data``, signed with ``key``
    (this installation's by default).  :meth:`Executable.save` writes these; tools and tests
    that rewrite a file sign it again with this."""
    key = signing_key() if key is None else key
    lengths = struct.pack("<IQQ", FORMAT_VERSION, len(meta), len(data))
    tag = mac(key, MAGIC, lengths, meta, data)
    crc = zlib.crc32(data, zlib.crc32(meta, zlib.crc32(tag)))
    return MAGIC + _HEADER.pack(FORMAT_VERSION, len(meta), len(data), crc, tag) + meta + data


def load_executable(path: str, trust: bool = False) -> Executable:
    """Read an executable written by :meth:`Executable.save`.

    A file that is not an executable, was written by another format version, is truncated
    or corrupted raises ``ValueError`` saying which.  So does a file this installation did
    not sign, unless ``trust=True``: loading a file runs the machine code it holds, so accept
    one from elsewhere only from someone you would take a shared library from.
    """
    with open(path, "rb") as f:
        blob = f.read()
    return _parse(blob, str(path), trust)


def load_module(path: str, trust: bool = False) -> Executable | Module:
    """TVM's ``tvm.runtime.load_module`` for the files minitvm writes: an executable saved by
    ``ex.export_library(path)`` / ``ex.save(path)``, ready for ``relax.VirtualMachine(loaded, dev)``,
    or a kernel library saved by ``lib.export_library(path)`` (``tvm.compile`` of a TIR module),
    returned as that library (``lib["name"](...)``).

    minitvm compiles in memory and writes no shared libraries, so any other file is refused
    with a ValueError that says so.  A file saved by another installation is refused unless
    ``trust=True`` (see :func:`load_executable`).
    """
    with open(path, "rb") as f:
        head = f.read(len(MAGIC))
    if not MAGIC.startswith(head):  # an empty or truncated executable gets load_executable's message
        raise ValueError(f"load_module: {path} is not a minitvm executable (what ex.export_library / ex.save "
                         "write); minitvm does not load shared libraries")
    exe = load_executable(path, trust=trust)
    if not exe.func_table and exe.lib is not None:  # a kernel library (lib.export_library): the library
        return exe.lib
    return exe


def _parse(blob: bytes, where: str, trust: bool) -> Executable:
    meta_len, data_len, crc, tag = _read_header(blob, where)
    pos = HEADER_SIZE
    meta_bytes = blob[pos:pos + meta_len]
    if len(meta_bytes) < meta_len:
        raise ValueError(f"{where}: truncated: expected {meta_len} bytes of metadata, found {len(meta_bytes)}")
    data = blob[pos + meta_len:]
    if len(data) > data_len:
        raise ValueError(f"{where}: corrupted: {len(data) - data_len} unexpected bytes after the last section")
    if len(data) == data_len:
        if zlib.crc32(data, zlib.crc32(meta_bytes, zlib.crc32(tag))) != crc:
            raise ValueError(f"{where}: corrupted: the checksum does not match the contents")
        if not trust:
            _check_signature(blob[:_SIGNED_HEAD], meta_bytes, data, tag, where)
    # else the file is truncated and never loads; its metadata (data only: nothing is compiled
    # or returned) is read to say in which section it ends
    try:
        meta = json.loads(meta_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{where}: corrupted: the metadata is not valid JSON ({err})") from err
    try:
        exe = _build(meta, data)
        if len(data) != data_len:  # the sections were all there: it is the header that is wrong
            raise ValueError(f"corrupted: the header says {data_len} bytes of data, the sections hold {len(data)}")
        return exe
    except ValueError as err:
        if str(err).startswith(where):
            raise
        raise ValueError(f"{where}: {err}") from err
    except (KeyError, IndexError, TypeError, AttributeError) as err:
        raise ValueError(f"{where}: corrupted metadata ({type(err).__name__}: {err})") from err


def _read_header(blob: bytes, where: str) -> tuple[int, int, int, bytes]:
    """(metadata length, data length, crc, mac) of a file of this format version."""
    if not blob:
        raise ValueError(f"{where} is not a minitvm executable: the file is empty")
    if not blob.startswith(MAGIC):
        if MAGIC.startswith(blob):
            raise ValueError(f"{where}: truncated: the header ends after {len(blob)} bytes")
        raise ValueError(f"{where} is not a minitvm executable: it does not start with {MAGIC.decode()!r}")
    pos = len(MAGIC)
    if len(blob) < pos + 4:
        raise ValueError(f"{where}: truncated: the header ends after {len(blob)} bytes")
    (version,) = struct.unpack_from("<I", blob, pos)
    if version != FORMAT_VERSION:
        who = "an older" if version < FORMAT_VERSION else "a newer"
        raise ValueError(f"{where}: executable file was written by minitvm format {version}; "
                         f"this minitvm reads format {FORMAT_VERSION} ({who} minitvm saved it: "
                         "compile the model again with this one)")
    if len(blob) < HEADER_SIZE:
        raise ValueError(f"{where}: truncated: the header ends after {len(blob)} bytes")
    _, meta_len, data_len, crc, tag = _HEADER.unpack_from(blob, pos)
    return meta_len, data_len, crc, tag


def _check_signature(head: bytes, meta: bytes, data: bytes, tag: bytes, where: str) -> None:
    """Refuse a file whose MAC is not this installation's: its kernels would run as machine code."""
    if hmac.compare_digest(mac(signing_key(), head, meta, data), tag):
        return
    raise ValueError(
        f"{where}: not signed by this installation: its MAC does not match the key in {key_path()}, so "
        "another installation or user wrote it, or it was changed after it was saved. Loading an "
        "executable compiles and runs the machine code it holds, which no check can prove safe. If you "
        "trust whoever made this file as you would a shared library, load it with "
        "load_module(path, trust=True) (or load_executable / Executable.load with trust=True); "
        "see docs/threat_model.md")


def _build(meta: dict, data: bytes) -> Executable:
    reader = _SectionReader(data)
    constants = [_constant_from_json(c, reader, f"constant {i}") for i, c in enumerate(meta["constants"])]
    functions = {f.name: f for f in (VMFunction.from_json(d) for d in meta["functions"])}
    table: list[VMFunction | str] = []
    for entry in meta["func_table"]:
        if "vm" in entry:
            table.append(functions[entry["vm"]])
        else:
            table.append(str(entry["extern"]))
    exe = Executable(table, constants)
    kernels = meta.get("kernels")
    if kernels is not None:
        payload = reader.take(int(kernels["nbytes"]), "the kernel library")
        exe.kernel_format = str(kernels["format"])
        exe.kernel_payload = payload.decode("utf-8") if kernels.get("encoding") == "utf-8" else payload
        exe.kernel_metadata = dict(kernels.get("metadata") or {})
    if reader.pos != len(data):
        raise ValueError(f"corrupted: {len(data) - reader.pos} bytes of data belong to no section")
    exec_mode = meta.get("exec_mode", "bytecode")
    if exec_mode not in ("bytecode", "compiled"):
        raise ValueError(f"corrupted: unknown exec_mode {exec_mode!r}")
    exe.exec_mode = exec_mode
    plans = meta.get("native_plans") or {}
    if not isinstance(plans, dict):
        raise ValueError("corrupted: the native entry plans are not a JSON object")
    exe._saved_plans = {str(k): v if isinstance(v, str) else EntryPlan.from_json(v) for k, v in plans.items()}
    exe.verify()
    return exe


class _SectionReader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0:
            raise ValueError(f"corrupted: negative size for {what}")
        chunk = self.data[self.pos:self.pos + n]
        if len(chunk) < n:
            raise ValueError(f"truncated: expected {n} bytes of {what}, found {len(chunk)}")
        self.pos += n
        return chunk


# -- constants --------------------------------------------------------------------------------------


def _normalize_constant(value: Any) -> Any:
    """The stored form of a constant: numpy arrays stay numpy (C-contiguous, numeric)."""
    if isinstance(value, NDArray):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        check_dtype(value.dtype, "constant")
        return np.require(value, requirements="C")  # keeps 0-d arrays 0-d
    if isinstance(value, ShapeTuple):
        return value
    if isinstance(value, (tuple, list)):
        return tuple(_normalize_constant(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str, FuncRef)):
        return value
    raise TypeError(f"a constant is an array, shape, tuple, str, int, float, bool, FuncRef or None; "
                    f"got {type(value).__name__}")


def _constant_kind(c: Any) -> str:
    if isinstance(c, np.ndarray):
        return "tensor"
    if isinstance(c, ShapeTuple):
        return "shape"
    if isinstance(c, tuple):
        return "tuple"
    if isinstance(c, FuncRef):
        return "function"
    return "none" if c is None else type(c).__name__


def _describe_constant(c: Any) -> str:
    if isinstance(c, np.ndarray):
        return f"tensor {c.dtype} {tuple(c.shape)} ({_human_bytes(c.nbytes)})"
    if isinstance(c, ShapeTuple):
        return f"shape {tuple(c)}"
    if isinstance(c, tuple):
        return "(" + ", ".join(_describe_constant(v) for v in c) + ")"
    if isinstance(c, FuncRef):
        return f"function {c}"
    return repr(c)


def _human_bytes(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"


def _constant_to_json(c: Any, sections: list[bytes]) -> dict:
    if isinstance(c, np.ndarray):
        raw = np.require(c, requirements="C").astype(c.dtype.newbyteorder("<"), copy=False).tobytes()
        sections.append(raw)
        return {"type": "tensor", "dtype": c.dtype.name, "shape": list(c.shape), "nbytes": len(raw)}
    if isinstance(c, ShapeTuple):
        return {"type": "shape", "value": list(c)}
    if isinstance(c, tuple):
        return {"type": "tuple", "fields": [_constant_to_json(v, sections) for v in c]}
    if isinstance(c, bool):
        return {"type": "bool", "value": c}
    if isinstance(c, int):
        return {"type": "int", "value": c}
    if isinstance(c, float):
        return {"type": "float", "value": c.hex()}  # exact, and covers inf/nan
    if isinstance(c, str):
        return {"type": "str", "value": c}
    if isinstance(c, FuncRef):
        return {"type": "func", "name": c.name}
    return {"type": "none"}


def _constant_from_json(d: dict, reader: _SectionReader, what: str) -> Any:
    kind = d["type"]
    if kind == "tensor":
        dt = check_dtype(d["dtype"], what).newbyteorder("<")
        shape = tuple(d["shape"])
        if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
            raise ValueError(f"corrupted: {what} has an invalid shape {list(shape)}")
        nbytes = int(d["nbytes"])
        if nbytes != math.prod(shape) * dt.itemsize:
            raise ValueError(f"corrupted: {what} ({dt.name}, shape {shape}) claims {nbytes} bytes")
        raw = reader.take(nbytes, what)
        return np.frombuffer(raw, dtype=dt).astype(dt.newbyteorder("="), copy=True).reshape(shape)
    if kind == "shape":
        values = d["value"]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise ValueError(f"corrupted: {what} is a shape of non-integers")
        return ShapeTuple(values)
    if kind == "tuple":
        return tuple(_constant_from_json(f, reader, what) for f in d["fields"])
    if kind == "bool":
        return bool(d["value"])
    if kind == "int":
        if not isinstance(d["value"], int):
            raise ValueError(f"corrupted: {what} is not an int")
        return d["value"]
    if kind == "float":
        return float.fromhex(d["value"])
    if kind == "str":
        return str(d["value"])
    if kind == "none":
        return None
    if kind == "func":
        return FuncRef(str(d["name"]))
    raise ValueError(f"corrupted: {what} has unknown type {kind!r}")


class VMExecutableModule(Module):
    """An :class:`Executable` seen as a runtime module: its bytecode text, the kernels imported."""

    def __init__(self, executable: Executable) -> None:
        super().__init__({}, type_key="relax.VMExecutable")
        self.executable = executable
        if executable.lib is not None:
            self.import_module(executable.lib)

    def get_source(self, fmt: str = "") -> str:
        if fmt not in ("", "text"):
            raise ValueError(f"a VM executable's source is its bytecode text (fmt='text'), not {fmt!r}; "
                             "the kernels' sources are in imported_modules[0].get_source(fmt)")
        return self.executable.as_text()

