"""A primitive is one declaration: ``@primitive`` on the method gives its trace record, its
printing, its JSON form and its replay; nothing else needs writing."""

import inspect
import json
from pathlib import Path

import pytest

from minitvm import tir
from minitvm.ir import assert_structural_equal, structural_equal
from minitvm.script import tir as T
from minitvm.tir.schedule import BlockRV, ExprRV, InstructionKind, LoopRV, Trace
from minitvm.tir.schedule.primitive import declared_kind, primitive


@T.prim_func
def double(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


class ToySchedule(tir.Schedule):
    """Two toy primitives, each declared in one place (this class): no trace.py entry."""

    @primitive("SplitInHalves", inputs=("block",))
    def split_in_halves(self, block: BlockRV | str, axis: int) -> list[LoopRV]:
        """Split the ``axis``-th loop around ``block`` into an outer loop and an inner one of 2."""
        loop = self.get_loops(block)[axis]  # called inside a primitive: not recorded on its own
        return self.split(loop, factors=[None, 2])

    @primitive("SampleEvenFactor", inputs=("loop",), pure=True)
    def sample_even_factor(self, loop: LoopRV, decision: int | None = None) -> ExprRV:
        """An even factor of ``loop``'s extent; ``decision`` is its index among them."""
        extent = self.get(loop).extent.value
        evens = [f for f in range(2, extent + 1, 2) if extent % f == 0]
        pick = self._rng.randrange(len(evens)) if decision is None else int(decision)
        self._record_as(decision=pick)  # the trace keeps the decision, so a replay picks the same
        return self._sampled(evens[pick])


def _schedule(seed):
    sch = ToySchedule(double, seed=seed)
    outer, inner = sch.split_in_halves("B", axis=0)  # a block by name: the lookup is recorded first
    sch.vectorize(inner)
    _, j = sch.get_loops("B")[1:]
    factor = sch.sample_even_factor(j)
    sch.split(j, factors=[None, factor])
    return sch


def test_a_toy_primitive_prints_serializes_and_replays():
    sch = _schedule(seed=0)
    picked = sch.trace.get_decision(sch.trace.insts[5])
    assert str(sch.trace).splitlines()[2:] == [
        '  b0 = sch.get_block(name="B", func_name="main")',  # a block by name: looked up first
        "  l1, l2 = sch.split_in_halves(block=b0, axis=0)",  # its get_loops and split are inside it
        "  sch.vectorize(loop=l2)",
        '  b3 = sch.get_block(name="B", func_name="main")',
        "  l4, l5, l6 = sch.get_loops(block=b3)",
        f"  v7 = sch.sample_even_factor(loop=l6, decision={picked})",
        "  l8, l9 = sch.split(loop=l6, factors=[None, v7], preserve_unit_iters=True, disable_predication=False)"]
    factor = [2, 4, 8][picked]
    assert [sch.get(lp).extent.value for lp in sch.get_loops("B")] == [8, 2, 8 // factor, factor]

    stored = json.loads(json.dumps(sch.trace.as_json()))  # as a tuning database writes it
    assert stored[0][1] == ["SplitInHalves", ["b0"], [0], ["l1", "l2"]]
    assert stored[1] == [[5, picked]]
    for other_seed in (1, 2, 3, 4):  # each would sample another factor: the recorded decision rules
        fresh = ToySchedule(double, seed=other_seed)
        Trace.apply_json_to_schedule(stored, fresh)
        assert_structural_equal(fresh.mod, sch.mod)
        again = ToySchedule(double, seed=other_seed)
        sch.trace.apply_to_schedule(again)
        assert_structural_equal(again.mod, sch.mod)
    assert not structural_equal(sch.mod, tir.Schedule(double).mod)  # it did change the function
    forked = sch.copy()  # a copy keeps the subclass, so its primitives, and the trace goes on
    forked.split_in_halves("B", axis=3)
    assert len(forked.trace) == len(sch.trace) + 2 and isinstance(forked, ToySchedule)


def test_the_declaration_is_the_instruction_kind():
    kind = InstructionKind.get("SplitInHalves")
    assert kind is declared_kind(ToySchedule.split_in_halves)
    assert (kind.method, kind.inputs, kind.attrs, kind.output) == ("split_in_halves", ("block",), ("axis",), "list")
    sample = InstructionKind.get("SampleEvenFactor")
    assert (sample.decision, sample.is_pure, sample.output) == (True, True, "single")


def test_a_declaration_naming_no_parameter_is_refused():
    with pytest.raises(TypeError, match="inputs \\['blok'\\] are not parameters"):
        primitive("Typo", inputs=("blok",))(lambda self, block: None)
    with pytest.raises(TypeError, match="declare \\*loops as an input"):
        primitive("Positional")(lambda self, *loops: None)


# what Schedule offers besides primitives: state, lookups of values, copies; none is recorded
NOT_PRIMITIVES = {"copy", "seed", "fork_seed", "work_on", "show", "get", "get_sref", "remove_rv",
                  "can_decompose_padding"}


def test_every_public_schedule_method_is_a_declared_primitive():
    public = {name for name, value in vars(tir.Schedule).items()
              if not name.startswith("_") and inspect.isfunction(value)}
    declared = {name for name in public if declared_kind(getattr(tir.Schedule, name))}
    undeclared = sorted(public - declared - NOT_PRIMITIVES)
    assert not undeclared, f"public Schedule methods not declared with @primitive: {undeclared}"
    assert NOT_PRIMITIVES <= public and not NOT_PRIMITIVES & declared  # the list names real, unrecorded methods
    assert len(declared) >= 48
    # and none appends to the trace by hand: only primitive.py's wrapper does
    source = (Path(tir.schedule.schedule.__file__)).read_text()
    assert "_trace.append" not in source and "Instruction(" not in source


def test_every_kind_replays_through_the_method_that_declared_it():
    for name in vars(tir.Schedule):
        kind = declared_kind(getattr(tir.Schedule, name))
        if kind is not None:
            # (a kind the eras spell differently comes back marked with the era of the name asked for)
            assert InstructionKind.get(kind.name).same_as(kind) and InstructionKind.get(kind.method).same_as(kind)
            assert getattr(tir.Schedule, kind.method) is getattr(tir.Schedule, name)
