"""Virtual devices: module global infos in TVMScript, R.hint_on_device / R.to_vdevice, and
RealizeVDevice, which spreads device annotations as TVM's pass does."""

import numpy as np
import pytest

import minitvm
from minitvm import relax
from minitvm.ir import VDevice
from minitvm.relax.transform import RealizeVDevice, UpdateVDevice
from minitvm.script import ir as I
from minitvm.script import relax as R

_DEVICES = [I.vdevice("llvm"), I.vdevice("cuda", 0), I.vdevice("cuda -arch=sm_80", 0)]


def _hinted():
    @I.ir_module
    class Mod:
        I.module_global_infos({"vdevice": _DEVICES})

        @R.function
        def main(x: R.Tensor((4, 3), "float32"), y: R.Tensor((4, 3), "float32"),
                 z: R.Tensor((4, 3), "float32")) -> R.Tensor((4, 3), "float32"):
            with R.dataflow():
                a = R.hint_on_device(x, minitvm.cpu())
                b = R.add(a, y)
                c = R.hint_on_device(b, R.cuda(0))
                d = R.multiply(c, z)
                R.output(d)
            return d

    return Mod


def test_vdevice_text_names_the_modules_device_and_prints_back():
    @I.ir_module
    class Mod:
        I.module_global_infos({"vdevice": _DEVICES})

        @R.function
        def main(x: R.Tensor((2, 3), "float32", "cuda:1"), y: R.Tensor((2, 3), "float32", "vdevice:0")):
            w = R.to_vdevice(y, "cuda:1")
            s = R.add(x, w)
            return s

    x = Mod["main"].params[0]
    assert x.struct_info.vdevice == VDevice("cuda -arch=sm_80", 0, "global")
    assert Mod["main"].params[1].struct_info.vdevice == VDevice("llvm")
    assert Mod.global_infos["vdevice"] == _DEVICES
    text = Mod.script()
    assert 'vdevice="cuda:1:global"' in text and 'R.to_vdevice(y, "cuda:1:global")' in text
    assert 'I.module_global_infos({"vdevice": [I.vdevice("llvm", 0, "global")' in text
    minitvm.ir.assert_structural_equal(minitvm.script.from_source(text), Mod)
    # the device list is part of the module: another list makes another module
    other = minitvm.ir.IRModule(Mod.functions, Mod.attrs, {"vdevice": [VDevice("llvm")]})
    assert not minitvm.ir.structural_equal(other, Mod)


def test_vdevice_text_outside_the_list_is_refused():
    with pytest.raises(Exception, match="cuda:2 is not in the module's vdevice list"):
        @I.ir_module
        class Mod:
            I.module_global_infos({"vdevice": _DEVICES})

            @R.function
            def main(x: R.Tensor((2, 3), "float32", "cuda:2")):
                return x


def test_realize_spreads_hints_and_inserts_copies():
    mod = _hinted()
    before = mod.script()
    out = RealizeVDevice()(mod)
    assert mod.script() == before  # the input module is left as it was
    func = out["main"]
    llvm, cuda = _DEVICES[0], _DEVICES[1]
    assert [p.struct_info.vdevice for p in func.params] == [llvm, llvm, cuda]
    assert func.ret_struct_info.vdevice == cuda
    values = [b.value for b in func.body.blocks[0].bindings]
    assert values[0] is func.params[0]  # a hint on the device x already has: x itself
    assert values[2].op.name == "relax.to_vdevice" and values[2].attrs["dst_vdevice"] == cuda
    printed = out.script()
    minitvm.ir.assert_structural_equal(minitvm.script.from_source(printed), out)


def test_hint_naming_an_absent_device_is_refused():
    @I.ir_module
    class Mod:
        I.module_global_infos({"vdevice": [I.vdevice("llvm")]})

        @R.function
        def main(x: R.Tensor((2,), "float32")):
            y = R.hint_on_device(x, R.device(2, 0))
            return y

    with pytest.raises(ValueError, match="device type 2 id 0"):
        RealizeVDevice()(Mod)


def test_hinted_module_runs_on_the_cpu_as_numpy():
    # every virtual device is the host CPU here: the hints and copies compute the identity
    rng = np.random.default_rng(7)
    x, y, z = (rng.standard_normal((4, 3)).astype("float32") for _ in range(3))
    for mod in (_hinted(), RealizeVDevice()(_hinted())):
        vm = relax.VirtualMachine(minitvm.compile(mod, target="llvm"), minitvm.cpu())
        got = vm["main"](*(minitvm.nd.array(a) for a in (x, y, z))).numpy()
        np.testing.assert_allclose(got, (x + y) * z, rtol=1e-6)


def test_update_vdevice_replaces_one_device_everywhere():
    @I.ir_module
    class Mod:
        I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})

        @R.function
        def main(a: R.Tensor((2, 2), "float32", "cuda"), b: R.Tensor((2, 2), "float32", "llvm")):
            s = R.add(a, a)
            return (s, b)

    new = VDevice("metal", 1, "global")
    out = UpdateVDevice(new, 1)(Mod)
    assert out.global_infos["vdevice"] == [VDevice("llvm"), new]
    a, b = out["main"].params
    assert a.struct_info.vdevice == new and b.struct_info.vdevice == VDevice("llvm")
    assert out["main"].body.blocks[0].bindings[0].var.struct_info.vdevice == new
    with pytest.raises(ValueError, match="index 2 is outside"):
        UpdateVDevice(new, 2)(Mod)
