"""Every picture picks the same function of a module when none is named (viz.entry)."""

import pytest

from minitvm import relax, viz
from minitvm.ir import IRModule
from minitvm.testing.programs import mm_relu
from minitvm.viz.entry import entry_name


def test_graph_of_the_quick_start_draws_forward(mlp):
    """export_tvm makes `forward`, no `main`: before and after the zero pipeline it is the entry."""
    mod, _ = mlp
    assert viz.graph_dot(mod) == viz.graph_dot(mod, "forward")
    fused = relax.get_pipeline("zero")(mod)
    # FuseOps' functions (Primitive) do not count: forward with the fused ones as clusters
    after_fuse_ops = relax.transform.FuseOps()(relax.transform.AnnotateTIROpPattern()(
        relax.transform.LegalizeOps()(mod)))
    assert entry_name(after_fuse_ops, "relax") == "forward"
    dot = viz.graph_dot(after_fuse_ops)
    assert dot == viz.graph_dot(after_fuse_ops, "forward") and dot.count("subgraph cluster_") == 2
    assert "call_tir <b>fused_matmul_add_relu</b>" in viz.graph_dot(fused)
    assert "<svg" in viz.graph(fused).pipe(format="svg").decode()


def test_loop_nest_and_iteration_order_pick_the_only_primfunc():
    mod = IRModule({"mm_relu": mm_relu})
    assert entry_name(mod, "tir") == "mm_relu"
    assert viz.loop_nest_dot(mod) == viz.loop_nest_dot(mm_relu)


def test_main_wins_and_ambiguity_or_a_wrong_name_is_an_error(mlp):
    mod, _ = mlp
    legalized = relax.transform.LegalizeOps()(mod)
    assert entry_name(legalized, "tir", "matmul") == "matmul"
    # several PrimFuncs, none called main: the picture asks which one
    with pytest.raises(ValueError, match=r"viz.loop_nest: the module has no 'main' and several PrimFuncs "
                                         r"\(.*matmul.*\); name the one to draw"):
        viz.loop_nest_dot(legalized)
    with pytest.raises(KeyError, match=r"viz.graph: no function named 'main'; the module has: .*forward"):
        viz.graph_dot(mod, "main")
    with pytest.raises(ValueError, match="the module has no Relax function to draw"):
        viz.graph_dot(IRModule({"mm_relu": mm_relu}))
    with pytest.raises(TypeError, match="viz.graph draws Relax functions; 'matmul' is a PrimFunc"):
        viz.graph_dot(legalized, "matmul")
    with_main = IRModule({**{gv.name_hint: f for gv, f in legalized.items()}, "main": legalized["matmul"]})
    assert entry_name(with_main, "tir") == "main"
