"""GPU thread axes and storage scopes, ranked as TVM ranks them (thread_storage_scope.h).

A thread tag is ``blockIdx.x|y|z`` (rank 0: the blocks of a grid), ``threadIdx.x|y|z``
(rank 1: the threads of a block) or ``vthread[.x|y|z]`` / ``cthread`` (virtual threads,
rank 1, no dimension).  A storage scope is ``global`` (rank 0), ``shared`` (1: one copy per
block), ``warp`` (2) or ``local`` (3: one copy per thread), optionally with a ``.tag``.

The one rule that follows: a buffer in scope ``s`` is *shared by* the threads of an axis of
rank ``r`` when ``rank(s) <= r``: a shared buffer is seen by every threadIdx of a block, a
global buffer by every block too, a local one by no other thread.  compute_at relaxes a cache
region over exactly those thread loops, and CompactBufferAllocation sizes a buffer the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ThreadScope", "storage_rank", "can_relax_storage_under_thread", "THREAD_TAGS",
           "is_thread_tag", "STORAGE_RANKS"]

STORAGE_RANKS = {"global": 0, "shared": 1, "warp": 2, "local": 3}

#: every thread tag bind / T.thread_binding / T.launch_thread accept
THREAD_TAGS = tuple(f"{k}.{d}" for k in ("blockIdx", "threadIdx", "vthread") for d in "xyz") + ("vthread", "cthread")


@dataclass(frozen=True)
class ThreadScope:
    """Rank (0 block, 1 thread) and dimension (0, 1, 2 for x, y, z; -1 for virtual threads)."""

    rank: int
    dim_index: int

    @staticmethod
    def create(tag: str) -> "ThreadScope":
        if tag.startswith("vthread") or tag == "cthread":
            return ThreadScope(1, -1)
        for prefix, rank in (("blockIdx.", 0), ("threadIdx.", 1)):
            if tag.startswith(prefix) and tag[len(prefix):] in ("x", "y", "z"):
                return ThreadScope(rank, "xyz".index(tag[len(prefix):]))
        raise ValueError(f"unknown thread tag {tag!r}; expected one of {', '.join(THREAD_TAGS)}")


def is_thread_tag(tag: object) -> bool:
    return isinstance(tag, str) and tag in THREAD_TAGS


def storage_rank(scope: str) -> int:
    """The rank of a storage scope (``"shared.dyn"`` ranks as ``"shared"``); unknown scopes
    (``wmma.*`` fragments) rank as local: one copy per thread."""
    return STORAGE_RANKS.get((scope or "global").split(".")[0], 3)


def can_relax_storage_under_thread(scope: str, thread_tag: str) -> bool:
    """Whether the threads of ``thread_tag`` all see one buffer of ``scope`` (then a region of
    it is the union over those threads). Warp memory is shared by threadIdx.x only."""
    t = ThreadScope.create(thread_tag)
    rank = storage_rank(scope)
    if rank == STORAGE_RANKS["warp"]:
        return t.rank == 1 and t.dim_index == 0
    return rank <= t.rank
