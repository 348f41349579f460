"""relax.build / minitvm.compile: Relax functions to bytecode, PrimFuncs to kernels, run on the VM."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minitvm
from minitvm import relax, tir
from minitvm.transform import PassContext

from .mlp_models import mlp_call_tir, mlp_dps_packed, mlp_emit_te, mlp_inputs, mlp_reference


def _run(ex, batch=1, seed=0):
    x, params = mlp_inputs(batch, seed)
    vm = relax.VirtualMachine(ex, minitvm.cpu())
    out = vm["main"](minitvm.nd.array(x), *[minitvm.nd.array(p) for p in params])
    return out.numpy(), mlp_reference(x, *params)


def test_mlc_end_to_end_model_with_call_tir_matches_numpy():
    ex = minitvm.compile(mlp_call_tir(), target="llvm")
    got, want = _run(ex)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    text = ex.as_text()
    # the default pipeline fuses relu0 into linear0 (FuseOps + FuseTIR) and schedules both kernels
    for kernel in ("fused_linear0_relu0", "linear1"):
        assert f"= {kernel} (kernel)" in text
    assert "ret" in text
    stats = ex.stats()
    # linear0 and relu0 are public PrimFuncs (they have a global_symbol): FuseTIR's closing
    # DeadCodeElimination keeps them, as TVM's does, so the library holds them as well
    assert "external functions: 4 (2 kernels, 2 packed)" in stats and "kernel library: llvm, 4 functions" in stats



def test_executable_mod_is_a_vm_executable_module_importing_the_kernels():
    """TVM's idiom: ``ex.mod.imported_modules[0].get_source()`` is the kernels' source."""
    ex = minitvm.compile(mlp_call_tir(), target="llvm")
    assert ex.mod.type_key == "relax.VMExecutable"
    assert ex.mod.get_source() == ex.as_text()
    [lib] = ex.mod.imported_modules
    assert lib is ex.lib and "define" in lib.get_source() and "linear1" in lib.get_source()
    with pytest.raises(ValueError, match="imported_modules"):
        ex.mod.get_source("asm")

def test_relax_build_is_the_same_as_compile():
    ex = relax.build(mlp_emit_te(), "llvm")
    got, want = _run(ex, seed=3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.fixture
def env_funcs():
    def linear(x, w, b, out):
        np.add(np.asarray(x) @ np.asarray(w).T, np.asarray(b), out=np.asarray(out))

    def relu(x, out):
        np.maximum(np.asarray(x), 0, out=np.asarray(out))

    minitvm.register_func("env.linear", linear, override=True)
    minitvm.register_func("env.relu", relu, override=True)
    yield
    from minitvm.runtime.registry import remove_global_func
    remove_global_func("env.linear")
    remove_global_func("env.relu")


def test_call_dps_packed_to_numpy_functions(env_funcs):
    ex = minitvm.compile(mlp_dps_packed(), target="llvm")
    assert "env.linear (packed)" in ex.as_text()
    got, want = _run(ex, seed=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_call_dps_packed_to_torch_functions():
    import torch

    def linear(x, w, b, out):  # NDArrays in, shared with torch through DLPack, written in place
        torch.addmm(torch.from_dlpack(b), torch.from_dlpack(x), torch.from_dlpack(w).T, out=torch.from_dlpack(out))

    def relu(x, out):
        torch.maximum(torch.from_dlpack(x), torch.tensor(0.0), out=torch.from_dlpack(out))

    minitvm.register_func("env.torch_linear", linear, override=True)
    minitvm.register_func("env.torch_relu", relu, override=True)
    ex = minitvm.compile(mlp_dps_packed("env.torch_linear", "env.torch_relu"), target="llvm")
    got, want = _run(ex, seed=2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("batch", [1, 7])
def test_symbolic_batch_runs_for_several_sizes(batch):
    n = tir.Var("n", "int64")
    ex = minitvm.compile(mlp_emit_te(n), target="llvm")
    main = ex.vm_functions["main"]
    assert main.param_info[0].shape == ("n", 784)
    text = ex.as_text()
    assert "vm.builtin.match_shape" in text and "vm.builtin.make_shape" in text
    got, want = _run(ex, batch=batch, seed=batch)
    assert got.shape == (batch, 10)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_one_executable_serves_every_batch_size():
    n = tir.Var("n", "int64")
    vm = relax.VirtualMachine(minitvm.compile(mlp_emit_te(n)), minitvm.cpu())
    for batch in (3, 1, 7):
        x, params = mlp_inputs(batch, seed=10 + batch)
        np.testing.assert_allclose(vm["main"](x, *params).numpy(), mlp_reference(x, *params), rtol=1e-5, atol=1e-5)


def _count(ex, name):
    return sum(line.strip().startswith(f"call  {name} ") for line in ex.as_text().splitlines())


def _unfused():
    """Legalize and lower without fusion: one kernel (and one tensor) per operator, to count allocations."""
    return minitvm.transform.Sequential([relax.transform.LegalizeOps(), *relax.pipeline.vm_lowering_passes()])


def test_static_plan_block_memory_reuses_storage_and_keeps_results():
    mod = mlp_emit_te()
    planned = minitvm.compile(mod, target="llvm", relax_pipeline=_unfused())
    with PassContext(disabled_pass=["StaticPlanBlockMemory"]):
        unplanned = minitvm.compile(mod, target="llvm", relax_pipeline=_unfused())
    # three tensors: lv0 and lv1 (intermediates) need two storages; the output escapes
    assert _count(unplanned, "vm.builtin.alloc_storage") == 3
    assert _count(planned, "vm.builtin.alloc_storage") == 3  # 2 planned (hoisted) + the output's own
    got_planned, want = _run(planned, seed=4)
    got_unplanned, _ = _run(unplanned, seed=4)
    np.testing.assert_array_equal(got_planned, got_unplanned)
    np.testing.assert_allclose(got_planned, want, rtol=1e-5, atol=1e-5)


def test_static_plan_block_memory_shares_one_storage_in_a_longer_chain():
    from .mlp_models import te_relu

    x = relax.Var("x", relax.TensorStructInfo((4, 64), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            lv = x
            for _ in range(6):
                lv = bb.emit_te(te_relu, lv)
            gv = bb.emit_output(lv)
        bb.emit_func_output(gv)
    mod = bb.get()
    planned = minitvm.compile(mod, relax_pipeline=_unfused())
    with PassContext(disabled_pass=["StaticPlanBlockMemory"]):
        unplanned = minitvm.compile(mod, relax_pipeline=_unfused())
    assert _count(unplanned, "vm.builtin.alloc_storage") == 6
    # 5 intermediates ping-pong between 2 storages; the result has its own
    assert _count(planned, "vm.builtin.alloc_storage") == 3
    assert _count(planned, "vm.builtin.alloc_tensor") == 6
    data = np.random.default_rng(5).standard_normal((4, 64), dtype=np.float32)
    a = relax.VirtualMachine(planned)["main"](data).numpy()
    b = relax.VirtualMachine(unplanned)["main"](data).numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, np.maximum(data, 0))


def test_results_of_two_calls_do_not_share_memory():
    vm = relax.VirtualMachine(minitvm.compile(mlp_emit_te()))
    x1, params = mlp_inputs(1, seed=6)
    x2, _ = mlp_inputs(1, seed=7)
    out1 = vm["main"](x1, *params)
    first = out1.numpy().copy()
    vm["main"](x2, *params)
    np.testing.assert_array_equal(out1.numpy(), first)


def test_save_and_load_in_a_fresh_process(tmp_path):
    n = tir.Var("n", "int64")
    ex = minitvm.compile(mlp_emit_te(n), target="llvm")
    path = tmp_path / "mlp.exe"
    ex.save(str(path))
    x, params = mlp_inputs(7, seed=8)
    np.savez(tmp_path / "data.npz", x, *params)
    script = textwrap.dedent(f"""
        import sys
        import numpy as np, minitvm
        from minitvm.runtime import VirtualMachine, load_executable  # the runtime alone
        ex = load_executable({str(path)!r})
        assert ex.kernel_format == "llvm_ir"
        vm = VirtualMachine(ex, minitvm.cpu())
        assert "minitvm.relax" not in sys.modules and "minitvm.script" not in sys.modules
        data = np.load({str(tmp_path / "data.npz")!r})
        arrays = [data[f"arr_{{i}}"] for i in range(5)]
        np.save({str(tmp_path / "out.npy")!r}, vm["main"](*arrays).numpy())
        try:
            vm["main"](arrays[0][:, :5], *arrays[1:])
        except ValueError as err:
            print(err)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # the reloaded kernels check their arguments as the originals did
    assert "argument 'x' expects shape (n, 784)" in done.stdout
    got = np.load(tmp_path / "out.npy")
    np.testing.assert_array_equal(got, _run(ex, batch=7, seed=8)[0])
    np.testing.assert_allclose(got, mlp_reference(x, *params), rtol=1e-5, atol=1e-5)


