"""TVM's cross-compilation tutorial, as written (``docs/how_to/tutorials/cross_compilation_and_rpc.py``,
the local demo): compile a TIR kernel, export it, upload it to ``rpc.LocalSession()``, load it
there, run it and time it."""

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
