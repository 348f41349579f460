"""Graders for chapter 5 (``exercises/ch05.py``): one test per exercise, worth ``points``.

Registered names are fresh per run (so a function left over from a notebook session cannot
pass for yours); numbers are checked on fresh random data against numpy and torch; the module
of exercise 5.2 is compared with ``assert_structural_equal``.
"""

from __future__ import annotations

import tracemalloc
import uuid
import weakref

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

import minitvm
from minitvm import relax
from minitvm.ir import IRModule, assert_structural_equal
from minitvm.relax.frontend.torch import from_exported_program, from_fx
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.testing import assert_allclose


@pytest.fixture
def ex(grade_module):
    return grade_module("ch05")


# ------------------------------------------------------------------ helpers


def _fresh(prefix: str) -> str:
    return f"grade_ch05.{prefix}_{uuid.uuid4().hex[:8]}"


def _vm(mod: IRModule) -> relax.VirtualMachine:
    assert isinstance(mod, IRModule), f"return an IRModule, not {type(mod).__name__}"
    return relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())


def _registered(name: str):
    fn = minitvm.get_global_func(name, allow_missing=True)
    assert fn is not None, f"nothing is registered under {name!r}: call minitvm.register_func(name, ...)"
    return fn


def _calls(mod: IRModule) -> list:
    """The Call values bound in main's blocks, in order."""
    return [b.value for block in mod["main"].body.blocks for b in block.bindings
            if isinstance(b.value, relax.Call)]


def _dps_packed_names(mod: IRModule) -> list[str]:
    out = []
    for call in _calls(mod):
        if getattr(call.op, "name", None) == "relax.call_dps_packed":
            out.append(call.args[0].global_symbol)
    return out


class TwoLayer(torch.nn.Module):
    def __init__(self, k: int, h: int, m: int):
        super().__init__()
        self.fc1 = torch.nn.Linear(k, h)
        self.fc2 = torch.nn.Linear(h, m)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


# ------------------------------------------------------------------ graders


@pytest.mark.hint("section 1 (A library function inside a Relax program): destination-passing style: the result "
                  "goes into the memory of out, which the caller owns",
                  "write through a numpy view of out (DLPack shares the memory); assigning to the name out only "
                  "rebinds a local variable")
@pytest.mark.points(1)
def test_register_scaled_add(ex):
    """Exercise 5.1: a numpy function in destination-passing style, registered."""
    name = _fresh("scaled_add")
    ex.register_scaled_add(name)
    fn = _registered(name)
    rng = np.random.default_rng(51)
    a, b = (rng.standard_normal((5, 7)).astype("float32") for _ in range(2))
    out = minitvm.nd.array(np.full((5, 7), 123.0, "float32"))
    result = fn(minitvm.nd.array(a), minitvm.nd.array(b), out)
    assert result is None, "a destination-passing function returns nothing: write into `out`"
    assert_allclose(out.numpy(), a + 2 * b, rtol=1e-6, atol=1e-6, err_msg="`out` must hold a + 2 * b after the call")


@pytest.mark.points(2)
@pytest.mark.hint("section 1 (A library function inside a Relax program): the chapter's lib_linear_module is the "
                  "pattern",
                  "call_dps_packed takes the function's name, the arguments as a tuple and the output's struct "
                  "info; emit it in a dataflow block as the block's output")
def test_module_calling(ex):
    """Exercise 5.2: a Relax function that calls a registered function by name."""
    name = _fresh("lib")
    m, n = 3, 6
    mod = ex.module_calling(name, m, n)
    assert isinstance(mod, IRModule), f"return an IRModule, not {type(mod).__name__}"

    @I.ir_module
    class Target:
        @R.function
        def main(a: R.Tensor((m, n), "float32"), b: R.Tensor((m, n), "float32")) -> R.Tensor((m, n), "float32"):
            with R.dataflow():
                gv = R.call_dps_packed(name, (a, b), out_sinfo=R.Tensor((m, n), "float32"))
                R.output(gv)
            return gv

    try:
        assert_structural_equal(mod["main"], Target["main"])
    except ValueError as err:
        raise AssertionError(f"your main differs from the target (lhs: yours, rhs: target): {err}") from None

    def subtract(a, b, out):  # any registered function will do: the module only names it
        np.subtract(np.from_dlpack(a), np.from_dlpack(b), out=np.from_dlpack(out))

    minitvm.register_func(name, subtract, override=True)
    rng = np.random.default_rng(52)
    a, b = (rng.standard_normal((m, n)).astype("float32") for _ in range(2))
    got = _vm(mod)["main"](minitvm.nd.array(a), minitvm.nd.array(b)).numpy()
    assert_allclose(got, a - b, rtol=1e-6, atol=1e-6)


