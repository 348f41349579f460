"""Relax printing as TVM 0.23: the T header only when T is used, void calls as statements."""

from minitvm import ir
from minitvm.script import from_source

SRC = '''
# from minitvm.script import relax as R

@R.function(pure=False)
def main(x: R.Tensor((), "int32"), y: R.Tensor(("n",), "float32")) -> R.Tensor((), "int32"):
    n = T.int64()
    R.print(x, format="x: {}")
    z = R.print(format="z")
    w = z
    return x
'''


def test_void_call_prints_as_statement_unless_its_variable_is_read():
    f = from_source(SRC)
    text = f.script()
    assert '    R.print(x, format=R.str("x: {}"))' in text.splitlines()
    assert any(line.strip().startswith("z: R.Tuple = R.print(format=R.str(\"z\"))") for line in text.splitlines())
    ir.assert_structural_equal(from_source(text), f)


def test_tir_header_only_when_the_text_uses_t():
    f = from_source(SRC)
    assert "import tirx as T" in f.script()  # n = T.int64()
    plain = from_source(SRC.replace('("n",)', "(3,)").replace("    n = T.int64()\n", ""))
    header = [line for line in plain.script().splitlines() if line.startswith("#")]
    assert header == ["# from minitvm.script import relax as R"]
