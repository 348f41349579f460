"""The trace: every primitive a schedule applied, with the random decisions it made.

As in TVM, a trace is a list of :class:`Instruction` (a kind such as ``"Split"``, its input
random variables, its attributes and its outputs) plus a map from sampling instructions to
their decisions.  It prints as Python that replays it (``as_python``), serializes to a
JSON-style list (``as_json`` / ``Trace.apply_json_to_schedule``) and replays onto another
schedule (``apply_to_schedule``), reusing the recorded decisions.

Era: a trace prints in the era of TVM's names its schedule's functions were written in (see
:mod:`minitvm.eras`): ``sch.get_sblock`` under ``def apply_trace(sch: s_tir.Schedule)`` and the
kind ``"GetSBlock"`` in JSON for TVM 0.27's, ``sch.get_block``, ``tir.Schedule`` and ``"GetBlock"``
for the MLC course's.  Both spellings replay: a lookup is one method and one kind under two names.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ...eras import MLC_ERA, TODAY_ERA, default_era, era_of
from ...ir.node import node, script_printer
from ..expr import Var
from ..functor import post_order_visit, substitute
from ..index_map import IndexMap
from ..lambda_text import parse_index_lambda

__all__ = ["BlockRV", "LoopRV", "ExprRV", "Instruction", "InstructionKind", "Trace", "random_vars_in"]


def _func_name(f: Any) -> str | None:
    return f if f is None or isinstance(f, str) else f.name_hint  # a GlobalVar gives its name


class _RV:
    def same_as(self, other: Any) -> bool:
        return self is other


class BlockRV(_RV):
    """A reference to a block (by name, in one function) that survives schedule steps."""

    def __init__(self, name: str | None = None, func_name: Any = None):
        self.name, self.func_name = name, _func_name(func_name)

    def __repr__(self) -> str:
        return f"BlockRV({self.name!r})"


class LoopRV(_RV):
    """A reference to a loop, by its loop variable, in one function."""

    def __init__(self, loop_var: Any = None, func_name: Any = None):
        self.loop_var, self.func_name = loop_var, _func_name(func_name)

    def __repr__(self) -> str:
        return f"LoopRV({getattr(self.loop_var, 'name', None)!r})"


@node(binds=True)
class ExprRV(Var):
    """A sampled integer (a tile size, a choice): a variable whose value ``sch.get`` reads.

    It can stand in an expression (``sch.split(loop, factors=[None, v])``); the trace
    records the decision behind it so a replay samples the same value.
    """

    def __int__(self) -> int:
        value = getattr(self, "_value", None)
        if value is None:
            raise TypeError(f"random variable {self.name} has no value here; read it with sch.get(rv)")
        return value

    __index__ = __int__


RV_TYPES = (BlockRV, LoopRV, ExprRV)

#: how each era spells what changed between them: the module a trace's header imports, and the
#: (MLC course's name -> TVM 0.27's) of instruction kinds and schedule methods
_ERA_MODULE = {MLC_ERA: "tir", TODAY_ERA: "s_tir"}
_TODAY_KIND_NAMES = {"GetBlock": "GetSBlock"}
_TODAY_METHODS = {"get_block": "get_sblock"}


def _kind_name(kind: "InstructionKind", era: str) -> str:
    return _TODAY_KIND_NAMES.get(kind.name, kind.name) if era == TODAY_ERA else kind.name


def _method_name(kind: "InstructionKind", era: str) -> str:
    return _TODAY_METHODS.get(kind.method, kind.method) if era == TODAY_ERA else kind.method


# -- instruction kinds ----------------------------------------------------------------------


@dataclass(frozen=True)
class InstructionKind:
    """What a kind of instruction takes and how it prints.

    ``inputs`` name the instruction's inputs in order (random variables and values that may
    hold them); a name starting with ``*`` takes the rest of the inputs and prints them as
    positional arguments (``fuse(l1, l2)``), one starting with ``+`` takes the rest and prints
    them as one keyword list (``factors=[v1, v2]``).  ``attrs`` are plain values.  ``output``
    is ``"single"`` (``b1 = ...``), ``"list"`` (``l1, l2 = ...``; ``l1, = ...``) or ``"none"``.
    """

    name: str
    method: str
    inputs: tuple[str, ...] = ()
    attrs: tuple[str, ...] = ()
    output: str = "none"
    decision: bool = False
    order: tuple[str, ...] | None = None       # printing order (@primitive: the signature's)
    omit_empty: tuple[str, ...] = ()           # printed only when not empty
    is_pure: bool = False                       # no effect but its outputs (simplified() may drop it)
    is_postproc: bool = False
    #: the era whose name it was looked up by, where the eras spell it differently ("GetBlock" /
    #: "GetSBlock"): an instruction made with it prints in that era
    era: str | None = field(default=None, compare=False)

    def same_as(self, other: Any) -> bool:
        return isinstance(other, InstructionKind) and _KINDS.get(other.name) is _KINDS.get(self.name)

    @staticmethod
    def get(name: str) -> "InstructionKind":
        """The kind registered under ``name`` (TVM's name, e.g. ``"Split"``, or the method name)."""
        kind = _KINDS.get(name) or _BY_METHOD.get(name) or _TODAY_ALIASES.get(name)
        if kind is None:
            raise ValueError(f"no instruction kind named {name!r}")
        if kind.name in _TODAY_KIND_NAMES:  # a renamed kind: the spelling says the era
            era = TODAY_ERA if name in _TODAY_ALIASES else MLC_ERA
            key = (kind.name, era)
            if key not in _ERA_VIEWS:
                _ERA_VIEWS[key] = replace(kind, era=era)
            return _ERA_VIEWS[key]
        return kind

    def param_names(self) -> tuple[str, ...]:
        return self.order or tuple(n.lstrip("*+") for n in self.inputs) + self.attrs

    def split_inputs(self, inputs: list) -> dict[str, Any]:
        """The instruction's inputs by parameter name (a ``*``/``+`` name gets the rest)."""
        out: dict[str, Any] = {}
        for i, name in enumerate(self.inputs):
            if name[0] in "*+":
                out[name[1:]] = list(inputs[i:])
                break
            out[name] = inputs[i] if i < len(inputs) else None
        return out

    def apply(self, sch: Any, inputs: list, attrs: list, decision: Any) -> list:
        """Run the instruction on ``sch`` (inputs already translated); return its outputs."""
        named = self.split_inputs(inputs)
        named.update(zip(self.attrs, attrs))
        args: list = []
        kwargs: dict[str, Any] = {}
        for name in self.inputs:
            if name.startswith("*"):
                args = list(named.pop(name[1:]))
        for name, value in named.items():
            kwargs[name] = _from_json_value(name, value)
        if self.decision:
            kwargs["decision"] = decision
        result = getattr(sch, self.method)(*args, **kwargs)
        if self.output == "none":
            return []
        if self.output == "single":
            return [result]
        return list(result)


_KINDS: dict[str, InstructionKind] = {}
_BY_METHOD: dict[str, InstructionKind] = {}
_TODAY_ALIASES: dict[str, InstructionKind] = {}  # TVM 0.27's names of kinds it renamed
_ERA_VIEWS: dict[tuple[str, str], InstructionKind] = {}  # a renamed kind as looked up in one era


def register_inst_kind(kind: InstructionKind) -> InstructionKind:
    """Make ``kind`` known to traces (by its TVM name and its method name).  Each primitive's
    ``@primitive`` declaration in schedule.py calls this (see primitive.py)."""
    _KINDS[kind.name] = kind
    _BY_METHOD[kind.method] = kind
    if kind.name in _TODAY_KIND_NAMES:
        _TODAY_ALIASES[_TODAY_KIND_NAMES[kind.name]] = _TODAY_ALIASES[_TODAY_METHODS[kind.method]] = kind
    return kind


class Instruction:
    """One step: ``kind`` applied to ``inputs`` (random variables, values) and ``attrs``.

    ``era`` (minitvm's own) is the era of names it prints in; None: TVM 0.27's."""

    def __init__(self, kind: InstructionKind | str, inputs: list | None = None, attrs: list | None = None,
                 outputs: list | None = None, era: str | None = None):
        self.kind = kind if isinstance(kind, InstructionKind) else InstructionKind.get(kind)
        self.inputs = list(inputs or [])
        self.attrs = list(attrs or [])
        self.outputs = list(outputs or [])
        self.era = era or self.kind.era

    def same_as(self, other: Any) -> bool:
        return self is other

    def __str__(self) -> str:
        """The call as Python, every random variable shown as ``_`` (as TVM prints one)."""
        return _inst_python(self, _Namer(anonymous=True), None, self.era or default_era())

    __repr__ = __str__


# -- printing values --------------------------------------------------------------------------


def _lambda_text(fn: Any) -> str:
    """An index map as ``lambda i0, i1: (...)`` text, by applying it to fresh variables."""
    import inspect

    if isinstance(fn, IndexMap):
        return repr(fn)
    names = list(inspect.signature(fn).parameters)
    params = [Var(n) for n in names]
    result = fn(*params)
    result = result if isinstance(result, (tuple, list)) else (result,)
    body = ", ".join(e.script() if hasattr(e, "script") else repr(e) for e in result)
    return f"lambda {', '.join(names)}: ({body},)" if len(result) == 1 else f"lambda {', '.join(names)}: ({body})"


def _eval_lambda(text: str) -> Callable:
    """An index map back from the text :func:`_lambda_text` printed: parsed, never evaluated
    (the text comes from a file; only arithmetic on the lambda's parameters is admitted)."""
    return parse_index_lambda(text)


def _py_value(x: Any, names: dict[int, str]) -> str:
    """``x`` as Python source (strings in double quotes, as TVM prints them)."""
    if isinstance(x, RV_TYPES):
        return names.get(id(x), "_")
    if x is None or isinstance(x, bool):
        return repr(x)
    if isinstance(x, int):
        return str(int(x))
    if isinstance(x, float):
        text = f"{x:.17g}"  # (an integral float keeps its point: replayed, -1.0 must not become an int)
        return text if any(c in text for c in ".enia") else text + ".0"
    if isinstance(x, str):
        return '"' + x.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(x, list):
        return "[" + ", ".join(_py_value(e, names) for e in x) + "]"
    if isinstance(x, tuple):
        inner = ", ".join(_py_value(e, names) for e in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{_py_value(k, names)}: {_py_value(v, names)}" for k, v in x.items()) + "}"
    if callable(x) or _is_index_map(x):
        return _lambda_text(x)
    if hasattr(x, "value") and not hasattr(x, "shape"):  # IntImm / FloatImm / StringImm
        return _py_value(bool(x.value) if getattr(x, "dtype", "") == "bool" else x.value, names)
    return x.script() if hasattr(x, "script") else repr(x)


def _is_index_map(x: Any) -> bool:
    return isinstance(x, IndexMap)


def _json_value(x: Any) -> Any:
    """An attribute as JSON (callables, i.e. index maps, as their lambda text)."""
    if isinstance(x, (list, tuple)):
        return [_json_value(e) for e in x]
    if isinstance(x, dict):
        return {k: _json_value(v) for k, v in x.items()}
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if callable(x) or _is_index_map(x):
        return _lambda_text(x)
    if hasattr(x, "value"):
        return x.value
    if hasattr(x, "script"):  # a function attribute that prints as a lambda (gen_new_ranges)
        return x.script()
    raise TypeError(f"cannot write {x!r} into a trace's JSON")


def _from_json_value(name: str, x: Any) -> Any:
    """Undo what JSON loses: index maps come back from their text, buffer pairs as tuples."""
    if name in ("index_map", "pad_value", "gen_new_ranges") and isinstance(x, str) and x.startswith("lambda"):
        return _eval_lambda(x)
    if name == "buffer" and isinstance(x, list):
        return tuple(x)
    return x


def _outputs_text(kind: InstructionKind, outs: list[str]) -> str | None:
    if kind.output == "single":
        return outs[0] if outs else "_"
    if kind.output == "list":
        if not outs:
            return None
        return outs[0] + "," if len(outs) == 1 else ", ".join(outs)
    return None


def _inst_python(inst: Instruction, namer: "_Namer", decision: Any, era: str) -> str:
    """One instruction as a Python statement (naming its outputs with ``namer``)."""
    kind = inst.kind
    values = kind.split_inputs(inst.inputs)
    values.update(zip(kind.attrs, inst.attrs))
    args = []
    positional = {n[1:] for n in kind.inputs if n.startswith("*")}
    for name in kind.param_names():
        value = values.get(name)
        if name in positional:
            args += [_py_value(v, namer.names) for v in value]
        elif name in kind.omit_empty and not value:
            continue
        else:
            args.append(f"{name}={_py_value(value, namer.names)}")
    if kind.decision and decision is not None:
        args.append(f"decision={_py_value(decision, namer.names)}")
    outs = _outputs_text(kind, [namer.add(o) for o in inst.outputs])
    call = f"sch.{_method_name(kind, era)}({', '.join(args)})"
    return f"{outs} = {call}" if outs else call


class _Namer:
    """Names random variables as TVM does: a kind letter and a running count (b0, l1, v2)."""

    def __init__(self, anonymous: bool = False) -> None:
        self.names: dict[int, str] = {}
        self.anonymous = anonymous

    def add(self, rv: Any) -> str:
        if rv is None or self.anonymous:
            name = "_"
        else:
            prefix = "b" if isinstance(rv, BlockRV) else "l" if isinstance(rv, LoopRV) else "v"
            name = f"{prefix}{len(self.names)}"
        self.names[id(rv)] = name
        return name

    def input(self, x: Any) -> Any:
        """An input as JSON: random variables by name, strings quoted, None as "None"."""
        if x is None:
            return "None"
        if isinstance(x, RV_TYPES):
            if id(x) not in self.names:
                raise ValueError(f"random variable {x!r} is not defined by an earlier instruction")
            return self.names[id(x)]
        if isinstance(x, str):
            return f'"{x}"'
        if isinstance(x, (list, tuple)):
            return [self.input(e) for e in x]
        return _json_value(x)


class Trace:
    """The instructions in order and the decisions of the sampling ones.

    ``str(trace)`` is a Python function ``apply_trace(sch)`` that replays it.  ``era``
    (minitvm's own; a schedule sets its functions') chooses the names it prints with: None, TVM
    0.27's.
    """

    def __init__(self, insts: list[Instruction] | None = None, decisions: dict | None = None,
                 era: str | None = None) -> None:
        self.insts: list[Instruction] = list(insts or [])
        self.decisions: dict[Instruction, Any] = dict(decisions or {})
        # a trace put together by hand prints in the era its instructions were spelled in
        self.era = era or era_of({inst.era for inst in self.insts if inst.era})

    @property
    def _era(self) -> str:
        return self.era or default_era()

    # -- building ------------------------------------------------------------------------
    def append(self, inst: Instruction, decision: Any = None) -> None:
        self.insts.append(inst)
        if decision is not None:
            self.decisions[inst] = decision

    def pop(self) -> Instruction | None:
        if not self.insts:
            return None
        inst = self.insts.pop()
        self.decisions.pop(inst, None)
        return inst

    def get_decision(self, inst: Instruction) -> Any:
        return self.decisions.get(inst)

    def copy(self) -> "Trace":
        return Trace(self.insts, self.decisions, self.era)

    def __len__(self) -> int:
        return len(self.insts)

    def _kept(self, remove_postproc: bool) -> list[Instruction]:
        out = []
        for inst in self.insts:
            if remove_postproc and inst.kind.is_postproc:
                break
            out.append(inst)
        return out

    def with_decision(self, inst: Instruction, decision: Any, remove_postproc: bool) -> "Trace":
        """A copy whose ``inst`` takes ``decision`` (its later steps replay with it)."""
        kept = self._kept(remove_postproc)
        decisions = {i: d for i, d in self.decisions.items() if i in kept}
        decisions[inst] = decision
        return Trace(kept, decisions, self.era)

    def simplified(self, remove_postproc: bool) -> "Trace":
        """The trace without pure steps (lookups, samples) whose results nothing uses."""
        used: set[int] = set()
        kept: list[Instruction] = []
        for inst in reversed(self._kept(remove_postproc)):
            if inst.kind.is_pure and not any(id(o) in used for o in inst.outputs):
                continue
            kept.append(inst)
            _collect_rvs(inst.inputs, used)
        kept.reverse()
        return Trace(kept, {i: d for i, d in self.decisions.items() if i in kept}, self.era)

    # -- printing and serializing -----------------------------------------------------------
    def as_python(self, remove_postproc: bool = False) -> list[str]:
        """One Python statement per instruction, replaying the trace on ``sch``."""
        namer = _Namer()
        return [_inst_python(inst, namer, self.decisions.get(inst), self._era) for inst in self._kept(remove_postproc)]

    def as_json(self, remove_postproc: bool = False) -> list:
        """``[[[kind, inputs, attrs, outputs], ...], [[instruction index, decision], ...]]``."""
        namer = _Namer()
        insts, decisions = [], []
        for i, inst in enumerate(self._kept(remove_postproc)):
            inputs = [namer.input(x) for x in inst.inputs]
            attrs = [_json_value(a) for a in inst.attrs]
            outputs = [namer.add(o) for o in inst.outputs]
            insts.append([_kind_name(inst.kind, self._era), inputs, attrs, outputs])
            if inst in self.decisions:
                decisions.append([i, _json_value(self.decisions[inst])])
        return [insts, decisions]

    @staticmethod
    def apply_json_to_schedule(json_obj: list, sch: Any) -> None:
        """Replay a trace serialized by :meth:`as_json` onto ``sch``."""
        json_insts, json_decisions = json_obj
        decisions = {int(i): d for i, d in json_decisions}
        named: dict[str, Any] = {}

        def translate(x: Any) -> Any:
            if isinstance(x, list):
                return [translate(e) for e in x]
            if not isinstance(x, str):
                return x
            if len(x) >= 2 and x[0] == '"' and x[-1] == '"':
                return x[1:-1]
            if x == "None":
                return None
            if x not in named:
                raise ValueError(f"the trace uses random variable {x} before defining it")
            return named[x]

        for i, (kind_name, inputs, attrs, outputs) in enumerate(json_insts):
            kind = InstructionKind.get(kind_name)
            results = kind.apply(sch, [translate(x) for x in inputs], list(attrs), decisions.get(i))
            if len(results) != len(outputs):
                raise ValueError(f"{kind_name} gave {len(results)} results, the trace names {len(outputs)}")
            named.update(zip(outputs, results))

    def apply_to_schedule(self, sch: Any, remove_postproc: bool = False,
                          decision_provider: Callable | None = None) -> None:
        """Replay every instruction on another schedule, with the recorded decisions."""
        mapping: dict[int, Any] = {}

        def translate(x: Any) -> Any:
            if isinstance(x, RV_TYPES):
                if id(x) not in mapping:
                    raise ValueError(f"random variable {x!r} is not defined by an earlier instruction")
                return mapping[id(x)]
            if isinstance(x, list):
                return [translate(e) for e in x]
            if isinstance(x, tuple):
                return tuple(translate(e) for e in x)
            if hasattr(x, "dtype") and not isinstance(x, Var):  # an expression over sampled values

                return substitute(x, {v: mapping[id(v)] for v in random_vars_in(x) if id(v) in mapping})
            return x

        for inst in self._kept(remove_postproc):
            inputs = [translate(x) for x in inst.inputs]
            decision = self.decisions.get(inst)
            if decision_provider is not None:
                decision = decision_provider(inst, inputs, inst.attrs, decision)
            outputs = list(inst.kind.apply(sch, inputs, list(inst.attrs), decision))
            if len(outputs) != len(inst.outputs):
                # e.g. get_loops on a function whose block has fewer loops than when recorded:
                # replaying on would bind the wrong loops, so stop at the instruction that differs
                raise ValueError(f"cannot replay the trace on this schedule: {inst.kind.name} returned "
                                 f"{len(outputs)} results where the trace recorded {len(inst.outputs)}")
            for old, new in zip(inst.outputs, outputs):
                mapping[id(old)] = new

    def __str__(self) -> str:
        lines = self.as_python() or ["pass"]
        module = _ERA_MODULE[self._era]
        return "\n".join([f"# from tvm import {module}", f"def apply_trace(sch: {module}.Schedule) -> None:"]
                         + [f"  {line}" for line in lines])

    def show(self, style: str | None = None, black_format: bool | None = False) -> None:
        """Print the trace as Python.  TVM highlights it with a pygments ``style`` and may format
        it with black; minitvm prints it plain, so those options are refused, not ignored."""
        script_printer().check_show_options("Trace.show", style, black_format)
        print(str(self))

    def _repr_html_(self) -> str:
        """The trace as highlighted Python in Jupyter (the same highlighter as TVMScript)."""
        return script_printer().to_html(str(self))


def _collect_rvs(x: Any, into: set[int]) -> None:
    if isinstance(x, RV_TYPES):
        into.add(id(x))
    elif isinstance(x, (list, tuple)):
        for e in x:
            _collect_rvs(e, into)
    elif hasattr(x, "dtype"):
        for v in random_vars_in(x):
            into.add(id(v))


def random_vars_in(e: Any) -> list[ExprRV]:
    """The sampled random variables (ExprRV) an expression uses."""
    found: list = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, ExprRV) else None)
    return found
