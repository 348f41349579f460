"""Declaring a schedule primitive: one decorator line gives its trace record and its replay.

A primitive is a :class:`Schedule` method marked ``@primitive("Split", inputs=("loop", "+factors"))``.
From that line and the method's signature comes everything the trace needs:

- the instruction kind, under TVM's name (``"Split"``), registered for printing, JSON and replay;
- which parameters are *inputs* (random variables, or values that may hold them, such as split's
  factors); every other parameter is an *attribute* (a plain value).  An input named ``*loops``
  is printed as positional arguments (``fuse(l1, l2)``), one named ``+factors`` is a list whose
  elements are separate inputs (``factors=[v1, v2]``);
- the printing order: the signature's;
- how the outputs print: from the return annotation (``None``, ``list[...]``, or one value);
- whether it samples: a ``decision`` parameter is the decision the trace keeps;
- which parameters accept a block by name: those annotated ``BlockRV | str`` (or a list of
  them) are looked up with ``get_block`` before the primitive runs, and the lookup is recorded
  first, as in TVM (lists before single blocks, TVM's order in cache_read).

The body then only checks and transforms.  When it resolves an argument into the value a replay
needs (a buffer name into its index, a sampled decision), it says so with
``self._record_as(name=value)``.  A primitive called from inside another one is not recorded:
replaying the outer call repeats it.
"""

from __future__ import annotations

import functools
import inspect
import re
from typing import Any, Callable

from .trace import BlockRV, Instruction, InstructionKind, LoopRV, register_inst_kind

__all__ = ["primitive", "declared_kind"]


