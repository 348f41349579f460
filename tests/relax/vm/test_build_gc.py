"""relax.build hides the objects alive before it from the garbage collector while it runs (a full
collection then scans only the compile's own objects) and leaves the collector as it found it,
including a freeze someone else made."""

from __future__ import annotations

import gc

import numpy as np

import minitvm
from minitvm import relax
from minitvm.script import relax as R


def _double() -> minitvm.IRModule:
    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((8,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.add(x, x))
        bb.emit_func_output(y)
    return bb.get()


def test_the_build_freezes_the_heap_only_while_it_runs(monkeypatch):
    seen = []
    real = relax.vm_build._build

    def watched(*args, **kwargs):
        seen.append(gc.get_freeze_count())
        return real(*args, **kwargs)

    monkeypatch.setattr(relax.vm_build, "_build", watched)
    assert gc.get_freeze_count() == 0
    ex = relax.build(_double())
    assert seen[0] > 0 and gc.get_freeze_count() == 0
    x = np.random.default_rng(0).standard_normal(8).astype("float32")
    np.testing.assert_allclose(relax.VirtualMachine(ex, minitvm.cpu())["main"](minitvm.nd.array(x)).numpy(), 2 * x)


def test_a_freeze_made_by_someone_else_is_left_alone():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        relax.build(_double())
        # still frozen, not unfrozen by the build (which would leave 0); a few frozen objects may
        # be freed meanwhile (a cache entry made before the freeze dropping its last reference)
        assert frozen > 0 and gc.get_freeze_count() > frozen // 2
    finally:
        gc.unfreeze()