@pytest.mark.hint("section 2 (PyTorch tensors without a copy: DLPack): which calls copy, and which share the "
                  "memory?",
                  "making a minitvm array from data copies it; each library's from_dlpack shares what the other "
                  "owns")
@pytest.mark.points(1)
def test_zero_copy_round_trip(ex):
    """Exercise 5.3: torch -> minitvm -> torch, sharing one buffer."""
    t = torch.randn(4, 9)
    result = ex.zero_copy_round_trip(t)
    assert isinstance(result, tuple) and len(result) == 2, "return a pair (nd, back)"
    nd, back = result
    assert isinstance(nd, minitvm.nd.NDArray), f"nd must be a minitvm.nd.NDArray, not {type(nd).__name__}"
    assert isinstance(back, torch.Tensor), f"back must be a torch.Tensor, not {type(back).__name__}"
    assert nd.data_ptr == t.data_ptr(), "nd does not share t's memory: use minitvm.nd.from_dlpack, not nd.array"
    assert back.data_ptr() == t.data_ptr(), "back does not share t's memory: use torch.from_dlpack(nd)"
    t.mul_(3.0)  # one buffer: the change shows through both
    assert_allclose(nd.numpy(), t.numpy())
    assert_allclose(back, t)


@pytest.mark.hint("section 2 (DLPack): torch can read and write minitvm's arrays without a copy",
                  "turn each argument into a torch tensor through DLPack; torch's matmul-plus-bias takes an out= "
                  "argument that writes into existing memory")
@pytest.mark.points(2)
def test_register_torch_linear(ex):
    """Exercise 5.4: a torch-backed linear layer writing into the VM's buffer."""
    name = _fresh("torch_linear")
    ex.register_torch_linear(name)
    fn = _registered(name)
    n, k, m = 6, 11, 5
    x, w, b = torch.randn(n, k), torch.randn(m, k), torch.randn(m)
    out = minitvm.nd.array(np.zeros((n, m), "float32"))
    address = out.data_ptr
    assert fn(*(minitvm.nd.array(t.numpy()) for t in (x, w, b)), out) is None, \
        "a destination-passing function returns nothing: write into `out`"
    assert out.data_ptr == address
    assert_allclose(torch.from_dlpack(out), x @ w.T + b, rtol=1e-5, atol=1e-5,
                    err_msg="`out` must hold x @ w.T + b after the call")
    # and inside a compiled module, called by the VM
    bb = relax.BlockBuilder()
    xs = [relax.Var(v, relax.TensorStructInfo(s, "float32")) for v, s in (("x", (n, k)), ("w", (m, k)), ("b", (m,)))]
    with bb.function("main", xs):
        with bb.dataflow():
            gv = bb.emit_output(relax.call_dps_packed(name, xs, out_sinfo=relax.TensorStructInfo((n, m), "float32")))
        bb.emit_func_output(gv)
    got = _vm(bb.get())["main"](x, w, b)
    assert_allclose(torch.from_dlpack(got), x @ w.T + b, rtol=1e-5, atol=1e-5)


@pytest.mark.points(2)
@pytest.mark.hint("section 3 (Library calls and generated kernels in one module): one binding calls the library, "
                  "the next a Relax operator",
                  "the matmul is a call_dps_packed of lib_matmul with the (n, m) output's struct info; the ReLU an "
                  "ordinary Relax operator on its result, which the pipeline turns into a kernel")
