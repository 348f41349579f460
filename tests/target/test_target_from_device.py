"""``Target.from_device`` and TVM's GPU target tags, and TVM's dlight tutorial on them (our own copy
of its workflow): a model's kernels scheduled by the GPU rules for the target of ``tvm.cuda(0)``,
built and run on the emulated GPU."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax.frontend import nn
from minitvm.s_tir import dlight as dl
from minitvm.target import Target
from minitvm.target.cuda.real_gpu import real_gpu_status


def test_from_device_gives_each_devices_target_and_refuses_a_missing_one():
    assert Target.from_device(tvm.cpu()).kind.name == "llvm"
    assert Target.from_device("cpu").kind.name == "llvm"
    gpu = Target.from_device(tvm.cuda(0))
    assert gpu.kind.name == ("cuda" if real_gpu_status() is None else "cuda-emulated") and "gpu" in gpu.keys
    with pytest.raises(ValueError, match="cuda\\(1\\).*does not exist"):
        Target.from_device(tvm.cuda(1))


def test_gpu_tags_stand_for_the_gpu_they_name():
    t = Target("nvidia/geforce-rtx-3090-ti")
    assert t.kind.name == "cuda" and t.attrs["model"] == "rtx3090ti"
    assert Target("nvidia/nvidia-a100 -max_num_threads=512").attrs == {"model": "a100", "max_num_threads": 512}


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.relu, self.norm, self.fc2 = nn.Linear(32, 32), nn.ReLU(), nn.LayerNorm(32), nn.Linear(32, 16)

    def forward(self, x):
        return self.fc2(self.norm(self.relu(self.fc1(x))))


def test_dlight_tutorial_workflow_on_the_target_of_cuda0():
    mod, params = _Block().export_tvm({"forward": {"x": nn.spec.Tensor((1, 32), "float32")}})
    target = Target.from_device(tvm.cuda(0))
    with target:
        mod = relax.get_pipeline("zero")(mod)
        mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.LowBatchGEMV(), dl.gpu.Reduction(),
                                      dl.gpu.GeneralReduction(), dl.gpu.Transpose(), dl.gpu.RMSNorm(),
                                      dl.gpu.Fallback())(mod)
    kernels = [f for _, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc)]
    assert kernels and all(f.attrs["tir.is_scheduled"] for f in kernels)
    rng = np.random.default_rng(21)
    values = {name: rng.standard_normal(p.shape).astype("float32") * 0.3 for name, p in params}
    values.update({n: np.ones(p.shape, "float32") for n, p in params if n.endswith("norm.weight")})
    values.update({n: np.zeros(p.shape, "float32") for n, p in params if n.endswith("norm.bias")})
    x = rng.standard_normal((1, 32)).astype("float32")
    dev = tvm.cuda(0)
    vm = relax.VirtualMachine(tvm.compile(mod, target=target), dev)
    got = vm["forward"](tvm.runtime.tensor(x, dev), *[tvm.runtime.tensor(values[n], dev) for n, _ in params])
    h = np.maximum(x @ values["fc1.weight"].T + values["fc1.bias"], 0)
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got.numpy(), h @ values["fc2.weight"].T + values["fc2.bias"], rtol=1e-4, atol=1e-4)
