"""Pass, PassInfo, Sequential, PassContext and the ``module_pass`` decorator."""

from __future__ import annotations

import functools
import inspect
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ..ir.deep import run_deep, share_thread_local
from ..ir.module import IRModule

__all__ = ["PassInfo", "Pass", "ModulePass", "Sequential", "PassContext", "module_pass",
           "register_pass_config"]


@dataclass(frozen=True)
class PassInfo:
    """What a pass is called, from which opt_level it runs, and what it needs first."""

    opt_level: int
    name: str
    required: tuple[str, ...] = ()
    traceable: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "required", tuple(self.required or ()))


# -- the context ---------------------------------------------------------------------

_CONFIG_KEYS: dict[str, type] = {}
#: TVM 0.27 spells the TIR options ``tirx.<name>`` (the MLC course's TVM: ``tir.<name>``): one
#: option under two keys, stored and read under the older one
_CONFIG_RENAMES: dict[str, str] = {}


def register_pass_config(key: str, value_type: type = object) -> None:
    """Declare a ``PassContext(config={key: ...})`` option so typos are caught (a ``tir.``
    option answers to TVM 0.27's ``tirx.`` spelling too)."""
    _CONFIG_KEYS[key] = value_type
    if key.startswith("tir."):
        _CONFIG_RENAMES["tirx." + key[4:]] = key


# "tir.instrument_bound_checkers" is TVM's name for "tir.bounds_check"; "tir.enable_debug" is
# registered and read by nothing, in TVM v0.23 as here
for _key, _type in (("tir.bounds_check", bool), ("tir.instrument_bound_checkers", bool),
                    ("tir.disable_vectorize", bool), ("tir.noalias", bool), ("tir.enable_debug", bool)):
    register_pass_config(_key, _type)

#: TVM's TIR options minitvm has no code for: ``key -> (TVM's default, what it does)``.  The
#: default (what minitvm does anyway) is accepted; any other value raises NotImplementedError
#: naming the option, never silently ignored.  TVM 0.27's ``tirx.`` / ``s_tir.`` keys and v0.23's
#: ``tir.`` spelling of each.
_UNIMPLEMENTED: dict[str, tuple[Any, str]] = {
    "tirx.disable_assert": (False, "drop the kernels' assert statements"),
    "tirx.disable_cse_tir": (False, "skip TIR common-subexpression elimination, which minitvm's pipeline does not run"),
    "tirx.disable_storage_rewrite": (False, "skip StorageRewrite, which minitvm's pipeline does not run"),
    "tirx.debug_keep_trivial_loop": (False, "keep loops of extent 1"),
    "tirx.enable_buffer_level_predication": (False, "predicate vectorized buffer accesses (scalable vectors)"),
    "tirx.enable_fast_math": (False, "lower math intrinsics to fast approximations"),
    "tirx.add_lower_pass": ([], "insert user passes into the TIR lowering pipeline"),
    "tirx.use_async_copy": (False, "asynchronous copies on a GPU"),
    "tirx.merge_static_smem": (False, "merge static shared memory on a GPU"),
    "tirx.instrument_lwp": (False, "light-weight profiling instrumentation"),
    "tirx.vtcm_capacity": (0, "Hexagon VTCM capacity"),
    "tirx.s_tir.ldg32": (False, "CUDA ldg32 loads"),
    "tirx.RemoveNoOp": ({}, "RemoveNoOp's options"),
    "tirx.StmtSimplify": ({}, "StmtSimplify's options"),
    "tirx.UnrollLoop": ({}, "UnrollLoop's options"),
    "s_tir.HoistExpression": ({}, "HoistExpression's options"),
    "s_tir.HoistIfThenElse": ({}, "HoistIfThenElse's options"),
    "s_tir.InjectDoubleBuffer": ({}, "InjectDoubleBuffer's options"),
    "s_tir.LoopPartition": ({}, "LoopPartition's options"),
    "s_tir.instr_siblings": (False, "light-weight profiling of sibling loops"),
    "s_tir.lwp_disable_func_prof": (False, "light-weight profiling of whole functions"),
    "s_tir.lwp_max_depth": (0, "light-weight profiling depth"),
    "s_tir.lwp_min_height": (0, "light-weight profiling height"),
    "s_tir.reset_start_id": (False, "light-weight profiling ids"),
}
_UNIMPLEMENTED.update({"tir." + k.split(".", 1)[1]: v for k, v in list(_UNIMPLEMENTED.items())})


