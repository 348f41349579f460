"""TVM's pytest helpers (``tvm.testing.parameter``, ``fixture``, ``parametrize_targets``, the
``requires_*`` marks, ``CompareBeforeAfter``, ``main``), so test files written against TVM's
``tvm.testing`` run on minitvm.  minitvm runs on the CPU only: ``llvm`` is the one enabled
target, and a test marked as needing a GPU (or any other feature this machine lacks) is skipped
with the feature's name, as TVM skips it on a machine without one.

The plugin that turns these into parametrized tests is ``minitvm.testing.plugin``
(``pytest -p minitvm.testing.plugin``, as TVM's ``pytest_plugins = ["tvm.testing.plugin"]``).
"""

from __future__ import annotations

import inspect
import itertools
import platform
import sys
import textwrap
from typing import Any, Callable

import pytest

from ..arith import Analyzer
from ..ir import IRModule, assert_structural_equal
from ..ir.transform import Pass
from ..runtime import device
from ..script import from_source
from ..tir import IntImm, PrimFunc
from .gradcheck import check_numerical_grads  # noqa: F401 - tvm.testing.utils.check_numerical_grads

#: the targets a test parametrized over ``target`` runs on (TVM reads TVM_TEST_TARGETS)
ENABLED_TARGETS = ("llvm",)
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i686")
_AARCH64 = platform.machine().lower() in ("aarch64", "arm64")


class Feature:
    """A capability a test may require (TVM's ``tvm.testing.utils.Feature``): used as a
    decorator, it skips the test when the capability is missing and says which one."""

    def __init__(self, name: str, long_name: str | None = None, *, enabled: bool = False) -> None:
        self.name, self.long_name, self.enabled = name, long_name or name, enabled

    def marks(self, support_required: str = "compile-and-run") -> list[Any]:
        reason = f"minitvm lacks {self.long_name} (CPU only)"
        return [getattr(pytest.mark, self.name), pytest.mark.skipif(not self.enabled, reason=reason)]

    def __call__(self, func: Callable | None = None, *, support_required: str = "compile-and-run"):
        if func is None:
            return lambda f: self(f, support_required=support_required)
        for mark in self.marks(support_required):
            func = mark(func)
        return func

    def __bool__(self) -> bool:
        return self.enabled


_FEATURES = {
    "llvm": True, "x86": _X86, "aarch64": _AARCH64, "gpu": False, "multi_gpu": False,
    "cuda": False, "tensorcore": False, "cudnn": False, "cublas": False, "nccl": False,
    "nvptx": False, "cudagraph": False, "adreno_opencl": False, "opencl": False, "rocm": False,
    "matrixcore": False, "hipblas": False, "metal": False, "vulkan": False, "openclml": False,
    "nnapi": False, "cutlass": False, "rpc": False, "libtorch": False, "mrvl": False,
    "hexagon": False, "aprofile_aem_fvp": False, "arm_dot": False, "arm_fp16": False,
    "aarch64_sve": False, "aarch64_sme": False, "x86_vnni": False, "x86_avx512": False,
    "x86_amx": False, "webgpu": False,
}
for _name, _on in _FEATURES.items():
    globals()[f"requires_{_name}"] = Feature(_name, enabled=_on)
uses_gpu = requires_gpu  # noqa: F821  (defined by the loop above)


def _skip(reason: str) -> Callable:
    return pytest.mark.skip(reason=reason)


def requires_llvm_minimum_version(major_version: int) -> Callable:
    return requires_llvm  # noqa: F821  (minitvm's llvmlite is recent enough for every test)


def requires_cuda_compute_version(major_version: int, minor_version: int = 0) -> Callable:
    return _skip("minitvm has no CUDA device")


def requires_nvcc_version(major_version: int, minor_version: int = 0, release_version: int = 0) -> Callable:
    return _skip("minitvm has no nvcc")


def is_ampere_or_newer() -> bool:
    return False


def skip_if_32bit(reason: str) -> Callable:
    return pytest.mark.skipif(sys.maxsize < 2**32, reason=reason)


def requires_package(*packages: str) -> Callable:
    """Skip the test unless every named Python package imports."""
    import importlib.util

    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    return pytest.mark.skipif(bool(missing), reason=f"missing package(s): {', '.join(missing)}")


def enabled_targets() -> list[tuple[str, Any]]:
    """(target string, device) for each target this build runs: llvm on the CPU."""

    return [(t, device(t)) for t in ENABLED_TARGETS]


def device_enabled(target: Any) -> bool:
    kind = target if isinstance(target, str) else target.kind.name
    return kind.split()[0] in ENABLED_TARGETS


