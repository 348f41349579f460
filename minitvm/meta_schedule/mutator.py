"""Mutators (TVM's ``ms.mutator``): change one sampled decision of a trace, keep the rest.

The evolutionary search replays the mutated trace on the workload; a decision that no longer
fits (a compute location that vanished) makes the replay fail and the child is dropped.

* :func:`mutate_tile_size` -- move a factor between two levels of a ``sample_perfect_tile``
  (the product stays the loop's extent, the innermost stays within its bound);
* :func:`mutate_compute_location` -- another location for a ``sample_compute_location``;
* :func:`mutate_categorical` -- another candidate of a ``sample_categorical`` (unroll steps,
  threads on/off: TVM's MutateUnroll / MutateParallel).
"""

from __future__ import annotations

import random
from typing import Any, Callable

from ..tir.schedule import Trace
from ..tir.schedule.trace import Instruction

__all__ = ["mutate_tile_size", "mutate_compute_location", "mutate_categorical", "MUTATORS", "mutate"]


def _ints(decision: Any) -> list[int]:
    return [int(getattr(d, "value", d)) for d in decision]


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def mutate_tile_size(inst: Instruction, decision: Any, rng: random.Random) -> Any:
    """Move one prime factor of one tile level to another level."""
    tiles = _ints(decision)
    if len(tiles) < 2 or tiles[0] < 0:
        return None
    max_inner = int(inst.attrs[1]) if len(inst.attrs) > 1 and inst.attrs[1] is not None else 1 << 30
    donors = [i for i, t in enumerate(tiles) if t > 1]
    if not donors:
        return None
    src = rng.choice(donors)
    dst = rng.choice([i for i in range(len(tiles)) if i != src])
    factor = rng.choice(_prime_factors(tiles[src]))
    tiles[src] //= factor
    tiles[dst] *= factor
    if tiles[-1] > max_inner:
        return None
    return tiles


def mutate_compute_location(inst: Instruction, decision: Any, rng: random.Random) -> Any:
    """A neighbouring location (one loop deeper or shallower; -1 the root, -2 inlined)."""
    old = int(getattr(decision, "value", decision))
    new = old + rng.choice([-1, 1])
    return new if new >= -2 and new != old else None


def mutate_categorical(inst: Instruction, decision: Any, rng: random.Random) -> Any:
    """Another of the instruction's candidates."""
    n = len(inst.attrs[0])
    old = int(getattr(decision, "value", decision))
    if n < 2:
        return None
    return rng.choice([i for i in range(n) if i != old])


#: instruction kind -> mutator
MUTATORS: dict[str, Callable[[Instruction, Any, random.Random], Any]] = {
    "SamplePerfectTile": mutate_tile_size,
    "SampleComputeLocation": mutate_compute_location,
    "SampleCategorical": mutate_categorical,
}


def mutate(trace: Trace, rng: random.Random, tries: int = 8) -> Trace | None:
    """``trace`` with one decision changed (postprocessing dropped: it is redone), or None when
    no sampling instruction could be changed."""
    choices = [inst for inst in trace.insts if inst.kind.name in MUTATORS and trace.get_decision(inst) is not None]
    for _ in range(tries if choices else 0):
        inst = rng.choice(choices)
        new = MUTATORS[inst.kind.name](inst, trace.get_decision(inst), rng)
        if new is not None:
            return trace.with_decision(inst, new, remove_postproc=True)
    return None
