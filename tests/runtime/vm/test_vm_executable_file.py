"""Saving and loading executables: round trip in a fresh process, and every way a file can be bad."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from vm_programs import OUT, ScaleLibrary, build_mlp, mlp_inputs, mlp_reference

import minitvm
from minitvm.runtime.vm import (
    FORMAT_VERSION,
    HEADER_SIZE,
    MAGIC,
    ExecBuilder,
    Executable,
    ShapeTuple,
    VirtualMachine,
    load_executable,
    pack_executable,
)

HERE = Path(__file__).parent
HEADER = HEADER_SIZE


@pytest.fixture
def weights():
    _, w1, w2 = mlp_inputs(1, seed=11)
    return w1, w2


@pytest.fixture
def saved(tmp_path, weights):
    path = tmp_path / "mlp.exe"
    build_mlp(weights, scale=1.5).save(str(path))
    return path


def _parts(path: Path) -> tuple[dict, bytes]:
    blob = path.read_bytes()
    _, meta_len, data_len, _ = struct.unpack_from("<IQQI", blob, len(MAGIC))
    meta = blob[HEADER:HEADER + meta_len]
    return json.loads(meta), blob[HEADER + meta_len:]


def _write(path: Path, meta: dict | bytes, data: bytes) -> None:
    """Write a file with a correct checksum and signature, so that only the change under test is wrong."""
    meta_bytes = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
    path.write_bytes(pack_executable(meta_bytes, data))


def test_round_trip_in_a_fresh_process(saved, tmp_path, weights):
    x = mlp_inputs(6, seed=12)[0]
    np.save(tmp_path / "x.npy", x)
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        sys.path.insert(0, {str(HERE)!r})
        import vm_programs  # registers the Python kernels and the library's loader, as an application would
        import minitvm
        from minitvm.runtime.vm import VirtualMachine, load_executable
        exe = load_executable({str(saved)!r})
        vm = VirtualMachine(exe, minitvm.cpu())
        x = np.load({str(tmp_path / "x.npy")!r})
        np.save({str(tmp_path / "y.npy")!r}, vm["forward"](x).numpy())
        np.save({str(tmp_path / "z.npy")!r}, vm["scaled"](x).numpy())
        print(exe.stats())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "kernel library: test_scale, 1 functions" in done.stdout
    expect = mlp_reference(x, *weights)
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expect, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.load(tmp_path / "z.npy"), 1.5 * expect, rtol=1e-5, atol=1e-5)


def test_loaded_executable_is_the_same(saved, weights):
    original = build_mlp(weights, scale=1.5)
    exe = load_executable(str(saved))
    assert exe.func_names == original.func_names
    assert exe.vm_functions == original.vm_functions
    for a, b in zip(exe.constants, original.constants):
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b)
        else:
            assert type(a) is type(b) and a == b
    assert exe.kernel_format == "test_scale_src" and exe.kernel_payload == "scale=1.5"
    assert "saved as test_scale_src (9 bytes), not loaded yet" in exe.stats()
    assert "f[9] = test.kernels.scale (kernel)" in exe.as_text()
    assert exe.as_text() == original.as_text()
    assert isinstance(exe.lib, ScaleLibrary) and exe.lib.k == 1.5
    x = mlp_inputs(2)[0]
    np.testing.assert_allclose(VirtualMachine(exe)["scaled"](x).numpy(), 1.5 * mlp_reference(x, *weights),
                               rtol=1e-5, atol=1e-5)


def test_saving_a_loaded_executable_keeps_its_kernels(saved, tmp_path):
    again = tmp_path / "again.exe"
    load_executable(str(saved)).save(str(again))  # the library was never materialized
    assert again.read_bytes() == saved.read_bytes()


def test_every_kind_of_constant_round_trips(tmp_path):
    values = [np.arange(6, dtype="int64").reshape(2, 3), np.array(True), np.zeros((0, 4), "float16"),
              ShapeTuple((3, 4)), (1, "two", (3.5, None)), "float32", 7, -2**70, float("inf"), 0.1, False, None]
    eb = ExecBuilder()
    with eb.function("consts", []):
        eb.emit_ret(eb.emit_call("vm.builtin.make_tuple", values))
    path = tmp_path / "c.exe"
    eb.get().save(str(path))
    out = VirtualMachine(load_executable(str(path)))["consts"]()
    assert out[0].numpy().tolist() == [[0, 1, 2], [3, 4, 5]] and out[0].dtype == "int64"
    assert out[1].numpy() == np.array(True) and out[2].shape == (0, 4) and out[2].dtype == "float16"
    assert isinstance(out[3], ShapeTuple) and out[3] == (3, 4)
    assert out[4] == (1, "two", (3.5, None)) and out[5:] == ("float32", 7, -2**70, float("inf"), 0.1, False, None)
    assert type(out[10]) is bool


def test_constants_are_read_only_for_kernels(tmp_path):
    minitvm.register_func("test.vm.fill", lambda x: np.asarray(x).fill(1), override=True)
    eb = ExecBuilder()
    with eb.function("main", []):
        eb.emit_call("test.vm.fill", [np.zeros(3, "float32")], dst=None)
        eb.emit_ret(eb.emit_call("vm.builtin.null_value"))
    with pytest.raises(ValueError, match="read-only"):
        VirtualMachine(eb.get())["main"]()


def test_not_an_executable(tmp_path):
    path = tmp_path / "x.exe"
    path.write_bytes(b"\x7fELF" + bytes(100))
    with pytest.raises(ValueError, match="is not a minitvm executable: it does not start with 'MINITVM-EXEC'"):
        load_executable(str(path))


def test_wrong_version(saved):
    blob = bytearray(saved.read_bytes())
    struct.pack_into("<I", blob, len(MAGIC), FORMAT_VERSION + 1)
    saved.write_bytes(bytes(blob))
    with pytest.raises(ValueError, match=f"executable file was written by minitvm format {FORMAT_VERSION + 1}; "
                                         f"this minitvm reads format {FORMAT_VERSION}"):
        load_executable(str(saved))


def test_truncated_in_a_constant(saved):
    meta, data = _parts(saved)
    assert meta["constants"][0]["nbytes"] == 784 * 128 * 4
    blob = saved.read_bytes()
    meta_len = len(blob) - HEADER - len(data)
    saved.write_bytes(blob[:HEADER + meta_len + 100])
    with pytest.raises(ValueError, match="truncated: expected 401408 bytes of constant 0, found 100"):
        load_executable(str(saved))


@pytest.mark.parametrize("keep, message", [(14, "truncated: the header ends after 14 bytes"),
                                           (HEADER + 10, r"truncated: expected \d+ bytes of metadata, found 10")])
def test_truncated_header_or_metadata(saved, keep, message):
    saved.write_bytes(saved.read_bytes()[:keep])
    with pytest.raises(ValueError, match=message):
        load_executable(str(saved))


def test_truncated_in_the_kernel_payload(saved):
    saved.write_bytes(saved.read_bytes()[:-4])
    with pytest.raises(ValueError, match="truncated: expected 9 bytes of the kernel library, found 5"):
        load_executable(str(saved))


def test_flipped_byte_fails_the_checksum(saved):
    blob = bytearray(saved.read_bytes())
    blob[-1000] ^= 0x40
    saved.write_bytes(bytes(blob))
    with pytest.raises(ValueError, match="corrupted: the checksum does not match the contents"):
        load_executable(str(saved))


def test_extra_bytes(saved):
    saved.write_bytes(saved.read_bytes() + b"junk")
    with pytest.raises(ValueError, match="corrupted: 4 unexpected bytes after the last section"):
        load_executable(str(saved))


def test_metadata_is_validated_even_with_a_good_checksum(saved):
    meta, data = _parts(saved)

    def expect(change, message):
        m = json.loads(json.dumps(meta))
        change(m)
        _write(saved, m, data)
        with pytest.raises(ValueError, match=message):
            load_executable(str(saved))

    expect(lambda m: m["constants"][0].update(dtype="object"), "constant 0: dtype 'object' is not a numeric type")
    expect(lambda m: m["constants"][0].update(nbytes=8), r"constant 0 \(float32, shape \(784, 128\)\) claims 8 bytes")
    expect(lambda m: m["constants"][2].update(type="pickle"), "constant 2 has unknown type 'pickle'")
    expect(lambda m: m["functions"][0]["code"][-1].__setitem__(1, 99),
           r"function 'forward', instruction 10: register 99 is out of range")
    expect(lambda m: m["functions"][0]["code"][0].__setitem__(2, 50), "function index 50 is out of range")
    expect(lambda m: m.pop("constants"), r"corrupted metadata \(KeyError")
    _write(saved, b"{not json", data)
    with pytest.raises(ValueError, match="corrupted: the metadata is not valid JSON"):
        load_executable(str(saved))


def test_missing_loader_is_reported_when_kernels_are_needed(saved):
    meta, data = _parts(saved)
    meta["kernels"]["format"] = "test_no_such_format"
    _write(saved, meta, data)
    exe = load_executable(str(saved))  # bytecode and constants load without it
    assert "@scaled" in exe.as_text()
    with pytest.raises(ValueError, match="saved as 'test_no_such_format', and no loader "
                                         "'runtime.module.loadfrom_test_no_such_format' is registered"):
        VirtualMachine(exe)


def test_library_without_exporter_cannot_be_saved(tmp_path):
    from minitvm.runtime import Module

    eb = ExecBuilder(lib=Module({"k": lambda x: x}, type_key="test_plain"))
    with eb.function("main", ["x"]):
        eb.emit_ret(eb.emit_call("k", [eb.r(0)]))
    with pytest.raises(ValueError, match="modules of type 'test_plain' have no exporter "
                                         r"\(register 'runtime.module.export_test_plain'\)"):
        eb.get().save(str(tmp_path / "k.exe"))


def test_load_via_runtime_namespace(saved):
    exe = Executable.load(str(saved))
    assert VirtualMachine(exe)["forward"](mlp_inputs(1)[0]).shape == (1, OUT)


def test_load_module_reads_what_export_library_wrote(tmp_path, weights):
    """TVM's spelling of the round trip: ex.export_library(path), runtime.load_module(path)."""
    path = tmp_path / "mlp.so"
    build_mlp(weights, scale=1.5).export_library(str(path))
    loaded = minitvm.runtime.load_module(str(path))
    x = mlp_inputs(3, seed=13)[0]
    np.testing.assert_allclose(VirtualMachine(loaded, minitvm.cpu())["forward"](x).numpy(),
                               mlp_reference(x, *weights), rtol=1e-5, atol=1e-5)
    other = tmp_path / "lib.so"
    other.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(64))
    with pytest.raises(ValueError, match="is not a minitvm executable .*does not load shared libraries"):
        minitvm.runtime.load_module(str(other))
    (tmp_path / "empty.so").write_bytes(b"")
    with pytest.raises(ValueError, match="the file is empty"):
        minitvm.runtime.load_module(str(tmp_path / "empty.so"))