def target_requirement(target: Any) -> list[Any]:
    """The marks a parametrization over ``target`` carries: skip the kinds minitvm cannot run."""
    kind = (target if isinstance(target, str) else target.kind.name).split()[0]
    feature = {"llvm": "llvm", "c": "llvm"}.get(kind, kind)
    return globals()[f"requires_{feature}"].marks() if f"requires_{feature}" in globals() else \
        [pytest.mark.skipif(not device_enabled(kind), reason=f"minitvm has no {kind} target")]


def parametrize_targets(*args: Any) -> Callable:
    """Run the test once per target given (or per enabled target when called bare)."""
    if len(args) == 1 and callable(args[0]):
        return parametrize_targets()(args[0])
    targets = list(args) or list(ENABLED_TARGETS)
    return pytest.mark.parametrize("target", targets, scope="session")


def exclude_targets(*args: str) -> Callable:
    def wraps(func: Callable) -> Callable:
        func.tvm_excluded_targets = list(args)
        return func
    return wraps


def known_failing_targets(*args: str) -> Callable:
    def wraps(func: Callable) -> Callable:
        func.tvm_known_failing_targets = list(args)
        return func
    return wraps


def parameter(*values: Any, ids: Any = None, by_dict: dict | None = None) -> Any:
    """A parametrized fixture: every test taking it runs once per value."""
    if by_dict is not None:
        if values or ids:
            raise RuntimeError("parameter(by_dict=...) takes no positional values or ids")
        ids, values = zip(*by_dict.items())

    @pytest.fixture(params=values, ids=ids, scope="session")
    def as_fixture(*_cls: Any, request: Any) -> Any:
        return request.param

    return as_fixture


_group_counter = itertools.count()


def parameters(*value_sets: Any, ids: Any = None) -> list[Any]:
    """Several fixtures varied together: one test per value set, not per combination (the
    plugin parametrizes them as one group)."""
    group = next(_group_counter)
    outputs = []
    for param_values in zip(*value_sets):
        def fixture_func(*_cls: Any, request: Any) -> Any:
            return request.param
        fixture_func.parametrize_group = group
        fixture_func.parametrize_values = param_values
        fixture_func.parametrize_ids = ids
        outputs.append(pytest.fixture(fixture_func))
    return outputs


def fixture(func: Callable | None = None, *, cache_return_value: bool = False) -> Any:
    """A pytest fixture (``cache_return_value`` makes it computed once per session)."""
    def wraps(f: Callable) -> Any:
        return pytest.fixture(f, scope="session" if cache_return_value else "function")
    return wraps if func is None else wraps(func)


def _mark_parameterizations(*params: Any, marker_fn: Callable, reason: str) -> Callable:
    params_set = {str(p) for p in params}

    def decorator(func: Callable) -> Callable:
        func.tvm_marked_parameterizations = (params_set, marker_fn(reason=reason))
        return func
    return decorator


def xfail_parameterizations(*xfail_params: Any, reason: str) -> Callable:
    return _mark_parameterizations(*xfail_params, marker_fn=pytest.mark.xfail, reason=reason)


def skip_parameterizations(*skip_params: Any, reason: str) -> Callable:
    return _mark_parameterizations(*skip_params, marker_fn=pytest.mark.skip, reason=reason)


def assert_prim_expr_equal(lhs: Any, rhs: Any) -> None:
    """Assert two integer expressions are equal by simplifying their difference to 0."""
    res = Analyzer().simplify(lhs - rhs)
    if not (isinstance(res, IntImm) and res.value == 0):
        raise ValueError(f"{lhs} and {rhs} are not equal")


def main() -> None:
    """``if __name__ == "__main__": tvm.testing.main()``: run the calling file under pytest."""
    test_file = inspect.getsourcefile(sys._getframe(1))
    sys.exit(pytest.main([test_file, "-p", "minitvm.testing.plugin", *sys.argv[1:]]))


def is_fixture(obj: Any) -> bool:
    """Whether ``obj`` is what ``pytest.fixture`` returned (its type differs across pytest)."""
    from _pytest import fixtures

    kind = getattr(fixtures, "FixtureFunctionDefinition", None)
    return (kind is not None and isinstance(obj, kind)) or hasattr(obj, "_pytestfixturefunction")


def _fixture_function(fixture: Any) -> Callable:
    """The plain function a pytest fixture object wraps (pytest >= 8 keeps it as
    ``_get_wrapped_function()``; older ones decorate the function itself)."""
    getter = getattr(fixture, "_get_wrapped_function", None)
    return getter() if getter is not None else fixture