class _Call:
    """A primitive being applied: the values its record will hold, and steps to run after it."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values
        self.then: list[Callable[[], Any]] = []


def primitive(kind: str, inputs: tuple[str, ...] = (), *, output: str | None = None, pure: bool = False,
              postproc: bool = False, omit_empty: tuple[str, ...] = ()) -> Callable:
    """Declare the decorated Schedule method a primitive recorded as instruction ``kind``.

    ``pure``: no effect but its outputs (a lookup, a sample), so ``Trace.simplified`` may drop
    it when nothing uses them; ``postproc``: marks where postprocessing starts; ``omit_empty``:
    parameters printed only when not empty; ``output`` overrides the return annotation
    (``"none"``, ``"single"`` or ``"list"``).
    """
    def declare(method: Callable) -> Callable:
        sig = inspect.signature(method)
        inst_kind = register_inst_kind(_kind_of(kind, method.__name__, sig, tuple(inputs), output,
                                                pure=pure, postproc=postproc, omit_empty=tuple(omit_empty)))
        lookups = _block_lookups(sig)
        bind = _plain_binder(sig)

        @functools.wraps(method)
        def apply(self: Any, *args: Any, **kwargs: Any) -> Any:
            arguments = bind(self, args, kwargs) if bind is not None else None
            bound = None
            if arguments is None:  # var-positional parameters, or a call sig.bind words the error of
                bound = sig.bind(self, *args, **kwargs)
                bound.apply_defaults()
                arguments = bound.arguments
            for name, look_up in lookups:
                arguments[name] = look_up(self, arguments[name])
            call = _Call(dict(arguments))
            calls = self._calls
            calls.append(call)
            try:
                result = method(*bound.args, **bound.kwargs) if bound is not None else method(*arguments.values())
            finally:
                calls.pop()
            if not calls:
                self._trace.append(*_instruction(inst_kind, call.values, result, self._trace.era))
            for step in call.then:
                step()
            return result

        apply.__primitive__ = inst_kind
        return apply

    return declare


def _plain_binder(sig: inspect.Signature) -> Callable[[Any, tuple, dict], dict | None] | None:
    """``sig.bind`` + ``apply_defaults`` for a signature of plain parameters (the arguments by
    name, in order), ~10x faster: every primitive call binds its arguments.  None for another
    signature; the binder returns None for a call it cannot bind (``sig.bind`` then says why)."""
    params = list(sig.parameters.values())
    if any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in params):
        return None
    names = tuple(p.name for p in params)
    defaults = {p.name: p.default for p in params if p.default is not p.empty}

    def bind(self: Any, args: tuple, kwargs: dict) -> dict | None:
        if len(args) >= len(names):
            return None
        arguments = dict(zip(names, (self, *args)))
        used = 0
        for name in names[len(args) + 1:]:
            if name in kwargs:
                arguments[name] = kwargs[name]
                used += 1
            elif name in defaults:
                arguments[name] = defaults[name]
            else:
                return None
        return arguments if used == len(kwargs) else None

    return bind


def declared_kind(method: Any) -> InstructionKind | None:
    """The instruction kind a Schedule method was declared with (None: not a primitive)."""
    return getattr(method, "__primitive__", None)


def _instruction(kind: InstructionKind, values: dict[str, Any], result: Any,
                 era: str | None) -> tuple[Instruction, Any]:
    """The trace entry for one call: inputs and attributes from the (resolved) arguments."""
    inputs: list = []
    for name in kind.inputs:
        value = values[name.lstrip("*+")]
        many = name[0] in "*+" and isinstance(value, (list, tuple))
        inputs += list(value) if many else [value]
    attrs = [values[name] for name in kind.attrs]
    outputs = [] if kind.output == "none" else [result] if kind.output == "single" else list(result)
    return Instruction(kind, inputs, attrs, outputs, era), values.get("decision")


def _kind_of(kind: str, method: str, sig: inspect.Signature, inputs: tuple[str, ...], output: str | None,
             **flags: Any) -> InstructionKind:
    params = list(sig.parameters.values())[1:]  # after self
    names = [p.name for p in params if p.name != "decision"]
    declared = [n.lstrip("*+") for n in inputs]
    unknown = [n for n in declared if n not in names]
    if unknown:
        raise TypeError(f"@primitive({kind!r}) on Schedule.{method}: inputs {unknown} are not parameters "
                        f"of the method (it has {names})")
    for p in params:
        if p.kind is p.VAR_POSITIONAL and f"*{p.name}" not in inputs:
            raise TypeError(f"@primitive({kind!r}) on Schedule.{method}: declare *{p.name} as an input "
                            f"'*{p.name}' (printed as positional arguments)")
    attrs = tuple(n for n in names if n not in declared)
    return InstructionKind(kind, method, inputs, attrs, output or _output_style(kind, method, sig),
                           decision="decision" in sig.parameters, order=tuple(names),
                           omit_empty=flags["omit_empty"], is_pure=flags["pure"], is_postproc=flags["postproc"])


def _output_style(kind: str, method: str, sig: inspect.Signature) -> str:
    """How the outputs print, read off the return annotation."""
    ann = sig.return_annotation
    if ann is sig.empty:
        raise TypeError(f"@primitive({kind!r}) on Schedule.{method}: annotate what it returns "
                        "(None, a list, or one random variable) or pass output=")
    text = _annotation_text(ann)
    if text == "None":
        return "none"
    return "list" if text.startswith("list") else "single"


def _annotation_text(ann: Any) -> str:
    """An annotation as text without module prefixes (``minitvm...BlockRV | str`` -> ``BlockRV | str``)."""
    text = ann if isinstance(ann, str) else "None" if ann is None else inspect.formatannotation(ann)
    return re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", text)


def _union_parts(text: str) -> list[str]:
    """The members of a ``A | list[B | C] | None`` annotation, brackets kept whole."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c == "["
        depth -= c == "]"
        if c == "|" and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return parts + [text[start:].strip()]


def _block_lookups(sig: inspect.Signature) -> list[tuple[str, Callable[[Any, Any], Any]]]:
    """For each parameter that takes a block by name, how to turn the argument into BlockRVs."""
    lists, singles = [], []
    for p in list(sig.parameters.values())[1:]:
        if p.annotation is sig.empty:
            continue
        parts = _union_parts(_annotation_text(p.annotation))
        if "BlockRV" in parts and "str" in parts:
            singles.append((p.name, functools.partial(_look_up_block, loop_ok="LoopRV" in parts)))
        elif any(set(_union_parts(x[5:-1])) >= {"BlockRV", "str"} for x in parts if x.startswith("list[")):
            lists.append((p.name, _look_up_blocks))
    return lists + singles


def _look_up_block(sch: Any, value: Any, loop_ok: bool) -> Any:
    if isinstance(value, str):
        return sch.get_block(value)
    if isinstance(value, BlockRV) or loop_ok and isinstance(value, LoopRV):
        return value
    want = "a block or a loop (a BlockRV or LoopRV, or a block's name)" if loop_ok else \
        "a block (a BlockRV from sch.get_block, or its name)"
    raise TypeError(f"expected {want}, got {value!r}")


def _look_up_blocks(sch: Any, value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [_look_up_block(sch, b, loop_ok=False) for b in value]
    return value  # another member of the union (blockize's LoopRV)
