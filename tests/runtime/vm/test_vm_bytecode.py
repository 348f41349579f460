"""The bytecode itself: the listing (golden text), verification, JSON round trip."""

from __future__ import annotations

import pytest

from minitvm.runtime.vm import Call, Const, ExecBuilder, Executable, Goto, If, Imm, ParamInfo, Reg, Ret, VMFunction


def test_as_text_golden(mlp_exe):
    text = mlp_exe.as_text()
    assert text.startswith("constants:\n  c[0] = 'forward: x'\n  c[1] = 'float32'\nfunctions:\n"
                           "  f[0] = vm.builtin.alloc_shape_heap (packed)\n")
    assert "  f[7] = @forward (VM function, 3 params, 10 registers, 11 instructions)" in text
    listing = text[text.index("@forward:"):]
    params = ("  # params: %0 x: Tensor((n, 784), float32), %1 w1: Tensor((784, 128), float32), "
              "%2 w2: Tensor((128, 10), float32); registers: 10")
    assert listing == "@forward:\n" + params + """
  call  vm.builtin.alloc_shape_heap in: i1 dst: %3
  call  vm.builtin.match_shape in: %0, %3, i2, i1, i0, i0, i784, c[0] dst: -
  call  vm.builtin.make_shape in: %3, i2, i1, i0, i0, i128 dst: %4
  call  vm.builtin.alloc_storage in: %4, c[1] dst: %5
  call  vm.builtin.alloc_tensor in: %5, i0, %4, c[1] dst: %6
  call  test.vm.linear_relu in: %0, %1, %6 dst: -
  call  vm.builtin.make_shape in: %3, i2, i1, i0, i0, i10 dst: %7
  call  vm.builtin.alloc_storage in: %7, c[1] dst: %8
  call  vm.builtin.alloc_tensor in: %8, i0, %7, c[1] dst: %9
  call  test.vm.linear in: %6, %2, %9 dst: -
  ret   %9"""


def test_jumps_print_their_targets(sum_exe):
    text = sum_exe.vm_functions["total"].as_text(sum_exe.func_names)
    assert ("  call  tests.vm.less_ints in: %2, %0 dst: %4\n"
            "  if    %4 else +4        # false: to instruction 8\n") in text
    assert "  goto  -4                # to instruction 3\n  ret   %1" in text


def test_stats(mlp_exe):
    stats = mlp_exe.stats()
    assert "constants: 2\n  str          2" in stats
    assert "@forward: 11 instructions, 10 registers; calls test.vm.linear, test.vm.linear_relu" in stats
    assert "external functions: 7 (0 kernels, 7 packed)" in stats and "kernel library: none" in stats


def test_json_round_trip(mlp_exe, sum_exe):
    for exe in (mlp_exe, sum_exe):
        for f in exe.vm_functions.values():
            again = VMFunction.from_json(f.to_json())
            assert again == f


def _func(code, num_registers=2, params=("a",)):
    return VMFunction("f", list(params), num_registers, code)


@pytest.mark.parametrize("code, message", [
    ([Ret(2)], r"instruction 0: register 2 is out of range \(the frame has 2\)"),
    ([Call(0, 5, ()), Ret(0)], r"instruction 0: function index 5 is out of range \(the table has 2\)"),
    ([Call(0, 0, (Const(3),)), Ret(0)], r"instruction 0: constant 3 is out of range \(there are 0\)"),
    ([Goto(2), Ret(0)], r"instruction 0: jump by 2 leaves the function \(instructions 0..1\)"),
    ([Goto(0), Ret(0)], r"instruction 0: jump by 0 leaves the function"),
    ([If(0, -1), Ret(0)], r"instruction 0: jump by -1 leaves the function"),
    ([Call(0, 0, (Reg(0),))], "the last instruction must be ret or goto"),
    ([], "has no instructions"),
])
def test_verify_rejects_bad_code(code, message):
    exe = Executable(["g", _func(code)])
    with pytest.raises(ValueError, match=message):
        exe.verify()


def test_verify_rejects_small_frames_and_duplicates():
    with pytest.raises(ValueError, match="2 parameters need at least that many registers, it has 1"):
        _func([Ret(0)], num_registers=1, params=("a", "b")).verify(0, 0)
    with pytest.raises(ValueError, match="duplicate names: g"):
        Executable(["g", "g"]).verify()
    with pytest.raises(ValueError, match="1 parameters but 2 ParamInfo"):
        VMFunction("f", ["a"], 1, [Ret(0)], [ParamInfo(), ParamInfo()]).verify(0, 0)


def test_from_json_rejects_malformed_code():
    good = _func([Call(1, 0, (Reg(0), Imm(3), Const(0))), Ret(1)]).to_json()
    assert VMFunction.from_json(good).instructions[0].args == (Reg(0), Imm(3), Const(0))
    bad = dict(good, code=[["jump", 1]])
    with pytest.raises(ValueError, match="unknown opcode 'jump'"):
        VMFunction.from_json(bad)
    with pytest.raises(ValueError, match="expected an integer in the bytecode, got '0'"):
        VMFunction.from_json(dict(good, code=[["ret", "0"]]))
    with pytest.raises(ValueError, match="malformed VM function"):
        VMFunction.from_json({"name": "f"})


def test_builder_errors():
    eb = ExecBuilder()
    with pytest.raises(RuntimeError, match="emit inside"):
        eb.emit_ret(0)
    with pytest.raises(ValueError, match="label 'never' in 'f' was never placed"):
        with eb.function("f", []):
            eb.emit_goto(eb.label("never"))
    with eb.function("g", []):
        eb.emit_ret(eb.emit_call("vm.builtin.null_value"))
    with pytest.raises(ValueError, match="already has a VM function named 'g'"):
        with eb.function("g", []):
            eb.emit_ret(0)