def test_mixed_module(ex):
    """Exercise 5.5: a library matmul followed by a generated ReLU, in one module."""
    name = _fresh("np_matmul")
    calls = []

    def np_matmul(a, b, out):
        calls.append(1)
        np.matmul(np.from_dlpack(a), np.from_dlpack(b), out=np.from_dlpack(out))

    minitvm.register_func(name, np_matmul, override=True)
    n, k, m = 5, 12, 9
    mod = ex.mixed_module(name, n, k, m)
    assert isinstance(mod, IRModule), f"return an IRModule, not {type(mod).__name__}"
    assert _dps_packed_names(mod) == [name], \
        f"main should make exactly one call_dps_packed, to {name!r}; it calls {_dps_packed_names(mod)}"
    ops = [c.op.name for c in _calls(mod) if hasattr(c.op, "name")]
    assert "relax.matmul" not in ops, "the library does the matmul: no relax.op.matmul in main"
    lowered = relax.get_pipeline("zero")(mod)
    kernels = [gv.name_hint for gv, f in lowered.items() if not isinstance(f, relax.Function)]
    assert kernels, "the ReLU should be generated by minitvm (a Relax operator or a call_tir), not by a library"
    rng = np.random.default_rng(55)
    x = rng.standard_normal((n, k)).astype("float32")
    w = rng.standard_normal((k, m)).astype("float32")
    got = _vm(mod)["main"](minitvm.nd.array(x), minitvm.nd.array(w)).numpy()
    assert len(calls) == 1, f"the library function ran {len(calls)} times for one call of main"
    assert_allclose(got, np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.hint("section 4 (A missing operator): a converter reads the node's input, builds a relax.op expression "
                  "and emits it",
                  "sinh is exp(x) minus exp(-x), halved; the half is a constant of x's dtype; return what the "
                  "builder's emit returns")
@pytest.mark.points(2)
def test_convert_sinh(ex):
    """Exercise 5.6: a converter for an unsupported ATen operator (aten.sinh)."""

    class Net(torch.nn.Module):
        def forward(self, x):
            return torch.sinh(x) * 2.0 + x

    x = torch.randn(3, 8) * 2
    ep = torch.export.export(Net(), (x,))
    mod = from_exported_program(ep, unwrap_unit_return_tuple=True,
                                custom_convert_map={"aten.sinh.default": ex.convert_sinh})
    for shape_x in (x, torch.randn(3, 8)):
        got = torch.from_dlpack(_vm(mod)["main"](shape_x))
        assert_allclose(got, Net()(shape_x), rtol=1e-5, atol=1e-5)


@pytest.mark.hint("section 4 (from_fx: the older way in): from_fx looks a called function up by its name",
                  "the dict's key is that name, its value a converter taking (node, importer) as for "
                  "from_exported_program; softsign divides x by one plus its absolute value")
@pytest.mark.points(2)
def test_fx_softsign_map(ex):
    """Exercise 5.7: a custom_convert_map for from_fx (a function looked up by its name)."""
    cmap = ex.fx_softsign_map()
    assert isinstance(cmap, dict), f"return a dict, not {type(cmap).__name__}"

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(6, 4)

        def forward(self, x):
            return torch.nn.functional.softsign(self.fc(x))

    net = Net().eval()
    mod = from_fx(net, [((5, 6), "float32")], unwrap_unit_return_tuple=True, custom_convert_map=cmap)
    x = torch.randn(5, 6) * 3
    with torch.no_grad():
        assert_allclose(torch.from_dlpack(_vm(mod)["main"](x)), net(x), rtol=1e-5, atol=1e-5)


@pytest.mark.points(2)
@pytest.mark.hint("section 4 (Parameters as inputs): the importer can keep the weights as parameters of main",
                  "import with the weights kept as inputs and the unit tuple unwrapped, then detach the parameters: "
                  "that gives the module without its \"params\" attribute, and the arrays")
def test_import_params_as_input(ex):
    """Exercise 5.8: import with the weights as inputs, detached from the module."""
    k, h, m = 7, 10, 3
    model = TwoLayer(k, h, m).eval()
    example = torch.randn(2, k)
    result = ex.import_params_as_input(model, example)
    assert isinstance(result, tuple) and len(result) == 2, "return a pair (mod, params)"
    mod, params = result
    assert isinstance(mod, IRModule), f"mod must be an IRModule, not {type(mod).__name__}"
    main = mod["main"]
    assert "params" not in main.attrs, "detach the weights: main still has a 'params' attribute"
    assert int(main.attrs.get("num_input", -1)) == 1, "main should say num_input=1 (keep_params_as_input=True)"
    assert len(main.params) == 1 + 4, f"main should take x and 4 weights, it takes {len(main.params)} parameters"
    assert len(params) == 4, f"params should hold 4 arrays (two weights, two biases), not {len(params)}"
    vm = _vm(mod)
    x = torch.randn(2, k)
    with torch.no_grad():
        want = model(x)
    got = vm["main"](x, *(minitvm.nd.array(np.asarray(p)) for p in params))
    assert_allclose(torch.from_dlpack(got), want, rtol=1e-5, atol=1e-5)
    # other weights, same executable
    other = TwoLayer(k, h, m).eval()
    weights = [minitvm.nd.array(p.detach().numpy()) for p in other.parameters()]
    with torch.no_grad():
        assert_allclose(torch.from_dlpack(vm["main"](x, *weights)), other(x), rtol=1e-5, atol=1e-5)


@pytest.mark.hint("section 4 (Parameters as inputs), and chapter 4's section 7: binding turns parameters back into "
                  "constants",
                  "the parameters of main after the first num_input are the weights, in params' order; the binding "
                  "is keyed by their names")
@pytest.mark.points(2)
def test_bind_params(ex):
    """Exercise 5.9: bind the weights back as constants."""
    k, h, m = 5, 8, 4
    model = TwoLayer(k, h, m).eval()
    ep = torch.export.export(model, (torch.randn(3, k),))
    mod = from_exported_program(ep, keep_params_as_input=True, unwrap_unit_return_tuple=True)
    mod, params = relax.frontend.detach_params(mod)
    bound = ex.bind_params(mod, params["main"])
    assert isinstance(bound, IRModule), f"return an IRModule, not {type(bound).__name__}"
    names = [v.name_hint for v in bound["main"].params]
    assert names == ["x"], f"main should take only the input x once the weights are bound, it takes {names}"
    x = torch.randn(3, k)
    with torch.no_grad():
        assert_allclose(torch.from_dlpack(_vm(bound)["main"](x)), model(x), rtol=1e-5, atol=1e-5)


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return _tensors(list(value.values()))
    return []


class _NewTorchMemory(TorchFunctionMode):
    """The tensors torch functions return in memory of their own (not an input's, not one of
    ``known`` addresses): how many bytes of them are alive at once, at most, and who made them."""

    def __init__(self, known: set[int]):
        super().__init__()
        self.known, self.live, self.peak, self.made = known, 0, 0, []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        inputs = self.known | {t.untyped_storage().data_ptr() for t in _tensors((args, kwargs))}
        for t in _tensors(result):
            if t.untyped_storage().data_ptr() not in inputs:
                size = t.untyped_storage().nbytes()
                self.live += size
                self.peak = max(self.peak, self.live)
                self.made.append(f"{getattr(func, '__name__', func)} {tuple(t.shape)}")
                weakref.finalize(t, self._freed, size)
        return result

    def _freed(self, size: int) -> None:
        self.live -= size


def _allocated_during(fn, args) -> tuple[int, int, list[str]]:
    """Bytes of new torch tensors and of other traced memory (numpy's arrays, Python objects)
    alive at once at the worst moment of ``fn(*args)``, and what made the torch tensors."""
    torch_memory = _NewTorchMemory({a.data_ptr for a in args})
    tracemalloc.start()
    try:
        with torch_memory:
            fn(*args)
        traced = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return torch_memory.peak, traced, torch_memory.made


@pytest.mark.hint("section 1 (A library function inside a Relax program): destination-passing style hands you out's "
                  "memory; every a + b, a @ b or torch.relu(a) returns a new array the size of its result: which "
                  "calls can put their result into an array that exists already?",
                  "out is memory you may use: the first step can write its result there, and each later step can "
                  "change it where it is")
@pytest.mark.points(3)
def test_register_fused_layer(ex):
    """Exercise 5.10: a registered layer that computes in the output's memory, however it is written."""
    name = _fresh("fused_layer")
    ex.register_fused_layer(name)
    fn = _registered(name)
    n, k, m = 256, 32, 256
    rng = np.random.default_rng(510)
    for _ in range(2):  # new numbers, same output buffer: the second result is computed, not kept
        x, w, b, r = (rng.standard_normal(s).astype("float32") for s in ((n, k), (m, k), (m,), (n, m)))
        args = [minitvm.nd.array(a) for a in (x, w, b, r)] + [minitvm.nd.empty((n, m), "float32")]
        address = args[-1].data_ptr
        assert fn(*args) is None, "a destination-passing function returns nothing: write into `out`"
        assert args[-1].data_ptr == address, "out must stay the array the caller passed"
        assert_allclose(args[-1].numpy(), np.maximum(x @ w.T + b, 0) + r, rtol=1e-4, atol=1e-4,
                        err_msg="`out` must hold relu(x @ w.T + b) + r after the call")
    budget = args[-1].numpy().nbytes // 2
    torch_bytes, traced, made = _allocated_during(fn, args)
    kib = 1024
    assert torch_bytes <= budget, (
        f"one call made {torch_bytes // kib} KiB of new torch tensors alive at once ({', '.join(made)}); "
        f"exercise 5.10 allows half of out's {2 * budget // kib} KiB")
    assert traced <= budget, (
        f"one call held {traced // kib} KiB of new numpy arrays and Python objects at once (tracemalloc's peak); "
        f"exercise 5.10 allows half of out's {2 * budget // kib} KiB")
