"""TVM's cross-compilation tutorial, as written (``docs/how_to/tutorials/cross_compilation_and_rpc.py``,
the local demo): compile a TIR kernel, export it, upload it to ``rpc.LocalSession()``, load it
there, run it and time it."""

import os
import subprocess
import sys

import pytest

import minitvm as tvm
from minitvm import rpc

# the tutorial's local demo as a script: a fresh interpreter, as a learner runs it, in which nothing
# has imported Relax (one process checks both the tutorial's steps and that saving needs no Relax)
TUTORIAL = """
import sys
import numpy as np
import tvm
import tvm_ffi  # noqa: F401 - the tutorial imports it
from tvm import rpc, te
from tvm.contrib import utils

n = tvm.runtime.convert(1024)
A = te.placeholder((n,), name="A")
B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
mod = tvm.IRModule.from_expr(te.create_prim_func([A, B]).with_attr("global_symbol", "add_one"))
func = tvm.compile(mod, target="llvm")
assert "minitvm.relax" not in sys.modules and "minitvm.target.codegen.llvm_export" not in sys.modules
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
print("loaded and ran")
"""


def test_the_tutorials_local_demo_runs_as_a_script_without_relax():
    """Run as written with ``import tvm``; saving must write the kernels' signatures though no
    Relax is imported (the LLVM saving code registers the exporter, not Relax), or load_module
    refuses the file it just wrote."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = "from minitvm.eras import EraFinder\n" \
             "sys.meta_path.insert(0, EraFinder({'tvm': 'minitvm', 'tvm_ffi': 'minitvm_ffi'}))\n"
    proc = subprocess.run([sys.executable, "-c", "import sys\n" + script + TUTORIAL], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, PYTHONPATH=root))
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