def test_export_library_keeps_its_workspace_when_asked(tmp_path):
    # TVM's export tutorial: export_library(path, workspace_dir=...) leaves the intermediate files
    from minitvm.script import ir as I
    from minitvm.script import relax as R

    @I.ir_module
    class Model:
        @R.function
        def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 3), "float32")):
            with R.dataflow():
                y = R.nn.relu(R.matmul(x, w))
                R.output(y)
            return y

    work = tmp_path / "artifacts"
    ex = minitvm.compile(Model, target="llvm")
    ex.export_library(str(tmp_path / "model.so"), workspace_dir=str(work))
    assert {"lib0.o", "lib0.ll", "bytecode.txt"} <= set(p.name for p in work.iterdir())
    assert (work / "lib0.o").read_bytes()[:4] == b"\x7fELF"  # object code for this machine
    assert "define" in (work / "lib0.ll").read_text() and "main" in (work / "bytecode.txt").read_text()
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((4, 8)).astype("float32"), rng.standard_normal((8, 3)).astype("float32")
    loaded = minitvm.runtime.load_module(str(tmp_path / "model.so"))
    np.testing.assert_allclose(VirtualMachine(loaded, minitvm.cpu())["main"](x, w).numpy(),
                               np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)
    with pytest.raises(NotImplementedError, match="fcompile"):
        ex.export_library(str(tmp_path / "again.so"), fcompile=print)


def test_stats_lists_constants_and_globals(weights):
    # TVM's export tutorial prints loaded["stats"]() after loading
    ex = build_mlp(weights, scale=2.0)
    assert ex["stats"]() == ex.stats() and f"constants: {len(ex.constants)}" in ex.stats()
    assert ex["as_text"]() == ex.as_text()
    with pytest.raises(AttributeError, match="no function 'forward'.*VirtualMachine"):
        ex["forward"]