def test_a_loaded_executable_prints_and_runs_like_the_original(tmp_path):
    ex = minitvm.compile(mlp_call_tir())
    ex.save(str(tmp_path / "mlp.exe"))
    loaded = minitvm.runtime.load_executable(str(tmp_path / "mlp.exe"))
    assert loaded.as_text() == ex.as_text()  # kernels known by name before they are JIT-compiled again
    assert "saved as llvm_ir" in loaded.stats() and "not loaded yet" in loaded.stats()
    x, params = mlp_inputs(1, seed=9)
    got = relax.VirtualMachine(loaded)["main"](x, *params).numpy()
    np.testing.assert_array_equal(got, relax.VirtualMachine(ex)["main"](x, *params).numpy())


def test_argument_errors_at_vm_entry_name_the_parameter():
    vm = relax.VirtualMachine(minitvm.compile(mlp_call_tir()))
    x, params = mlp_inputs(1)
    with pytest.raises(ValueError, match=r"main: argument 'x' expects shape \(1, 784\), got \(2, 784\)"):
        vm["main"](np.zeros((2, 784), "float32"), *params)
    with pytest.raises(TypeError, match=r"main: argument 'b0' expects dtype float32, got float64"):
        vm["main"](x, params[0], params[1].astype("float64"), *params[2:])
    with pytest.raises(ValueError, match=r"main: expects 5 arguments \(x, w0, b0, w1, b1\), got 4"):
        vm["main"](x, *params[:3])