def _is_default(value: Any, default: Any) -> bool:
    if isinstance(default, bool):
        return value is False or value == 0
    if isinstance(default, (list, dict)):
        return not value
    return value == default


def _config_key(key: str) -> str:
    """The key minitvm stores an option under (``tirx.noalias`` is ``tir.noalias``)."""
    return _CONFIG_RENAMES.get(key, key)


def _checked_config(config: dict[str, Any]) -> dict[str, Any]:
    """The options under their stored keys, each known and of its type; an option minitvm
    lacks is refused unless it has TVM's default value."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key in _UNIMPLEMENTED:
            default, what = _UNIMPLEMENTED[key]
            if not _is_default(value, default):
                raise NotImplementedError(f"PassContext: config {key!r} ({what}) is not implemented in minitvm; "
                                          f"only its default {default!r} is accepted")
            continue
        stored = _config_key(key)
        if stored in out:
            raise ValueError(f"PassContext: config gives {stored!r} twice (as {key!r} too: one option)")
        if stored not in _CONFIG_KEYS:
            known = ", ".join(sorted(_CONFIG_KEYS))
            raise ValueError(f"PassContext: unknown config key {key!r}; known keys: {known}")
        want = _CONFIG_KEYS[stored]
        if want is not object and not isinstance(value, want):
            raise TypeError(f"PassContext: config {key!r} expects {want.__name__}, got {type(value).__name__}")
        out[stored] = value
    return out


class PassContext:
    """Settings for the passes run inside ``with PassContext(...):``.

    ``opt_level`` skips passes whose level is higher; ``required_pass`` and
    ``disabled_pass`` force a pass on or off by name; ``instruments`` see every pass.
    """

    _local = share_thread_local(threading.local())

    def __init__(self, opt_level: int = 2, required_pass: Iterable[str] | None = None,
                 disabled_pass: Iterable[str] | None = None, instruments: Iterable[Any] | None = None,
                 config: dict[str, Any] | None = None):
        if not isinstance(opt_level, int) or not 0 <= opt_level <= 4:
            raise ValueError(f"PassContext: opt_level must be an int from 0 to 4, got {opt_level!r}")
        self.opt_level = opt_level
        self.required_pass = frozenset(required_pass or ())
        self.disabled_pass = frozenset(disabled_pass or ())
        self.instruments = list(instruments or ())
        self.config = _checked_config(dict(config or {}))
        self._entered = False
        self._borrowed_instruments = False  # (see with_config)

    # context stack ------------------------------------------------------------------
    @classmethod
    def _stack(cls) -> list["PassContext"]:
        if not hasattr(cls._local, "stack"):
            cls._local.stack = []
        return cls._local.stack

    @classmethod
    def current(cls) -> "PassContext":
        stack = cls._stack()
        return stack[-1] if stack else _DEFAULT

    def __enter__(self) -> "PassContext":
        self._stack().append(self)
        for inst in () if self._borrowed_instruments else self.instruments:
            _call(inst, "enter_pass_ctx")
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            for inst in () if self._borrowed_instruments else self.instruments:
                _call(inst, "exit_pass_ctx")
        finally:
            self._stack().pop()

    def with_config(self, config: dict[str, Any]) -> "PassContext":
        """This context with ``config``'s options added, to enter around one step of a pass (a
        build inside FoldConstant): the same instruments watch it, and entering it does not
        enter them a second time."""
        ctx = PassContext(self.opt_level, self.required_pass, self.disabled_pass, self.instruments,
                          {**self.config, **config})
        ctx._borrowed_instruments = True
        return ctx

    def override_instruments(self, instruments: Iterable[Any]) -> None:
        for inst in self.instruments:
            _call(inst, "exit_pass_ctx")
        self.instruments = list(instruments)
        for inst in self.instruments:
            _call(inst, "enter_pass_ctx")

    def get_config(self, key: str, default: Any = None) -> Any:
        return self.config.get(_config_key(key), default)

    # deciding and running ---------------------------------------------------------------
    def pass_enabled(self, info: PassInfo) -> bool:
        if info.name in self.disabled_pass:
            return False
        if info.name in self.required_pass:
            return True
        return self.opt_level >= info.opt_level

    def _should_run(self, mod: IRModule, info: PassInfo) -> bool:
        return all(_call(inst, "should_run", mod, info, default=True) is not False
                   for inst in self.instruments)

    def _before(self, mod: IRModule, info: PassInfo) -> None:
        for inst in self.instruments:
            _call(inst, "run_before_pass", mod, info)

    def _after(self, mod: IRModule, info: PassInfo) -> None:
        for inst in self.instruments:
            _call(inst, "run_after_pass", mod, info)

    def __repr__(self) -> str:
        return (f"PassContext(opt_level={self.opt_level}, required={sorted(self.required_pass)}, "
                f"disabled={sorted(self.disabled_pass)}, config={self.config})")


def _call(inst: Any, hook: str, *args: Any, default: Any = None) -> Any:
    fn = getattr(inst, hook, None)
    return default if fn is None else fn(*args)


_DEFAULT = PassContext()


# -- passes ---------------------------------------------------------------------------


class Pass:
    """Base class: call a pass on an IRModule to get the transformed module."""

    info: PassInfo

    def __call__(self, mod: IRModule) -> IRModule:
        # passes recurse once per nesting level of the IR: on a deep thread (minitvm.ir.deep)
        return run_deep(self._call, mod)

    def _call(self, mod: IRModule) -> IRModule:
        if not isinstance(mod, IRModule):
            raise TypeError(f"pass {self.info.name} expects an IRModule, got {type(mod).__name__}")
        ctx = PassContext.current()
        if not ctx._should_run(mod, self.info):
            return mod
        ctx._before(mod, self.info)
        out = self.transform(mod, ctx)
        if not isinstance(out, IRModule):
            raise TypeError(f"pass {self.info.name} returned {type(out).__name__}, expected an IRModule")
        ctx._after(out, self.info)
        return out

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:  # pragma: no cover
        raise NotImplementedError

    @property
    def name(self) -> str:
        return self.info.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.info.name}, opt_level={self.info.opt_level})"


class ModulePass(Pass):
    """A pass over the whole module, from a function ``(mod, ctx) -> mod``."""

    def __init__(self, fn: Callable[[IRModule, PassContext], IRModule], info: PassInfo):
        self._fn = fn
        self.info = info

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return self._fn(mod, ctx)


class Sequential(Pass):
    """Passes run in order; each is skipped if the context's opt_level is below its own
    (unless required), and a pass's ``required`` passes run first."""

    def __init__(self, passes: Iterable[Pass] | None = None, opt_level: int = 0,
                 name: str = "sequential", required: Iterable[str] | None = None):
        self.passes = list(passes or [])
        for p in self.passes:
            if not isinstance(p, Pass):
                raise TypeError(f"Sequential: {p!r} is not a Pass")
        self.info = PassInfo(opt_level, name, tuple(required or ()))

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        by_name = {p.info.name: p for p in self.passes}
        for p in self.passes:
            if not ctx.pass_enabled(p.info):
                continue
            for req in p.info.required:
                if req in by_name and req != p.info.name:
                    mod = by_name[req](mod)
            mod = p(mod)
        return mod

    def __len__(self) -> int:
        return len(self.passes)

    def __repr__(self) -> str:
        inner = ", ".join(p.info.name for p in self.passes)
        return f"Sequential({self.info.name}: [{inner}])"


