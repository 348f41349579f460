"""nn.SourceModule / nn.ObjectModule: C++ and C kernels compiled with the system compiler, loaded,
and called from an exported model through R.call_dps_packed (TVM's nn.ExternModule workflow)."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.relax.frontend import nn

CPP = r"""
#include <dlpack/dlpack.h>
#include <tvm/ffi/function.h>

namespace {
// c = a * scale + b over all elements (a, b, c: float32 of one shape)
int _scale_add_impl(DLTensor* a, DLTensor* b, double scale, DLTensor* c) {
  int64_t n = 1;
  for (int i = 0; i < a->ndim; ++i) n *= a->shape[i];
  if (a->dtype.code != kDLFloat || a->dtype.bits != 32) return 3;
  const float* pa = static_cast<const float*>(a->data);
  const float* pb = static_cast<const float*>(b->data);
  float* pc = static_cast<float*>(c->data);
  for (int64_t i = 0; i < n; ++i) pc[i] = pa[i] * static_cast<float>(scale) + pb[i];
  return 0;
}
}  // namespace
TVM_FFI_DLL_EXPORT_TYPED_FUNC(ext_scale_add, _scale_add_impl);
"""

C_ROW_SUM = r"""
#include <dlpack/dlpack.h>
/* out[i] = sum_j x[i, j]: a plain C export, no macro */
int ext_row_sum(DLTensor* x, DLTensor* out) {
  const float* px = (const float*)x->data;
  float* po = (float*)out->data;
  for (int64_t i = 0; i < x->shape[0]; ++i) {
    float s = 0;
    for (int64_t j = 0; j < x->shape[1]; ++j) s += px[i * x->shape[1] + j];
    po[i] = s;
  }
  return 0;
}
"""


def _same_shape(a, b, scale):
    return nn.Tensor.placeholder(a.shape, a.dtype)


def _rows(x):
    return nn.Tensor.placeholder([x.shape[0]], x.dtype)


class Model(nn.Module):
    def __init__(self, ext_cpp, ext_c):
        self.fc = nn.Linear(4, 4, bias=False)
        self.ext_cpp, self.ext_c = ext_cpp, ext_c

    def forward(self, x, y):
        nn.add_extern(self.ext_cpp)
        nn.add_extern(self.ext_c)
        h = self.ext_cpp["ext_scale_add"](self.fc(x), y, 0.5)
        return self.ext_c["ext_row_sum"](h)


def _run(ext_mods, mod, *args):
    mod = relax.transform.AttachExternModules(ext_mods)(mod)
    ex = minitvm.compile(relax.get_pipeline("zero")(mod), "llvm")
    return relax.VirtualMachine(ex, minitvm.cpu())["forward"](*map(minitvm.nd.array, args)).numpy()


def test_source_modules_compile_load_and_run_in_the_model():
    ext_cpp = nn.SourceModule({"ext_scale_add": _same_shape}, CPP, "cpp")
    ext_c = nn.SourceModule({"ext_row_sum": _rows}, C_ROW_SUM, "c")
    model = Model(ext_cpp, ext_c)
    spec = {"forward": {"x": nn.spec.Tensor(["n", 4], "float32"), "y": nn.spec.Tensor(["n", 4], "float32")}}
    with pytest.raises(ValueError, match="allow_extern"):
        model.export_tvm(spec=spec)
    mod, params, ext_mods = model.export_tvm(spec=spec, allow_extern=True)
    assert ext_mods == [ext_cpp, ext_c] and [n for n, _ in params] == ["fc.weight"]
    text = mod.script()
    assert 'R.call_dps_packed("ext_scale_add", (matmul, y, R.prim_value(T.float64(0.5)))' in text
    assert 'R.call_dps_packed("ext_row_sum"' in text

    rng = np.random.default_rng(0)
    x, y, w = (rng.standard_normal(s).astype("float32") for s in ((3, 4), (3, 4), (4, 4)))
    got = _run(ext_mods, mod, x, y, w)
    np.testing.assert_allclose(got, ((x @ w.T) * 0.5 + y).sum(-1), rtol=1e-5, atol=1e-5)


def test_object_module_links_a_compiled_object(tmp_path):
    src = tmp_path / "row_sum.c"
    src.write_text(C_ROW_SUM)
    obj = tmp_path / "row_sum.o"
    opts = nn.SourceModule.get_compile_options("c")
    subprocess.run(["gcc", "-c", *opts, "-o", str(obj), str(src)], check=True)
    ext = nn.ObjectModule({"ext_row_sum": _rows}, obj)

    class Sum(nn.Module):
        def forward(self, x):
            nn.add_extern(ext)
            return ext["ext_row_sum"](x)

    mod, _, ext_mods = Sum().export_tvm(spec={"forward": {"x": nn.spec.Tensor([2, 5], "float32")}},
                                        allow_extern=True)
    x = np.random.default_rng(1).standard_normal((2, 5)).astype("float32")
    np.testing.assert_allclose(_run(ext_mods, mod, x), x.sum(-1), rtol=1e-5, atol=1e-6)


def test_extern_errors_name_the_problem(tmp_path):
    bad = nn.SourceModule({"ext_nothing": _rows}, "int broken(", "c")
    with pytest.raises(RuntimeError, match="compilation failed"):
        bad.load()
    missing = nn.SourceModule({"ext_not_there": _rows}, C_ROW_SUM, "c")
    with pytest.raises(AttributeError, match="ext_not_there"):
        missing.load()
    with pytest.raises(NotImplementedError, match="CUDA"):
        nn.SourceModule({}, "", "cu")
    with pytest.raises(ValueError, match="not a file"):
        nn.ObjectModule({}, tmp_path / "absent.o")
    with pytest.raises(RuntimeError, match="export"):
        nn.add_extern(missing)
    dup = nn.SourceModule({"ext_row_sum": _rows}, C_ROW_SUM, "c")

    class Twice(nn.Module):
        def forward(self, x):
            nn.add_extern(nn.SourceModule({"ext_row_sum": _rows}, C_ROW_SUM, "c"))
            nn.add_extern(dup)
            return x

    with pytest.raises(ValueError, match="ext_row_sum"):
        Twice().export_tvm(spec={"forward": {"x": nn.spec.Tensor([2], "float32")}}, allow_extern=True)