def test_symbolic_dimension_mismatch_names_both_parameters():
    n = tir.Var("n", "int64")
    a = relax.Var("a", relax.TensorStructInfo((n, 4), "float32"))
    b = relax.Var("b", relax.TensorStructInfo((n, 4), "float32"))
    from .mlp_models import te_relu
    bb = relax.BlockBuilder()
    with bb.function("main", [a, b]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit_te(lambda x, y: te_relu(x), a, b))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(minitvm.compile(bb.get()))
    with pytest.raises(ValueError, match=r"main: argument 'b' expects shape \(n, 4\), got \(3, 4\): dimension 0 "
                                         r"is n = 3, but n = 2 from argument 'a'"):
        vm["main"](np.ones((2, 4), "float32"), np.ones((3, 4), "float32"))


def test_high_level_ops_need_legalize_ops():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(relax.op.add(x, x))
        bb.emit_func_output(gv)
    try:
        from minitvm.relax.transform.legalize_ops import LegalizeOps  # noqa: F401
    except ImportError:
        with pytest.raises(NotImplementedError, match=r"relax.add.*LegalizeOps"):
            minitvm.compile(bb.get())
    else:
        data = np.arange(6, dtype="float32").reshape(2, 3)
        np.testing.assert_array_equal(relax.VirtualMachine(minitvm.compile(bb.get()))["main"](data).numpy(), 2 * data)


def test_high_level_mlp_through_the_zero_pipeline_with_symbolic_batch():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo((n, 784), "float32"))
    w0 = relax.Var("w0", relax.TensorStructInfo((784, 128), "float32"))
    b0 = relax.Var("b0", relax.TensorStructInfo((128,), "float32"))
    w1 = relax.Var("w1", relax.TensorStructInfo((128, 10), "float32"))
    b1 = relax.Var("b1", relax.TensorStructInfo((10,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w0, b0, w1, b1]):
        with bb.dataflow():
            lv = bb.emit(relax.op.nn.relu(relax.op.add(relax.op.matmul(x, w0), b0)))
            gv = bb.emit_output(relax.op.add(relax.op.matmul(lv, w1), b1))
        bb.emit_func_output(gv)
    fused = relax.get_pipeline("zero")(bb.get())
    # the zero pipeline stops at call_tir into fused kernels; relax.build lowers to the VM
    assert "R.call_tir(cls.fused_matmul_add_relu" in fused.script() and "alloc_storage" not in fused.script()
    vm = relax.VirtualMachine(relax.build(fused, "llvm", relax_pipeline=None))
    rng = np.random.default_rng(12)
    params = [rng.standard_normal(s, dtype=np.float32) * 0.1 for s in [(784, 128), (128,), (128, 10), (10,)]]
    for batch in (1, 7):
        data = rng.standard_normal((batch, 784), dtype=np.float32)
        want = np.maximum(data @ params[0] + params[1], 0) @ params[2] + params[3]
        np.testing.assert_allclose(vm["main"](data, *params).numpy(), want, rtol=1e-5, atol=1e-5)


def test_a_scalar_constant_reaches_its_kernel_as_0_d():
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, relax.const(1.5, "float32")))
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(minitvm.compile(bb.get()), minitvm.cpu())
    x_np = np.random.default_rng(3).standard_normal(4).astype("float32")
    np.testing.assert_allclose(vm["main"](x_np).numpy(), x_np + 1.5, rtol=1e-6)
