"""Pass infrastructure: opt levels, required/disabled passes, instruments, decorators."""

import pytest

import minitvm
from minitvm import tir, transform
from minitvm.ir import IRModule
from minitvm.tir.transform import prim_func_pass


def _module() -> IRModule:
    x = tir.Var("x", "handle")
    X = tir.decl_buffer((4,), "float32", "X")
    i = tir.Var("i")
    body = tir.For(i, tir.const(0), tir.const(4), "serial", tir.BufferStore(X, X[i] * 2.0, (i,)))
    return IRModule({"main": tir.PrimFunc((x,), {x: X}, body)})


def _counting_pass(name: str, opt_level: int, log: list, required=()):
    @transform.module_pass(opt_level=opt_level, name=name, required=required)
    def run(mod, ctx):
        log.append(name)
        return mod.with_attr(name, True)

    return run


def test_sequential_respects_opt_level_required_and_disabled():
    log: list = []
    seq = transform.Sequential([_counting_pass("A", 0, log), _counting_pass("B", 3, log),
                                _counting_pass("C", 1, log)])
    with transform.PassContext(opt_level=2):
        out = seq(_module())
    assert log == ["A", "C"] and out.attrs == {"A": True, "C": True}
    log.clear()
    with transform.PassContext(opt_level=2, required_pass=["B"], disabled_pass=["A"]):
        seq(_module())
    assert log == ["B", "C"]


def test_required_pass_runs_first():
    log: list = []
    seq = transform.Sequential([_counting_pass("Prep", 5, log), _counting_pass("Main", 0, log, ["Prep"])])
    seq(_module())
    assert log == ["Prep", "Main"]


def test_instrument_hooks_see_every_pass_and_can_veto():
    events = []

    class Recorder(transform.PassInstrument):
        def enter_pass_ctx(self):
            events.append("enter")

        def exit_pass_ctx(self):
            events.append("exit")

        def should_run(self, mod, info):
            return info.name != "Skipped"

        def run_before_pass(self, mod, info):
            events.append(("before", info.name))

        def run_after_pass(self, mod, info):
            events.append(("after", info.name))

    log: list = []
    seq = transform.Sequential([_counting_pass("Run", 0, log), _counting_pass("Skipped", 0, log)], name="seq")
    with transform.PassContext(instruments=[Recorder()]):
        seq(_module())
    assert log == ["Run"]
    assert events == ["enter", ("before", "seq"), ("before", "Run"), ("after", "Run"), ("after", "seq"), "exit"]


def test_with_config_adds_options_and_keeps_the_instruments_entered_once():
    events = []

    class Recorder(transform.PassInstrument):
        def enter_pass_ctx(self):
            events.append("enter")

        def exit_pass_ctx(self):
            events.append("exit")

        def run_before_pass(self, mod, info):
            events.append((info.name, transform.PassContext.current().get_config("tir.disable_vectorize", False)))

    log: list = []
    outer = transform.PassContext(opt_level=3, disabled_pass=["Off"], instruments=[Recorder()],
                                  config={"tir.noalias": False})
    with outer:
        inner = outer.with_config({"tirx.disable_vectorize": True})  # (0.27's spelling too)
        with inner:
            assert transform.PassContext.current() is inner
            transform.Sequential([_counting_pass("On", 3, log), _counting_pass("Off", 0, log)], name="s")(_module())
        assert transform.PassContext.current() is outer
    assert log == ["On"]  # the opt level and the disabled passes carry over
    assert inner.config == {"tir.noalias": False, "tir.disable_vectorize": True}
    assert outer.config == {"tir.noalias": False}
    assert events == ["enter", ("s", True), ("On", True), "exit"]


def test_timing_instrument_renders_a_table():
    timing = transform.PassTimingInstrument()
    with transform.PassContext(instruments=[timing]):
        _counting_pass("Timed", 0, [])(_module())
    assert "Timed" in timing.render()


def test_prim_func_pass_function_and_class_forms():
    @prim_func_pass(opt_level=0)
    def double_extent(func, mod, ctx):
        loop = func.body
        return func.with_body(minitvm.ir.replace(loop, extent=loop.extent * 2))

    @prim_func_pass(opt_level=0, name="Rename")
    class AddAttr:
        def __init__(self, value):
            self.value = value

        def transform_function(self, func, mod, ctx):
            return func.with_attr("tag", self.value)

    out = transform.Sequential([double_extent, AddAttr("x")])(_module())
    assert out["main"].body.extent.value == 8 and out["main"].attrs["tag"] == "x"
    assert AddAttr("y").info.name == "Rename"


def test_bad_config_and_bad_input_are_named():
    with pytest.raises(ValueError, match="unknown config key 'tir.bound_check'"):
        transform.PassContext(config={"tir.bound_check": True})
    with pytest.raises(TypeError, match="expects an IRModule"):
        _counting_pass("P", 0, [])("not a module")


def test_pass_context_takes_only_what_it_uses():
    # TVM v0.23's PassContext has no `trace`, and no pass reads a "use_default_schedule" key
    with pytest.raises(TypeError, match="trace"):
        transform.PassContext(trace=print)
    with pytest.raises(ValueError, match="unknown config key 'relax.backend.use_default_schedule'"):
        transform.PassContext(config={"relax.backend.use_default_schedule": True})
    assert transform.PassContext(config={"tir.enable_debug": True}).get_config("tir.enable_debug") is True


def test_print_ir_show_meta_data_prints_the_constants(capsys):
    import numpy as np

    from minitvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((40,), "float32"))
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.op.add(x, relax.const(np.arange(40, dtype="float32") + 0.5))))
    mod = bb.get()
    transform.PrintIR()(mod)
    assert 'metadata["relax.expr.Constant"][0]' in capsys.readouterr().out
    transform.PrintIR(show_meta_data=True)(mod)
    assert "39.5" in capsys.readouterr().out


def test_tvm_027_config_keys_are_the_tir_options_or_refused_by_name():
    import numpy as np

    import minitvm
    from minitvm.script import tirx as T

    @T.prim_func
    def read(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32"), i: T.int32):
        for j in range(4):
            with T.sblock("B"):
                vj = T.axis.spatial(4, j)
                B[vj] = A[i]

    # one option, two keys: tirx.instrument_bound_checkers turns the bounds checks on as tir.'s does
    for key in ("tirx.instrument_bound_checkers", "tir.instrument_bound_checkers"):
        ctx = transform.PassContext(config={key: True})
        new, old = ctx.get_config("tirx.instrument_bound_checkers"), ctx.get_config("tir.instrument_bound_checkers")
        assert new is old is True
        with ctx:
            lib = minitvm.tirx.build(read, target="llvm")
        with pytest.raises(IndexError, match="A"):
            lib["read"](minitvm.nd.array(np.ones(4, "float32")), minitvm.nd.empty((4,), "float32"), 7)
    with pytest.raises(ValueError, match="gives 'tir.noalias' twice"):
        transform.PassContext(config={"tir.noalias": True, "tirx.noalias": False})
    # an option minitvm lacks: its default is what minitvm does; anything else is refused, by name
    assert transform.PassContext(config={"tirx.disable_assert": False, "s_tir.LoopPartition": {}}).config == {}
    for key, value in [("tirx.disable_assert", True), ("s_tir.LoopPartition", {"partition_const_loop": True}),
                       ("tirx.enable_fast_math", True), ("tir.UnrollLoop", {"auto_max_step": 16})]:
        with pytest.raises(NotImplementedError, match=f"config '{key}' .* not implemented"):
            transform.PassContext(config={key: value})