class CompareBeforeAfter:
    """A before/after test of a transform (TVM's ``tvm.testing.CompareBeforeAfter``): a subclass
    names ``transform`` (a Pass, a method returning one, or a fixture), ``before`` / ``Before``
    and ``expected`` / ``Expected`` (a PrimFunc or IRModule, an undecorated TVMScript function,
    a class of them, a method or fixture returning one, or an Exception class the transform
    must raise); ``test_compare`` applies the transform and compares structurally."""

    check_well_formed: bool = True

    def __init_subclass__(cls) -> None:
        for names, normalize in ((("before", "Before"), cls._normalize_before),
                                 (("expected", "Expected"), cls._normalize_expected)):
            given = [n for n in names if n in cls.__dict__ or hasattr(cls, n)]
            if given:
                setattr(cls, names[0], normalize(getattr(cls, given[0]), names[0]))
        if hasattr(cls, "transform"):
            cls.transform = cls._normalize_transform(cls.transform)

    @classmethod
    def _normalize_ir_module(cls, func: Any, name: str) -> Any:

        def parse(self: Any, f: Callable) -> PrimFunc:
            source = "@T.prim_func\n" + textwrap.dedent(inspect.getsource(f))
            return from_source(source, check_well_formed=self.check_well_formed)

        def inner(self: Any) -> Any:
            if isinstance(func, (PrimFunc, IRModule)):
                return func
            if cls._is_method(func):
                return func(self)
            if inspect.isclass(func):
                return IRModule({name: (f if isinstance(f, PrimFunc) else parse(self, f))
                                 .with_attr("global_symbol", name)
                                 for name, f in func.__dict__.items() if not name.startswith("_")})
            return parse(self, func)

        return pytest.fixture(inner, name=name)

    @classmethod
    def _normalize_before(cls, func: Any, name: str) -> Any:
        return func if is_fixture(func) else cls._normalize_ir_module(func, name)

    @classmethod
    def _normalize_expected(cls, func: Any, name: str) -> Any:
        if is_fixture(func):
            return func
        if inspect.isclass(func) and issubclass(func, Exception):
            return pytest.fixture(lambda self: func, name="expected")
        return cls._normalize_ir_module(func, name)

    @classmethod
    def _normalize_transform(cls, transform: Any) -> Any:

        def apply(module_pass: Callable) -> Callable:
            def inner(obj: Any) -> Any:
                if isinstance(obj, IRModule):
                    return module_pass(obj)
                if isinstance(obj, PrimFunc):
                    return module_pass(IRModule({"main": obj}))["main"]
                raise TypeError(f"expected an IRModule or PrimFunc, got {type(obj)}")
            return inner

        if is_fixture(transform):
            if not hasattr(cls, "_transform_orig"):  # a subclass keeps its base's fixture, as TVM's
                # registered under the attribute's own name (a fixture named "transform" here
                # would shadow the wrapper below and leave `_transform_orig` undefined)
                cls._transform_orig = pytest.fixture(_fixture_function(transform), name="_transform_orig")
            return pytest.fixture(lambda self, _transform_orig: apply(_transform_orig), name="transform")
        if isinstance(transform, Pass):
            return pytest.fixture(lambda self: apply(transform), name="transform")
        if cls._is_method(transform):
            return pytest.fixture(lambda self: apply(transform(self)), name="transform")
        raise TypeError("CompareBeforeAfter.transform: expected a Pass, or a method returning one")

    @staticmethod
    def _is_method(func: Any) -> bool:
        return callable(func) and "self" in inspect.signature(func).parameters

    def test_compare(self, before: Any, expected: Any, transform: Callable) -> None:
        if inspect.isclass(expected) and issubclass(expected, Exception):
            with pytest.raises(expected):
                after = transform(before)
                pytest.fail(f"expected {expected.__name__} from the transform, got\n{after.script()}")
        elif isinstance(expected, (PrimFunc, IRModule)):
            after = transform(before)
            if isinstance(after, PrimFunc):
                after = after.with_attr("global_symbol", "main")
                expected = expected.with_attr("global_symbol", "main")
            try:
                assert_structural_equal(after, expected)
            except ValueError as err:
                raise ValueError(f"the transform's result differs from the expected one:\n"
                                 f"{after.script()}\n{expected.script()}") from err
        else:
            raise TypeError(f"CompareBeforeAfter: `expected` must be a PrimFunc, IRModule or "
                            f"Exception class, got {type(expected)}")
