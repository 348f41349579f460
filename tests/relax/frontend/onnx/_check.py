"""Shared by the ONNX importer's tests: build a one-node graph, run it in onnxruntime and
through minitvm (import, zero pipeline, LLVM, VM), compare every output."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

import minitvm
from minitvm import relax
from minitvm.relax.frontend.onnx import from_onnx

RNG_SEED = 0


def info(name, dtype, shape):
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model_of(nodes, inputs, outputs, initializers=(), opset=18):
    """A model of ``nodes``; ``inputs`` / ``outputs`` as ``{name: (dtype, shape)}``."""
    graph = helper.make_graph(list(nodes), "test", [info(n, *v) for n, v in inputs.items()],
                              [info(n, *v) for n, v in outputs.items()], initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset < 19 else 9
    return model


def random_inputs(model, seed=RNG_SEED, sizes=None):
    """Seeded random values for every graph input (no zeros: [-2, -0.1] u [0.1, 2] for floats,
    non-zero integers); ``sizes`` fills symbolic dims by name."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in model.graph.input:
        t = i.type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
        shape = [d.dim_value if d.dim_value else (sizes or {})[d.dim_param] for d in t.shape.dim]
        if dtype == np.bool_:
            out[i.name] = rng.random(shape) < 0.5
        elif np.issubdtype(dtype, np.integer):
            v = rng.integers(1, 8, size=shape) * rng.choice([-1, 1], size=shape)
            out[i.name] = v.astype(dtype)
        else:
            v = rng.uniform(0.1, 2.0, size=shape) * rng.choice([-1, 1], size=shape)
            out[i.name] = v.astype(dtype)
    return out


def ort_run(model, inputs):
    sess = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def compile_vm(mod):
    ex = minitvm.compile(relax.get_pipeline("zero")(mod), target="llvm", relax_pipeline=None)
    return relax.VirtualMachine(ex, minitvm.cpu())


def tvm_run(vm, model, inputs):
    got = vm["main"](*(minitvm.nd.array(inputs[i.name]) for i in model.graph.input
                       if i.name not in {t.name for t in model.graph.initializer}))
    return [g.numpy() for g in got] if isinstance(got, (list, tuple)) else [got.numpy()]


def assert_outputs(got, want, rtol=1e-5, atol=1e-5, what=""):
    assert len(got) == len(want), f"{what}: {len(got)} outputs, onnxruntime has {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, \
            f"{what} output {k}: minitvm {g.shape} {g.dtype}, onnxruntime {w.shape} {w.dtype}"
        if np.issubdtype(w.dtype, np.floating):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{what} output {k}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{what} output {k}")


def check(model, inputs=None, rtol=1e-5, atol=1e-5, **import_kw):
    """Import, compile and run ``model`` and compare with onnxruntime on seeded random inputs."""
    onnx.checker.check_model(model)
    inputs = random_inputs(model) if inputs is None else inputs
    want = ort_run(model, inputs)
    vm = compile_vm(from_onnx(model, **import_kw))
    assert_outputs(tvm_run(vm, model, inputs), want, rtol, atol, what=model.graph.node[-1].op_type)
    return want


def check_node(op_type, inputs, outputs, attrs=None, initializers=(), opset=18, node_inputs=None, **kw):
    """One ``op_type`` node over the graph ``inputs`` ({name: (dtype, shape)}) then the
    ``initializers`` (or the names ``node_inputs`` lists, "" for an omitted one)."""
    names = node_inputs if node_inputs is not None else list(inputs) + [i.name for i in initializers]
    node = helper.make_node(op_type, names, list(outputs), **(attrs or {}))
    return check(model_of([node], inputs, outputs, initializers, opset), **kw)


__all__ = ["TensorProto", "helper", "check", "check_node", "model_of", "init", "random_inputs", "ort_run",
           "compile_vm", "tvm_run", "assert_outputs"]
