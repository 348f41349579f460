"""SplitIntoSlices: a split whose parts are only copied on becomes one slice per part."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm
from minitvm import relax

op = relax.op


def _qkv(reader_of_value: str = "transpose"):
    """GPT-2's attention input: one (tokens, 3 * features) tensor split into query, key, value,
    each viewed as heads and transposed (the value, or fed to a matmul)."""
    x = relax.Var("x", relax.TensorStructInfo((6, 24), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            parts = bb.emit(op.split(x, 3, axis=1))
            heads = []
            for i in range(3):
                part = bb.emit(relax.TupleGetItem(parts, i))
                if i == 2 and reader_of_value == "matmul":
                    heads.append(bb.emit(op.matmul(part, op.permute_dims(part, (1, 0)))))
                    continue
                heads.append(bb.emit(op.permute_dims(op.reshape(part, (6, 2, 4)), (1, 0, 2))))
            gv = bb.emit_output(relax.Tuple(heads))
        bb.emit_func_output(gv)
    return bb.get()


def _ops(mod):
    return [b.value.op.name for b in mod["main"].body.blocks[0].bindings
            if isinstance(b.value, relax.Call) and isinstance(b.value.op, minitvm.ir.Op)]


def _run(mod, x):
    out = relax.VirtualMachine(minitvm.compile(mod, "llvm"), minitvm.cpu())["main"](x)
    return [o.numpy() for o in out]


def test_parts_copied_on_become_slices_with_the_same_numbers():
    mod = _qkv()
    new = relax.transform.SplitIntoSlices()(mod)
    ops = _ops(new)
    assert "relax.split" not in ops and ops.count("relax.strided_slice") == 3
    slices = [b.value for b in new["main"].body.blocks[0].bindings
              if isinstance(b.value, relax.Call) and getattr(b.value.op, "name", "") == "relax.strided_slice"]
    assert [(list(s.attrs["begin"]), list(s.attrs["end"])) for s in slices] == [([0], [8]), ([8], [16]), ([16], [24])]
    x = np.random.default_rng(3).standard_normal((6, 24)).astype("float32")
    want = [p.reshape(6, 2, 4).transpose(1, 0, 2) for p in np.split(x, 3, axis=1)]
    for got, w in zip(_run(new, x), want):
        np.testing.assert_array_equal(got, w)
    # in the default pipeline each slice fuses into its transpose: no kernel copies the parts out
    kernels = [gv.name_hint for gv, f in relax.get_pipeline("default")(mod).functions_items()
               if not isinstance(f, relax.Function)]
    assert not any("split" in k for k in kernels)
    assert sum("strided_slice" in k and "transpose" in k for k in kernels) == 3


@pytest.mark.parametrize("rows, spec", [
    (5, [2, 3]),     # rows 0:2, 2:3, 3:5
    (9, [6, 2, 8]),  # out of order: 0:6, an empty piece at 6, 2:8, 8:9
    (9, 4),          # sections of ceil(9 / 4) = 3: the last one is empty
    (2, 4),          # more sections than rows: two of one row, two empty
])
def test_uneven_parts_are_the_parts_split_gives(rows, spec):
    x = relax.Var("x", relax.TensorStructInfo((rows, 7), "float32"))
    count = spec if isinstance(spec, int) else len(spec) + 1
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            parts = bb.emit(op.split(x, spec, axis=0))
            outs = [bb.emit(op.exp(bb.emit(relax.TupleGetItem(parts, i)))) for i in range(count)]
            gv = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(gv)
    mod = bb.get()
    new = relax.transform.SplitIntoSlices()(mod)
    assert "relax.split" not in _ops(new)
    def part_shapes(m):  # each part's shape, by the part's variable
        return {b.var.name_hint: [int(d) for d in b.var.struct_info.shape_values]
                for b in m["main"].body.blocks[0].bindings if b.var.name_hint in part_names}

    part_names = {b.var.name_hint for b in mod["main"].body.blocks[0].bindings
                  if isinstance(b.value, relax.TupleGetItem)}
    assert len(part_names) == count and part_shapes(new) == part_shapes(mod)
    xs = np.random.default_rng(4).standard_normal((rows, 7)).astype("float32")
    for got, want in zip(_run(new, xs), _run(mod, xs)):
        np.testing.assert_array_equal(got, want)


def test_a_part_read_by_a_matmul_keeps_the_split():
    # a slice cannot fuse into a matmul: it would be a kernel of its own per part, where the split is one
    mod = _qkv("matmul")
    assert relax.transform.SplitIntoSlices()(mod) is mod


def test_a_split_read_as_a_tuple_keeps_it():
    x = relax.Var("x", relax.TensorStructInfo((4, 6), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(op.split(x, 2, axis=1))  # the function returns the tuple itself
        bb.emit_func_output(gv)
    mod = bb.get()
    assert relax.transform.SplitIntoSlices()(mod) is mod
