"""Every row of the element-wise operator table (minitvm.tir.op_table) is reachable and right
from every layer: Relax (compiled for LLVM), TVMScript (printed and parsed back), the reference
interpreter, the emulated GPU and the torch importer -- all against numpy on seeded random data
in the op's domain.  The ops are batched (one Relax module, one GPU build, one torch export) so
the whole file stays cheap; a new row is checked without touching this file."""

import numpy as np
import pytest

import minitvm
from minitvm import relax, te, tir, topi
from minitvm.script import from_source
from minitvm.script import relax as R
from minitvm.script import tir as T
from minitvm.target.interpreter import run_prim_func
from minitvm.tir import semantics
from minitvm.tir.op_table import BY_NAME, ELEMENTWISE, UNARY

N = 64  # elements per input: two blocks of 32 GPU threads
IDS = [row.name for row in ELEMENTWISE]


def _inputs(row, seed: int) -> list[np.ndarray]:
    """Random operands in the row's domain (checks get inf/-inf/NaN among them)."""
    rng = np.random.default_rng(seed)
    if row.dtypes == "bool":
        return [rng.random(N) < 0.5 for _ in range(row.arity)]
    if row.dtypes == "int_or_bool":
        if row.name.endswith("_shift"):
            return [rng.integers(-1000, 1000, N).astype("int32"), rng.integers(0, 31, N).astype("int32")]
        return [rng.integers(-1000, 1000, N).astype("int32") for _ in range(row.arity)]
    xs = [rng.uniform(*row.domain, N).astype("float32") for _ in range(row.arity)]
    if row.result == "bool" and row.arity == 1:
        xs[0][:3] = [np.inf, -np.inf, np.nan]
    return xs


INPUTS = {row.name: _inputs(row, seed) for seed, row in enumerate(ELEMENTWISE)}


def _check(row, got: np.ndarray, *inputs: np.ndarray) -> None:
    want = row.reference(*inputs)
    assert got.dtype == want.dtype, f"{row.name}: dtype {got.dtype}, numpy gives {want.dtype}"
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, err_msg=row.name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=row.name)


def test_the_table_has_every_relax_elementwise_op_once():
    assert len(BY_NAME) == len(ELEMENTWISE)
    assert {"exp", "sigmoid", "isnan", "bitwise_not", "add", "greater", "right_shift"} <= set(BY_NAME)
    assert {"log2", "atan2"} <= set(BY_NAME)  # added as one row each
    for row in ELEMENTWISE:
        assert row.arity == (1 if row in UNARY else 2) and row.reference is not None, row.name
        if row.intrinsic is not None:
            assert f"tir.{row.intrinsic}" in semantics.BY_OP, row.name  # its meaning is a semantics row


@pytest.mark.parametrize("name", IDS)
def test_every_layer_offers_the_op_under_tvms_name(name):
    row = BY_NAME[name]
    build = getattr(relax.op, name)
    assert getattr(R, name) is build and getattr(topi, name).__name__ == name
    assert build.__name__ == name and "Parameters" in build.__doc__ and row.doc in build.__doc__
    params = ["x"] if row.arity == 1 else ["x1", "x2"]
    assert list(build.__code__.co_varnames[:row.arity]) == params  # help() shows a real signature
    if row.intrinsic is not None:  # tir.<name>, T.<name> and te.<name> build the intrinsic call
        for space in (tir, T, te):
            assert getattr(space, row.intrinsic).__name__ == row.intrinsic


def _relax_module() -> tuple[minitvm.IRModule, list]:
    """One function applying every op to its own inputs, returning a tuple of the results."""
    params, calls = [], []
    for row in ELEMENTWISE:
        args = [relax.Var(f"{row.name}{k}", relax.TensorStructInfo((N,), str(a.dtype)))
                for k, a in enumerate(INPUTS[row.name])]
        params += args
        calls.append((row, args))
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            outs = [bb.emit(getattr(relax.op, row.name)(*args)) for row, args in calls]
            out = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(out)
    return bb.get(), [a for row in ELEMENTWISE for a in INPUTS[row.name]]


def test_relax_ops_compiled_for_llvm_match_numpy():
    mod, arrays = _relax_module()
    # the module prints as TVMScript that parses back to the same module
    minitvm.ir.assert_structural_equal(from_source(mod.script()), mod)
    vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())
    results = vm["main"](*(minitvm.nd.array(a) for a in arrays))
    assert len(results) == len(ELEMENTWISE)
    for row, got in zip(ELEMENTWISE, results):
        _check(row, got.numpy(), *INPUTS[row.name])


def _prim_func(row) -> tir.PrimFunc:
    """``topi.<name>`` on 1-D placeholders, as a PrimFunc (TE -> TIR)."""
    ins = [te.placeholder((N,), str(a.dtype), name=f"x{k}") for k, a in enumerate(INPUTS[row.name])]
    out = getattr(topi, row.name)(*ins)
    return te.create_prim_func([*ins, out])


FUNCS = {row.name: _prim_func(row) for row in ELEMENTWISE}


