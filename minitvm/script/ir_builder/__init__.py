"""TVM's imperative IR builder (``tvm.script.ir_builder``): the IR written as nested Python
``with`` frames, each adding the statement it stands for to the frame around it.

    with IRBuilder() as ib:
        with T.prim_func():
            A = T.arg("A", T.Buffer((8,), "float32"))
            with T.serial(8) as i:
                T.buffer_store(A, A[i] + T.float32(1), [i])
    func = ib.get()

The TVMScript parser (``minitvm.script.parser``) reads the syntax tree instead and needs none
of this; the builder is for code that makes IR programmatically, as TVM's tests do.
"""

from . import ir, relax, tir
from .base import IRBuilder, IRBuilderFrame

__all__ = ["IRBuilder", "IRBuilderFrame", "ir", "relax", "tir"]
