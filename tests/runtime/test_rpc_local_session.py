"""TVM's cross-compilation tutorial, as written (``docs/how_to/tutorials/cross_compilation_and_rpc.py``,
the local demo): compile a TIR kernel, export it, upload it to ``rpc.LocalSession()``, load it
there, run it and time it."""

import os
import subprocess
import sys

import numpy as np
import pytest

import minitvm as tvm
import minitvm_ffi as tvm_ffi  # noqa: F401 - the tutorial imports it
from minitvm import rpc, te
from minitvm.support import utils


def test_the_tutorials_local_demo_runs_as_written():
    n = tvm.runtime.convert(1024)
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    mod = tvm.IRModule.from_expr(te.create_prim_func([A, B]).with_attr("global_symbol", "add_one"))
    func = tvm.compile(mod, target="llvm")
    temp = utils.tempdir()
    path = temp.relpath("lib.tar")
    func.export_library(path)

    remote = rpc.LocalSession()
    remote.upload(path)
    func = remote.load_module("lib.tar")
    dev = remote.cpu()
    a = tvm.runtime.tensor(np.random.default_rng(0).uniform(size=1024).astype(A.dtype), dev)
    b = tvm.runtime.tensor(np.zeros(1024, dtype=A.dtype), dev)
    func(a, b)
    np.testing.assert_equal(b.numpy(), a.numpy() + 1)
    cost = func.time_evaluator("add_one", dev, number=10)(a, b).mean
    assert cost > 0
    assert remote.listdir(".") == "lib.tar" and remote.download("lib.tar") == bytearray(open(path, "rb").read())


def test_a_tir_only_script_exports_a_library_it_can_load(tmp_path):
    """The tutorial as a script imports no Relax: saving its library must still write the
    kernels' signatures (the exporter is registered by the LLVM saving code, not by Relax), or
    load_module refuses the file it just wrote."""
    code = ("import sys, numpy as np, minitvm as tvm\n"
            "from minitvm import te\n"
            "A = te.placeholder((16,), name='A')\n"
            "B = te.compute((16,), lambda i: A[i] * 2.0, name='B')\n"
            "lib = tvm.compile(tvm.IRModule.from_expr(te.create_prim_func([A, B]).with_attr('global_symbol', 'f')))\n"
            "assert 'minitvm.relax' not in sys.modules and 'minitvm.target.codegen.llvm_export' not in sys.modules\n"
            f"lib.export_library({str(tmp_path / 'lib.tar')!r})\n"
            f"f = tvm.runtime.load_module({str(tmp_path / 'lib.tar')!r})['f']\n"
            "a = tvm.runtime.tensor(np.arange(16, dtype='float32') - 3.5); b = tvm.runtime.empty((16,), 'float32')\n"
            "f(a, b); np.testing.assert_array_equal(b.numpy(), a.numpy() * 2); print('loaded and ran')\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=root))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "loaded and ran"


def test_a_session_keeps_to_its_directory_and_names_what_it_lacks(tmp_path):
    remote = rpc.LocalSession()
    with pytest.raises(ValueError, match="outside the session"):
        remote.upload(b"x", target="../escaped.bin")
    with pytest.raises(ValueError, match="target must be given"):
        remote.upload(b"x")
    (tmp_path / "junk.so").write_bytes(b"\x7fELF" + bytes(60))
    remote.upload(str(tmp_path / "junk.so"))
    with pytest.raises(ValueError, match="does not load shared libraries"):
        remote.load_module("junk.so")  # an uploaded file is data: never run
    with pytest.raises(NotImplementedError, match="rpc.connect"):
        rpc.connect("10.0.0.1", 9090)


def test_convert_keeps_python_values():
    assert tvm.runtime.convert(1024) == 1024
    assert tvm.runtime.convert((1, [2.5, "x"])) == [1, [2.5, "x"]]
    assert tvm.runtime.convert({"a": (1, 2)}) == {"a": [1, 2]}