def _make_pass_decorator(wrap: Callable[[Any, PassInfo], Pass], kind: str):
    """Build a decorator usable as ``@deco``, ``@deco(opt_level=..)`` on a function or a class."""

    def decorator(pass_func: Any = None, opt_level: int = 0, name: str | None = None,
                  required: Iterable[str] | None = None, traceable: bool = False):
        def create(fn_or_cls: Any) -> Any:
            info = PassInfo(opt_level, name or fn_or_cls.__name__, tuple(required or ()), traceable)
            if inspect.isclass(fn_or_cls):
                cls = fn_or_cls

                @functools.wraps(cls, updated=())
                def make(*args: Any, **kwargs: Any) -> Pass:
                    inst = cls(*args, **kwargs)
                    method = getattr(inst, f"transform_{kind}", None)
                    if method is None:
                        raise TypeError(f"{cls.__name__} needs a transform_{kind}(...) method")
                    return wrap(method, info)

                return make
            return wrap(fn_or_cls, info)

        if pass_func is None:
            return create
        if not callable(pass_func):
            raise TypeError(f"{kind}_pass decorates a function or a class, got {pass_func!r}")
        return create(pass_func)

    return decorator


module_pass = _make_pass_decorator(ModulePass, "module")
module_pass.__doc__ = """Make a module pass: ``@module_pass(opt_level=0, name="MyPass")`` on
``def f(mod, ctx) -> mod`` or on a class with ``transform_module(self, mod, ctx)``."""
