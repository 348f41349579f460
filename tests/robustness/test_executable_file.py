"""A saved Executable of a compiled Relax model: every way its file can be wrong fails with a clear
``ValueError``, never a crash, and loading never runs code from the file."""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.runtime.vm import FORMAT_VERSION, HEADER_SIZE, MAGIC, load_executable, pack_executable

HEADER = HEADER_SIZE
RNG = np.random.default_rng(4)
W = RNG.standard_normal((16, 8)).astype("float32")
BIAS = RNG.standard_normal((8,)).astype("float32")
X = RNG.standard_normal((4, 16)).astype("float32")


def _model() -> relax.vm.Executable:
    """relu(x @ W + BIAS), compiled to LLVM kernels; W and BIAS are constants of the executable."""
    x = relax.Var("x", relax.TensorStructInfo((4, 16), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(relax.op.matmul(x, relax.const(W)))
            h = bb.emit(relax.op.add(h, relax.const(BIAS)))
            out = bb.emit_output(relax.op.nn.relu(h))
        bb.emit_func_output(out)
    return minitvm.compile(bb.get(), target="llvm")


@pytest.fixture(scope="module")
def blob(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("exe") / "model.exe"
    _model().save(str(path))
    return path.read_bytes()


def _run(exe) -> np.ndarray:
    vm = relax.VirtualMachine(exe, minitvm.cpu())
    return vm["main"](minitvm.nd.array(X)).numpy()


def _load(tmp_path: Path, data: bytes):
    path = tmp_path / "model.exe"
    path.write_bytes(data)
    return load_executable(str(path))


def _split(blob: bytes) -> tuple[dict, bytes]:
    _, meta_len, _, _ = struct.unpack_from("<IQQI", blob, len(MAGIC))
    return json.loads(blob[HEADER:HEADER + meta_len]), blob[HEADER + meta_len:]


def _join(meta: dict, data: bytes) -> bytes:
    """A file with a correct checksum and signature, so only the change under test is wrong."""
    return pack_executable(json.dumps(meta).encode(), data)


def _with_kernels(blob: bytes, payload: bytes) -> bytes:
    """The file with its kernel library (the last section) replaced by ``payload``."""
    meta, data = _split(blob)
    old = meta["kernels"]["nbytes"]
    meta["kernels"]["nbytes"] = len(payload)
    return _join(meta, data[:len(data) - old] + payload)


def test_the_file_round_trips(tmp_path, blob):
    np.testing.assert_allclose(_run(_load(tmp_path, blob)), np.maximum(X @ W + BIAS, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("version, who", [(0, "an older"), (FORMAT_VERSION + 1, "a newer")])
def test_another_format_version_is_refused_with_a_version_message(tmp_path, blob, version, who):
    old = bytearray(blob)
    struct.pack_into("<I", old, len(MAGIC), version)
    with pytest.raises(ValueError, match=rf"executable file was written by minitvm format {version}; this minitvm "
                                         rf"reads format {FORMAT_VERSION} \({who} minitvm saved it: compile the "
                                         r"model again with this one\)"):
        _load(tmp_path, bytes(old))


def test_kernels_from_an_older_minitvm_are_refused(tmp_path, blob):
    meta, data = _split(blob)
    meta["kernels"]["metadata"]["version"] = 0
    exe = _load(tmp_path, _join(meta, data))
    with pytest.raises(ValueError, match=r"saved without signatures or by another minitvm version \(kernel "
                                         r"metadata version 0, this minitvm reads 3\); build the model again"):
        relax.VirtualMachine(exe, minitvm.cpu())


def _cut_points(blob: bytes) -> list[int]:
    """Every boundary of the format, and points spread evenly between."""
    meta, _ = _split(blob)
    meta_end = HEADER + struct.unpack_from("<IQQI", blob, len(MAGIC))[1]
    points = {1, len(MAGIC) - 1, len(MAGIC), len(MAGIC) + 2, HEADER - 1, HEADER, meta_end - 1, meta_end,
              len(blob) - meta["kernels"]["nbytes"], len(blob) - 1}
    offset = meta_end
    for c in meta["constants"]:
        offset += c.get("nbytes", 0)
        points |= {offset - 1, offset}
    points |= set(range(1, len(blob), max(1, len(blob) // 50)))
    return sorted(p for p in points if 0 < p < len(blob))


def test_truncated_at_any_offset_says_truncated(tmp_path, blob):
    cuts = _cut_points(blob)
    assert len(cuts) > 50
    for cut in cuts:
        with pytest.raises(ValueError, match=r": truncated: ") as err:
            _load(tmp_path, blob[:cut])
        assert str(tmp_path / "model.exe") in str(err.value), cut
    with pytest.raises(ValueError, match="is not a minitvm executable: the file is empty"):
        _load(tmp_path, b"")


def test_a_flipped_bit_anywhere_is_detected(tmp_path, blob):
    positions = sorted(set(range(HEADER)) | set(range(HEADER, len(blob), max(1, len(blob) // 150))))
    kinds = ("is not a minitvm executable", "written by minitvm format", "truncated:", "corrupted:")
    for pos in positions:
        for bit in (0x01, 0x80):
            bad = bytearray(blob)
            bad[pos] ^= bit
            with pytest.raises(ValueError) as err:
                _load(tmp_path, bytes(bad))
            assert any(k in str(err.value) for k in kinds), (pos, bit, str(err.value))


class _Exploit:
    """Unpickling this would create the marker file: proof that code from the file ran."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_files_that_are_not_executables(tmp_path):
    marker = tmp_path / "code-from-the-file-ran"
    cases = {b"hello": "it does not start with 'MINITVM-EXEC'",
             pickle.dumps(_Exploit(marker)): "it does not start with 'MINITVM-EXEC'",
             b"\x7fELF\x02\x01\x01" + bytes(64): "it does not start with 'MINITVM-EXEC'",
             b"\x93NUMPY\x01\x00" + bytes(100): "it does not start with 'MINITVM-EXEC'"}
    for data, message in cases.items():
        with pytest.raises(ValueError, match=rf"is not a minitvm executable: {message}"):
            _load(tmp_path, data)
    assert not marker.exists()


def test_a_pickle_inside_a_valid_container_is_never_unpickled(tmp_path, blob):
    marker = tmp_path / "code-from-the-file-ran"
    meta, data = _split(_with_kernels(blob, pickle.dumps(_Exploit(marker))))
    meta["kernels"]["encoding"] = "binary"
    exe = _load(tmp_path, _join(meta, data))
    with pytest.raises(ValueError, match="the kernel library should be LLVM IR text, found bytes"):
        relax.VirtualMachine(exe, minitvm.cpu())
    assert not marker.exists()


def test_kernels_that_call_outside_functions_are_refused_before_compiling(tmp_path, blob):
    meta, _ = _split(blob)
    ir = blob[len(blob) - meta["kernels"]["nbytes"]:].decode()
    exe = _load(tmp_path, _with_kernels(blob, (ir + "\ndeclare i32 @system(ptr)\n").encode()))
    with pytest.raises(ValueError, match="calls the external function 'system', which minitvm's code generator "
                                         "never emits; refusing to compile it"):
        relax.VirtualMachine(exe, minitvm.cpu())
    exe = _load(tmp_path, _with_kernels(blob, (ir + '\nmodule asm "syscall"\n').encode()))
    with pytest.raises(ValueError, match="contains inline assembly, which minitvm's code generator never emits"):
        relax.VirtualMachine(exe, minitvm.cpu())
    exe = _load(tmp_path, _with_kernels(blob, b"this is not LLVM IR"))
    with pytest.raises(ValueError, match=r"the saved kernel library is not valid LLVM IR \(LLVM IR parsing error"):
        relax.VirtualMachine(exe, minitvm.cpu())
