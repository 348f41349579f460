"""``tvm.rpc``: the in-process session of TVM's cross-compilation tutorial.

TVM compiles on one machine and runs on another through an RPC server: ``remote.upload(path)``,
``remote.load_module(name)``, ``remote.cpu()``, then ``time_evaluator`` measures there.
:class:`LocalSession` is TVM's stand-in for a remote device in the same process, with a working
directory of its own: the tutorial's steps run as written.  minitvm has no RPC server, so
:func:`connect` and :func:`connect_tracker` say so by name.
"""

from __future__ import annotations

import os
from typing import Any

from ..contrib.utils import tempdir
from ..runtime.device import Device
from ..runtime.device import device as make_device
from ..runtime.registry import PackedFunc, get_global_func
from ..runtime.vm.executable import load_module as load_file

__all__ = ["LocalSession", "RPCSession", "connect", "connect_tracker"]


class LocalSession:
    """A "remote" that is this process: files go to the session's own temporary directory."""

    def __init__(self) -> None:
        self._dir = tempdir()

    def _path(self, name: str) -> str:
        # names are relative to the session's directory and stay inside it
        full = os.path.realpath(os.path.join(self._dir.temp_dir or "", name))
        if os.path.commonpath([full, os.path.realpath(self._dir.path)]) != os.path.realpath(self._dir.path):
            raise ValueError(f"rpc session: {name!r} lies outside the session's directory")
        return full

    def upload(self, data: str | bytes | bytearray, target: str | None = None) -> None:
        """Copy a file (a path) or bytes (then ``target`` names them) into the session."""
        if isinstance(data, (bytes, bytearray)):
            if target is None:
                raise ValueError("upload: target must be given when data is bytes")
            blob = bytes(data)
        else:
            with open(data, "rb") as f:
                blob = f.read()
            target = target or os.path.basename(data)
        with open(self._path(target), "wb") as f:
            f.write(blob)

    def download(self, path: str) -> bytearray:
        with open(self._path(path), "rb") as f:
            return bytearray(f.read())

    def remove(self, path: str) -> None:
        os.remove(self._path(path))

    def listdir(self, path: str = ".") -> str:
        """Names in a session directory, comma-separated (TVM's answer)."""
        return ",".join(sorted(os.listdir(self._path(path))))

    def load_module(self, path: str, trust: bool = False) -> Any:
        """Load an uploaded file, as ``minitvm.runtime.load_module`` would (same trust rules)."""
        return load_file(self._path(path), trust=trust)

    def device(self, dev_type: Any, dev_id: int = 0) -> Device:
        return make_device(dev_type, dev_id)

    def cpu(self, dev_id: int = 0) -> Device:
        return make_device("cpu", dev_id)

    def get_function(self, name: str) -> PackedFunc:
        """A registered global function of the "remote" (this process)."""
        return get_global_func(name)


RPCSession = LocalSession  # the only kind of session minitvm has


def connect(url: str, port: int, key: str = "", **kwargs: Any) -> LocalSession:
    raise NotImplementedError(f"rpc.connect({url!r}, {port}): minitvm has no RPC server or client; "
                              "rpc.LocalSession() runs the same steps in this process")


def connect_tracker(url: str, port: int, **kwargs: Any) -> Any:
    raise NotImplementedError(f"rpc.connect_tracker({url!r}, {port}): minitvm has no RPC tracker; "
                              "rpc.LocalSession() runs the same steps in this process")
