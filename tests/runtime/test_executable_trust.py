"""A saved executable runs machine code, so it loads only if this installation signed it, or with
``trust=True``.  Crafted files -- pointer arithmetic to libc, an unknown external call, a forged
checksum, another installation's key -- are refused at load, before any kernel is compiled, and
never create the marker file their code aims at (docs/threat_model.md)."""

from __future__ import annotations

import json
import os
import secrets
import stat
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.runtime import signing
from minitvm.runtime.vm import (
    FORMAT_VERSION,
    HEADER_SIZE,
    MAGIC,
    Executable,
    load_executable,
    load_module,
    pack_executable,
)
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.target.codegen import llvm_export

RNG = np.random.default_rng(35)
W = RNG.standard_normal((16, 8)).astype("float32")
BIAS = RNG.standard_normal((8,)).astype("float32")
NOT_SIGNED = r"not signed by this installation: .*load_module\(path, trust=True\)"


@I.ir_module
class Dense:
    @R.function
    def main(x: R.Tensor((4, 16), "float32"), w: R.Tensor((16, 8), "float32"), b: R.Tensor((8,), "float32")):
        with R.dataflow():
            y = R.nn.relu(R.add(R.matmul(x, w), b))
            R.output(y)
        return y


def _model() -> relax.vm.Executable:
    """relu(x @ W + BIAS) with LLVM kernels; W and BIAS are bound, so the file carries them."""
    bound = relax.transform.BindParams("main", {"w": W, "b": BIAS})(Dense)
    return minitvm.compile(bound, target="llvm")


