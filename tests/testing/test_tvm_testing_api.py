"""TVM's pytest helpers on minitvm.testing: a test file written against ``tvm.testing`` runs
under ``pytest -p minitvm.testing.plugin`` and parametrizes, skips and compares as TVM's does."""


import numpy as np
import pytest

import minitvm as tvm
import minitvm.testing

pytest_plugins = ["pytester"]

TEST_FILE = '''
import numpy as np
import pytest
import minitvm as tvm
import minitvm.testing
from minitvm.script import tir as T

size = tvm.testing.parameter(1, 4, 7)
shape, dtype = tvm.testing.parameters(((2, 3), "float32"), ((5,), "int32"))

@tvm.testing.fixture
def doubled(size):
    return 2 * size

def test_size(size, doubled):
    assert doubled == 2 * size and size in (1, 4, 7)

def test_pairs(shape, dtype):  # varied together: 2 tests, not 4
    assert (shape, dtype) in [((2, 3), "float32"), ((5,), "int32")]

def test_on_target(target, dev):
    assert str(target) == "llvm" and dev.device_type == tvm.cpu(0).device_type

@tvm.testing.parametrize_targets("llvm", "cuda")
def test_explicit_targets(target):
    assert target == "llvm"

@tvm.testing.requires_cuda
def test_needs_cuda():
    raise AssertionError("ran without a GPU")

@tvm.testing.requires_llvm
def test_needs_llvm():
    pass

class TestSimplify(tvm.testing.CompareBeforeAfter):
    transform = tvm.tir.transform.Simplify()

    def before(A: T.Buffer(1, "int32")):
        if True:
            A[0] = 42
        else:
            A[0] = 5

    def expected(A: T.Buffer(1, "int32")):
        A[0] = 42

class TestWrongExpected(tvm.testing.CompareBeforeAfter):
    transform = tvm.tir.transform.Simplify()

    def before(A: T.Buffer(1, "int32")):
        A[0] = 1 + 1

    def expected(A: T.Buffer(1, "int32")):
        A[0] = 3
'''


def test_tvm_style_test_file_runs(pytester):
    pytester.makepyfile(test_tvm_style=TEST_FILE)
    result = pytester.runpytest_inprocess("-p", "minitvm.testing.plugin", "-p", "no:cacheprovider", "-rs")
    # 3 sizes + 2 pairs + 1 target + llvm + needs_llvm + TestSimplify pass; cuda twice skipped;
    # the wrong expected program must fail
    result.assert_outcomes(passed=9, skipped=2, failed=1)
    result.stdout.fnmatch_lines(["*TestWrongExpected*"])
    result.stdout.fnmatch_lines(["*minitvm lacks cuda*"])


def test_assert_prim_expr_equal():
    x = tvm.tir.Var("x", "int32")
    tvm.testing.assert_prim_expr_equal(x * 4 + x, x * 5)
    with pytest.raises(ValueError, match="not equal"):
        tvm.testing.assert_prim_expr_equal(x * 4, x * 5)


def test_features_and_targets():
    assert tvm.testing.requires_llvm and not tvm.testing.requires_gpu
    assert [t for t, _ in tvm.testing.enabled_targets()] == ["llvm"]
    assert tvm.testing.device_enabled("llvm") and not tvm.testing.device_enabled("cuda")
    with pytest.raises(AttributeError, match="no attribute 'not_a_helper'"):
        tvm.testing.not_a_helper  # noqa: B018


def test_assert_allclose_still_numpy_checked():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(8).astype("float32")
    tvm.testing.assert_allclose(a, a.copy())
    with pytest.raises(AssertionError):
        tvm.testing.assert_allclose(a, a + 1)


def test_main_runs_the_calling_file(monkeypatch):
    import minitvm.testing.utils as utils

    seen = []
    monkeypatch.setattr(utils.pytest, "main", lambda args: seen.append(args) or 0)
    monkeypatch.setattr("sys.argv", ["this_file.py", "-k", "one"])
    with pytest.raises(SystemExit) as stop:
        tvm.testing.main()
    assert stop.value.code == 0
    assert seen[0][0] == __file__ and seen[0][-2:] == ["-k", "one"]
