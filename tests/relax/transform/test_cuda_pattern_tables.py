"""The cuBLAS and CUTLASS pattern tables (TVM's relax.backend.cuda): what they group and refuse."""

from minitvm import relax
from minitvm.relax.backend import get_patterns_with_prefix
from minitvm.relax.backend.cuda.cublas import partition_for_cublas
from minitvm.relax.backend.cuda.cutlass import partition_for_cutlass
from minitvm.script import ir as I
from minitvm.script import relax as R


def _names(mod):
    return sorted(gv.name_hint for gv in mod.functions)


def test_cublas_groups_matmul_bias_relu_and_refuses_symbolic_reduction():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((4, 8), "float16"), w: R.Tensor((8, 8), "float16"), b: R.Tensor((8,), "float16"),
                 y: R.Tensor((4, "k"), "float16"), v: R.Tensor(("k", 8), "float16")):
            with R.dataflow():
                lv = R.matmul(x, w)
                lv1 = R.add(lv, b)
                lv2 = R.nn.relu(lv1)
                lv3 = R.matmul(y, v)  # a symbolic reduction axis: not for cuBLAS
                out = R.add(lv2, lv3)
                R.output(out)
            return out

    mod = partition_for_cublas(Mod)
    assert _names(mod) == ["fused_relax_matmul_relax_add_relax_nn_relu_cublas", "main"]
    fused = mod["fused_relax_matmul_relax_add_relax_nn_relu_cublas"]
    assert fused.attrs["Codegen"] == "cublas"
    assert {p.name for p in get_patterns_with_prefix("cublas.matmul_transposed")} >= {
        "cublas.matmul_transposed", "cublas.matmul_transposed_bias_gelu"}


def test_cutlass_matmul_bias_with_a_residual_add():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((32, 8), "float16"), w: R.Tensor((8, 8), "float16"), b: R.Tensor((8,), "float16"),
                 r: R.Tensor((32, 8), "float16")):
            with R.dataflow():
                lv = R.matmul(x, w)
                lv1 = R.add(lv, b)
                out = R.add(lv1, r)
                R.output(out)
            return out

    assert "fused_relax_matmul_relax_add_relax_add_cutlass" in _names(partition_for_cutlass(Mod))


def test_call_of_an_unannotated_module_function_has_its_result_struct_info():
    # a helper without a return annotation, defined before its caller: the call's struct
    # info is the helper's result, so `+` on it type-checks (as TVM's parser)
    @I.ir_module
    class Mod:
        @R.function
        def helper(x: R.Tensor((2, 3), "float32")):
            y = R.add(x, x)
            return y

        @R.function
        def main(x: R.Tensor((2, 3), "float32")):
            z = Mod.helper(x)
            out = z + x
            return out

    assert relax.analysis.well_formed(Mod)
    assert Mod["main"].body.body.struct_info.shape is not None