@pytest.fixture(scope="module")
def blob(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("exe") / "model.exe"
    _model().export_library(str(path))
    return path.read_bytes()


def _split(blob: bytes) -> tuple[dict, bytes, str]:
    """(metadata, data before the kernels, kernel IR) of a file."""
    meta_len = struct.unpack_from("<IQQ", blob, len(MAGIC))[1]
    meta = json.loads(blob[HEADER_SIZE:HEADER_SIZE + meta_len])
    data = blob[HEADER_SIZE + meta_len:]
    n = meta["kernels"]["nbytes"]
    return meta, data[:len(data) - n], data[len(data) - n:].decode()


def _forge(blob: bytes, meta: dict, data: bytes, ir: str) -> bytes:
    """What an attacker without the key writes: new contents, the old MAC, the CRC recomputed."""
    payload = ir.encode()
    meta = json.loads(json.dumps(meta))
    meta["kernels"]["nbytes"] = len(payload)
    meta_bytes, data = json.dumps(meta).encode(), data + payload
    tag = blob[HEADER_SIZE - signing.MAC_SIZE:HEADER_SIZE]
    crc = zlib.crc32(data, zlib.crc32(meta_bytes, zlib.crc32(tag)))
    return MAGIC + struct.pack("<IQQI", FORMAT_VERSION, len(meta_bytes), len(data), crc) + tag + meta_bytes + data


def _command(marker: Path) -> str:
    """``@.cmd``: the shell command that would create ``marker``, as an LLVM string constant."""
    text = f"touch {marker}".encode() + b"\0"
    escaped = "".join("\\%02X" % c for c in text)
    return f'\n@.cmd = private constant [{len(text)} x i8] c"{escaped}"\n'


def _expected(x: np.ndarray) -> np.ndarray:
    return np.maximum(x @ W + BIAS, 0)


def _run(exe: Executable, x: np.ndarray) -> np.ndarray:
    return relax.VirtualMachine(exe, minitvm.cpu())["main"](x).numpy()


def _refused(path: Path, marker: Path, match: str = NOT_SIGNED) -> None:
    """Every loader refuses the file, and the marker its code would create does not appear."""
    for load in (load_module, load_executable, Executable.load):
        with pytest.raises(ValueError, match=match):
            load(str(path))
    assert not marker.exists()


def _x(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((4, 16)).astype("float32")


def test_a_file_this_installation_saved_loads_and_computes(tmp_path, blob):
    path = tmp_path / "model.so"
    path.write_bytes(blob)
    x = _x(1)
    np.testing.assert_allclose(_run(load_module(str(path)), x), _expected(x), rtol=1e-5, atol=1e-5)


def test_pointer_arithmetic_to_libc_is_refused_before_compiling(tmp_path, blob):
    """The attack of issue 35: ``ptrtoint @malloc`` + an offset into libc, called as a function.
    The IR passes the allow-list (it only names malloc); the MAC is what refuses it."""
    marker = tmp_path / "code-from-the-file-ran"
    meta, data, ir = _split(blob)
    evil = (ir + _command(marker) + "define void @__forged_entry() {\n"
            "  %p = ptrtoint ptr @malloc to i64\n"
            "  %q = add i64 %p, 201424\n"  # malloc -> system in some libc build
            "  %f = inttoptr i64 %q to ptr\n"
            "  %r = call i32 %f(ptr @.cmd)\n"
            "  ret void\n}\ndeclare ptr @malloc(i64)\n")
    llvm_export._parse_kernels(evil)  # parsed only, never compiled: the allow-list cannot see it
    path = tmp_path / "model.so"
    path.write_bytes(_forge(blob, meta, data, evil))
    _refused(path, marker)


def test_an_unknown_external_call_is_refused_with_or_without_trust(tmp_path, blob):
    marker = tmp_path / "code-from-the-file-ran"
    meta, data, ir = _split(blob)
    evil = (ir + _command(marker) + "declare i32 @system(ptr)\n"
            "define void @__forged_entry() {\n  %r = call i32 @system(ptr @.cmd)\n  ret void\n}\n")
    path = tmp_path / "model.so"
    path.write_bytes(_forge(blob, meta, data, evil))
    _refused(path, marker)
    exe = load_module(str(path), trust=True)  # trusted: the allow-list still refuses it, before compiling
    with pytest.raises(ValueError, match="calls the external function 'system', which minitvm's code generator "
                                         "never emits; refusing to compile it"):
        relax.VirtualMachine(exe, minitvm.cpu())
    assert not marker.exists()


def test_a_forged_checksum_is_refused_and_plain_damage_says_corrupted(tmp_path, blob):
    marker = tmp_path / "code-from-the-file-ran"
    meta, data, ir = _split(blob)
    forged = data[:-4] + np.float32(1e6).tobytes()  # a changed weight (the last float of BIAS)
    path = tmp_path / "model.so"
    path.write_bytes(_forge(blob, meta, forged, ir))
    _refused(path, marker)
    damaged = bytearray(blob)
    damaged[HEADER_SIZE + 40] ^= 0x10
    path.write_bytes(bytes(damaged))
    _refused(path, marker, match="corrupted: the checksum does not match the contents")


def test_another_installation_s_file_needs_trust(tmp_path, monkeypatch, blob):
    """Saved under another config directory (another user or machine): refused here; trust=True
    loads it, and it computes the right numbers."""
    monkeypatch.setenv("MINITVM_CONFIG_DIR", str(tmp_path / "elsewhere"))
    path = tmp_path / "theirs.so"
    _model().export_library(str(path))
    monkeypatch.undo()
    _refused(path, tmp_path / "no-marker")
    x = _x(2)
    np.testing.assert_allclose(_run(load_module(str(path), trust=True), x), _expected(x), rtol=1e-5, atol=1e-5)
    meta, data, ir = _split(blob)
    other_key = tmp_path / "other.so"
    other_key.write_bytes(pack_executable(json.dumps(meta).encode(), data + ir.encode(),
                                          key=secrets.token_bytes(signing.KEY_SIZE)))
    _refused(other_key, tmp_path / "no-marker")
    np.testing.assert_allclose(_run(Executable.load(str(other_key), trust=True), x), _expected(x),
                               rtol=1e-5, atol=1e-5)


def test_a_bad_param_dtype_is_refused_at_load_naming_function_and_parameter(tmp_path, blob):
    meta, data, ir = _split(blob)
    meta["functions"][0]["param_info"][0]["dtype"] = "float99"
    path = tmp_path / "model.so"
    path.write_bytes(pack_executable(json.dumps(meta).encode(), data + ir.encode()))  # signed here
    with pytest.raises(ValueError, match=r"function 'main', parameter 'x': unknown dtype 'float99'"):
        load_module(str(path))
    meta["functions"][0]["param_info"][0]["dtype"] = "f4"  # numpy knows it, the argument check would not
    path.write_bytes(pack_executable(json.dumps(meta).encode(), data + ir.encode()))
    with pytest.raises(ValueError, match=r"function 'main', parameter 'x': dtype 'f4' is not a dtype name"):
        load_module(str(path))


def test_a_bad_kernel_param_dtype_is_refused_when_the_library_loads(tmp_path, blob):
    meta, data, ir = _split(blob)
    name, sig = next(iter(meta["kernels"]["metadata"]["signatures"].items()))
    sig["params"][0]["dtype"] = "float99"
    path = tmp_path / "model.so"
    path.write_bytes(pack_executable(json.dumps(meta).encode(), data + ir.encode()))
    exe = load_module(str(path))
    pname = sig["params"][0]["name"]
    with pytest.raises(ValueError, match=rf"kernel '{name}', parameter '{pname}': unknown dtype 'float99'"):
        relax.VirtualMachine(exe, minitvm.cpu())


def test_the_key_is_private_and_made_once(tmp_path, monkeypatch):
    monkeypatch.setenv("MINITVM_CONFIG_DIR", str(tmp_path / "cfg"))
    key = signing.signing_key()
    path = tmp_path / "cfg" / "signing.key"
    assert signing.key_path() == path and len(key) == signing.KEY_SIZE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert signing.signing_key() == key and os.listdir(path.parent) == ["signing.key"]
    path.chmod(0o644)
    with pytest.raises(PermissionError, match=r"accessible to other users \(mode 644\); make it private"):
        signing.signing_key()


def test_the_config_directory_follows_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.delenv("MINITVM_CONFIG_DIR")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert signing.config_dir() == tmp_path / "xdg" / "minitvm"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert signing.config_dir() == tmp_path / "home" / ".config" / "minitvm"


def test_a_config_directory_that_cannot_be_made_says_what_to_set(tmp_path, monkeypatch):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("MINITVM_CONFIG_DIR", str(tmp_path / "a-file" / "minitvm"))
    with pytest.raises(OSError, match="cannot create minitvm's signing key in .*set MINITVM_CONFIG_DIR"):
        _model().export_library(str(tmp_path / "model.so"))
