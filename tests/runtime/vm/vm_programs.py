"""Hand-assembled VM programs shared by the VM tests (imported as ``vm_programs``).

The kernels here are plain Python packed functions in destination-passing style (the
output array comes last and is written in place), standing in for compiled kernels.
"""

from __future__ import annotations

import numpy as np

import minitvm
from minitvm.runtime import Module
from minitvm.runtime.vm import ExecBuilder, ParamInfo
from minitvm.runtime.vm import builtins as B


def linear_relu(x, w, out):
    """out = max(x @ w, 0)"""
    np.maximum(np.asarray(x) @ np.asarray(w), 0, out=np.asarray(out))


def linear(x, w, out):
    """out = x @ w"""
    np.matmul(np.asarray(x), np.asarray(w), out=np.asarray(out))


minitvm.register_func("test.vm.linear_relu", linear_relu, override=True)
minitvm.register_func("test.vm.linear", linear, override=True)
# integer helpers of these hand-written programs (not TVM's test.vm.add/mul, which relax.testing.vm registers
# for tensors: overriding them here would break the tests that call TVM's in the same process)
minitvm.register_func("tests.vm.add_ints", lambda a, b: a + b, override=True)
minitvm.register_func("tests.vm.less_ints", lambda a, b: a < b, override=True)
minitvm.register_func("tests.vm.mul_ints", lambda a, b: a * b, override=True)

IN, HIDDEN, OUT = 784, 128, 10


def build_mlp(weights=None, scale: float | None = None):
    """forward(x: (n, 784), w1: (784, 128), w2: (128, 10)) -> relu(x @ w1) @ w2, batch n symbolic.

    The batch size is read into slot 0 of a shape heap (match_shape) and used to build the
    shapes of the intermediate and the output (make_shape), each in its own storage.
    With ``weights=(w1, w2)`` they are constants of the executable and forward takes x only.
    With ``scale=k`` a second function ``scaled(x) = k * forward(x)`` calls forward and then
    a kernel of the executable's library (:class:`ScaleLibrary`).
    """
    eb = ExecBuilder(lib=None if scale is None else ScaleLibrary(scale))
    info = [ParamInfo.tensor(("n", IN), "float32"), ParamInfo.tensor((IN, HIDDEN), "float32"),
            ParamInfo.tensor((HIDDEN, OUT), "float32")]
    params = ["x", "w1", "w2"]
    if weights is not None:
        params, info = params[:1], info[:1]
    with eb.function("forward", params, info):
        w1, w2 = (eb.r(1), eb.r(2)) if weights is None else (eb.c(weights[0]), eb.c(weights[1]))
        heap = eb.emit_call("vm.builtin.alloc_shape_heap", [eb.imm(1)])
        eb.emit_call("vm.builtin.match_shape",
                     [eb.r(0), heap, eb.imm(2), eb.imm(B.MATCH_STORE), eb.imm(0), eb.imm(B.MATCH_IMM), eb.imm(IN),
                      "forward: x"], dst=None)

        def alloc_batch_by(width):  # an (n, width) float32 tensor in a storage of its own
            shape = eb.emit_call("vm.builtin.make_shape",
                                 [heap, eb.imm(2), eb.imm(B.MAKE_LOAD), eb.imm(0), eb.imm(B.MAKE_IMM), eb.imm(width)])
            storage = eb.emit_call("vm.builtin.alloc_storage", [shape, "float32"])
            return eb.emit_call("vm.builtin.alloc_tensor", [storage, eb.imm(0), shape, "float32"])

        hidden = alloc_batch_by(HIDDEN)
        eb.emit_call("test.vm.linear_relu", [eb.r(0), w1, hidden], dst=None)
        out = alloc_batch_by(OUT)
        eb.emit_call("test.vm.linear", [hidden, w2, out], dst=None)
        eb.emit_ret(out)
    if scale is not None:
        with eb.function("scaled", params, info):
            y = eb.emit_call("forward", [eb.r(i) for i in range(len(params))])
            shape = eb.emit_call("vm.builtin.shape_of", [y])
            storage = eb.emit_call("vm.builtin.alloc_storage", [shape, "float32"])
            out = eb.emit_call("vm.builtin.alloc_tensor", [storage, eb.imm(0), shape, "float32"])
            eb.emit_call("test.kernels.scale", [y, out], dst=None)
            eb.emit_ret(out)
    return eb.get()


def mlp_inputs(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, IN), dtype=np.float32)
    w1 = rng.standard_normal((IN, HIDDEN), dtype=np.float32) * 0.05
    w2 = rng.standard_normal((HIDDEN, OUT), dtype=np.float32) * 0.05
    return x, w1, w2


def mlp_reference(x, w1, w2):
    return np.maximum(x @ w1, 0) @ w2


def build_sum_loop():
    """total(n): s = 0; i = 0; while i < n: s += i; i += 1; return s -- with If and Goto."""
    eb = ExecBuilder()
    with eb.function("total", ["n"], [ParamInfo("any")]):
        s, i = eb.new_register(), eb.new_register()
        one = eb.new_register()
        eb.emit_call("tests.vm.add_ints", [eb.imm(0), eb.imm(0)], dst=s)
        eb.emit_call("tests.vm.add_ints", [eb.imm(0), eb.imm(0)], dst=i)
        eb.emit_call("tests.vm.add_ints", [eb.imm(0), eb.imm(1)], dst=one)
        head, done = eb.label("head"), eb.label("done")
        eb.place(head)
        cond = eb.emit_call("tests.vm.less_ints", [i, eb.r(0)])
        eb.emit_if(cond, done)
        eb.emit_call("tests.vm.add_ints", [s, i], dst=s)
        eb.emit_call("tests.vm.add_ints", [i, one], dst=i)
        eb.emit_goto(head)
        eb.place(done)
        eb.emit_ret(s)
    return eb.get()


# -- a stand-in kernel library with a save/load hook ---------------------------------------------------
# A real code generator registers the same two hooks for its module type; here the saved
# "kernel code" is the text "scale=<k>", and loading it makes the library again.


class ScaleLibrary(Module):
    """A kernel library with one DPS kernel, ``test.kernels.scale(x, out)``: out = k * x."""

    def __init__(self, k: float):
        super().__init__({"test.kernels.scale": self.scale}, type_key="test_scale")
        self.k = k

    def scale(self, x, out):
        np.multiply(np.asarray(x), self.k, out=np.asarray(out))


def _export_scale_library(lib: ScaleLibrary) -> dict:
    return {"format": "test_scale_src", "payload": f"scale={lib.k!r}",
            "metadata": {"functions": ["test.kernels.scale"]}}


def _load_scale_library(payload: str, metadata: dict) -> Module:
    key, _, value = payload.partition("=")
    assert key == "scale" and metadata["functions"] == ["test.kernels.scale"]
    return ScaleLibrary(float(value))


minitvm.register_func("runtime.module.export_test_scale", _export_scale_library, override=True)
minitvm.register_func("runtime.module.loadfrom_test_scale_src", _load_scale_library, override=True)
