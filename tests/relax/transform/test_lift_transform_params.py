"""LiftTransformParams and LambdaLift (TVM's relax.transform names): the weight-only work moves
to ``<name>_transform_params`` and both halves together compute what the function did; local
functions become private module functions (closures through R.make_closure); tvm.ir.save_json
round-trips a module and refuses Python smuggled into the text."""

import json

import numpy as np
import pytest

import minitvm
import minitvm.relax.testing.transform  # noqa: F401 - relax.testing.transform.ApplyEmptyCppMutator
from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R
from minitvm.script import tir as T


@I.ir_module
class Model:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), w: R.Tensor((4, 3), "float32"), b: R.Tensor((4,), "float32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            wt = R.permute_dims(w, [1, 0])
            w2 = R.multiply(wt, R.const(2.0, "float32"))
            y = R.matmul(x, w2)
            z = R.add(y, b)
            R.output(z)
        return z


def _run(mod, name, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), minitvm.cpu())
    return vm[name](*args)


def test_lifted_transform_and_main_compute_the_original():
    after = relax.transform.LiftTransformParams()(Model)
    assert set(gv.name_hint for gv in after.get_global_vars()) == {"main", "main_transform_params"}
    main = after["main"]
    # x, then what main still needs: b (a weight) and the lifted 2 * w^T
    assert [tuple(int(d) for d in p.struct_info.shape) for p in main.params] == [(2, 3), (4,), (3, 4)]
    assert after["main_transform_params"].attrs["global_symbol"] == "main_transform_params"
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype("float32") for s in ((2, 3), (4, 3), (4,)))
    nd = minitvm.nd.array
    b_out, w_out = _run(after, "main_transform_params", (nd(w), nd(b)))
    got = _run(after, "main", nd(x), b_out, w_out).numpy()
    np.testing.assert_allclose(got, x @ (2 * w.T) + b, rtol=1e-5, atol=1e-5)


def test_shared_transform_needs_matching_weights():
    @I.ir_module
    class Two:
        @R.function
        def f1(x: R.Tensor((2, 3), "float32"), w: R.Tensor((4, 3), "float32")):
            R.func_attr({"num_input": 1})
            with R.dataflow():
                y = R.matmul(x, R.permute_dims(w, [1, 0]))
                R.output(y)
            return y

        @R.function
        def f2(x: R.Tensor((2, 3), "float32"), w: R.Tensor((4, 5), "float32")):
            R.func_attr({"num_input": 1})
            return x

    with pytest.raises(minitvm.TVMError, match="same for all target functions"):
        relax.transform.LiftTransformParams(shared_transform=True)(Two)


@I.ir_module
class Nested:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        @R.function
        def outer(c: R.Tensor((2, 3), "float32")) -> R.Callable((R.Tensor((2, 3), "float32"),),
                                                                 R.Tensor((2, 3), "float32")):
            @R.function
            def inner(a: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
                s = R.add(a, c)
                return s

            return inner

        f = outer(x)
        r = f(y)
        return r

    @R.function
    def main_inner():  # takes the first-choice name of the lifted `inner`
        return R.tuple()


def test_lambda_lift_makes_closures_and_unique_names():
    after = relax.transform.LambdaLift()(Nested)
    names = sorted(gv.name_hint for gv in after.get_global_vars())
    # "main_inner" is taken, so the whole nesting path names it
    assert names == ["main", "main_inner", "main_outer", "main_outer_inner"]
    inner = after["main_outer_inner"]
    assert len(inner.params) == 2  # its own parameter, then the captured c
    assert "global_symbol" not in (inner.attrs or {})  # lifted functions are private
    text = after.script()
    assert "R.make_closure(cls.main_outer_inner" in text and "R.invoke_pure_closure(f, (y,)" in text
    minitvm.ir.assert_structural_equal(minitvm.ir.load_json(minitvm.ir.save_json(after)), after)


def test_load_json_runs_no_python(tmp_path):
    marker = tmp_path / "marker"
    evil = f"@I.ir_module\nclass M:\n    __import__('os').system('touch {marker}')\n"
    with pytest.raises(minitvm.script.TVMScriptError):
        minitvm.ir.load_json(json.dumps({"minitvm_json": 1, "type": "IRModule", "script": evil}))
    assert not marker.exists()
    with pytest.raises(ValueError, match="not a node saved by minitvm"):
        minitvm.ir.load_json('{"root": 1, "nodes": []}')


def test_call_tir_arguments_normalized_to_an_inline_tuple():
    """FNormalize (TVM's operator-specific normalization): a mutator writes call_tir's
    arguments as an in-line tuple; the parser keeps the script as written, and well_formed
    flags the un-normalized form."""

    @I.ir_module(check_well_formed=False)
    class Before:
        @R.function
        def main(args: R.Tuple([R.Tensor([4], "float32")])):
            cls = Before
            return relax.Call(minitvm.ir.Op.get("relax.call_tir"), [cls.double, args],
                              sinfo_args=[args[0].struct_info])

        @T.prim_func(private=True)
        def double(A: T.Buffer(4, "float32"), B: T.Buffer(4, "float32")):
            for i in range(4):
                B[i] = A[i] * 2.0

    assert not relax.analysis.well_formed(Before)
    after = relax.testing.transform.ApplyEmptyCppMutator()(Before)
    body = after["main"].body
    call = body.blocks[-1].bindings[-1].value if body.blocks else body.body
    assert isinstance(call.args[1], relax.Tuple)
    assert relax.analysis.well_formed(after)


def test_apply_pass_to_function_touches_matching_functions_only():
    @I.ir_module
    class Two:
        @R.function
        def keep(x: R.Tensor((2,), "float32")):
            y = R.add(x, x)  # noqa: F841 - the unused binding the pass removes
            return x

        @R.function
        def clean(x: R.Tensor((2,), "float32")):
            y = R.add(x, x)  # noqa: F841 - the unused binding the pass removes
            return x

    after = minitvm.ir.transform.ApplyPassToFunction(relax.transform.DeadCodeElimination(), "cl.*")(Two)
    assert after["keep"] is Two["keep"]
    assert not after["clean"].body.blocks  # the unused binding went
    assert relax.analysis.well_formed(after)


def test_normalize_global_var_names_public_functions_by_symbol():
    @I.ir_module(check_well_formed=False)
    class Before:
        @R.function(private=True)
        def f():
            return R.const(1, "int32")

        @R.function
        def f1():
            R.func_attr({"global_symbol": "f"})
            cls = Before
            gv: R.Tensor((), dtype="int32") = cls.f()
            return gv

    assert not relax.analysis.well_formed(Before)  # f1 carries the symbol "f"
    after = relax.transform.NormalizeGlobalVar()(Before)
    assert relax.analysis.well_formed(after)
    assert after["f"].attrs["global_symbol"] == "f"
    assert after["f"].body.blocks[0].bindings[0].value.op.name_hint == "f1"  # the private one moved