@pytest.mark.parametrize("name", IDS)
def test_tvmscript_prints_and_parses_the_kernel_back(name):
    row, func = BY_NAME[name], FUNCS[name]
    text = func.script()
    if row.intrinsic is not None:
        assert f"T.{row.intrinsic}(" in text
    minitvm.ir.assert_structural_equal(from_source(text), func)


def _out_array(row) -> np.ndarray:
    want = row.reference(*INPUTS[row.name])
    return np.zeros(N, want.dtype)


@pytest.mark.parametrize("name", IDS)
def test_the_reference_interpreter_matches_numpy(name):
    row = BY_NAME[name]
    out = _out_array(row)
    run_prim_func(FUNCS[name], [*INPUTS[name], out])
    _check(row, out, *INPUTS[name])


def _on_gpu_threads(name: str) -> tir.PrimFunc:
    sch = tir.Schedule(FUNCS[name])
    block = sch.get_block("compute" if BY_NAME[name].arity == 1 else f"T_{name}")
    i, = sch.get_loops(block)
    bx, tx = sch.split(i, [None, 32])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch.mod["main"].with_attr("global_symbol", name)


def test_the_emulated_gpu_matches_numpy():
    lib = minitvm.build(minitvm.IRModule({name: _on_gpu_threads(name) for name in IDS}), target="cuda-emulated")
    source = lib.imported_modules[0].get_source()
    for row in ELEMENTWISE:
        out = minitvm.nd.array(_out_array(row))
        lib[row.name](*(minitvm.nd.array(a) for a in INPUTS[row.name]), out)
        _check(row, out.numpy(), *INPUTS[row.name])
        if row.intrinsic not in (None, "sigmoid"):  # the CUDA source calls the math function
            assert f"{row.intrinsic if row.intrinsic != 'round' else 'rint'}f(" in source, row.name


def test_the_torch_importer_converts_every_aten_name():
    import torch  # heavy: imported by the one test that needs it

    from minitvm.relax.frontend.torch import from_exported_program
    calls = [(row, aten) for row in ELEMENTWISE for aten in row.aten]

    class Every(torch.nn.Module):
        def forward(self, *xs):
            outs, k = [], 0
            for row, aten in calls:
                _, name, overload = aten.split(".")
                outs.append(getattr(getattr(torch.ops.aten, name), overload)(*xs[k:k + row.arity]))
                k += row.arity
            return tuple(outs)

    arrays = [a for row, _ in calls for a in INPUTS[row.name]]
    args = tuple(torch.from_numpy(a.copy()) for a in arrays)
    with torch.no_grad():
        eager = Every()(*args)
    mod = from_exported_program(torch.export.export(Every(), args))
    vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())
    got = vm["main"](*(minitvm.nd.array(a) for a in arrays))
    for (_, aten), g, want in zip(calls, got, eager):
        want = want.numpy()
        assert g.numpy().dtype == want.dtype, aten
        np.testing.assert_allclose(g.numpy(), want, rtol=2e-5, atol=2e-6, err_msg=aten)


def test_emulator_index_arithmetic_means_what_the_semantics_rows_say():
    rng = np.random.default_rng(7)
    a, b = rng.integers(-50, 50, 200), rng.integers(-9, 9, 200)
    b[b == 0] = 3
    for row in semantics.ROWS:
        meaning = semantics.int_array_meaning(row)
        if meaning is None or row.arity != 2 or row.kinds == semantics.BOOL_ONLY:
            continue
        got = meaning(a, b)
        want = [row.fold("int64", int(x), int(y)) for x, y in zip(a, b)]
        np.testing.assert_array_equal(got, np.array(want, dtype=got.dtype), err_msg=row.name)
        if row.name in ("div", "mod", "floordiv", "floormod"):  # a zero divisor: the row's error
            with pytest.raises(semantics.IntegerDivisionByZero, match=row.name):
                meaning(a, np.where(b == 3, 0, b))
            with pytest.raises(semantics.IntegerDivisionByZero, match=row.name):
                row.fold("int64", 5, 0)


def test_from_fx_reaches_table_ops_by_torch_name_and_refuses_extra_arguments():
    import torch  # heavy: imported by the tests that need it

    from minitvm.relax.frontend.torch import from_fx

    class Model(torch.nn.Module):
        def forward(self, x, y):
            return torch.atan2(x, y) + x.log2()

    class Rounded(torch.nn.Module):
        def forward(self, x):
            return x.round(decimals=2)  # round's row has no decimals: refused, never dropped

    x, y = INPUTS["log2"][0], INPUTS["atan2"][1]
    mod = from_fx(torch.fx.symbolic_trace(Model()), [((N,), "float32"), ((N,), "float32")])
    vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())
    got = vm["main"](minitvm.nd.array(x), minitvm.nd.array(y)).numpy()
    np.testing.assert_allclose(got, np.arctan2(x, y) + np.log2(x), rtol=2e-5, atol=2e-6)
    with pytest.raises(ValueError, match=r"round takes 1 tensor operand.*\['decimals'\]"):
        from_fx(torch.fx.symbolic_trace(Rounded()), [((N,), "float32")])
