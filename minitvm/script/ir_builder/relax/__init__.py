"""The Relax frames of the IR builder (TVM's ``tvm.script.ir_builder.relax``, imported as ``R``).

    with IRBuilder() as ib:
        with R.function():
            R.func_name("foo")
            x = R.arg("x", relax.TensorStructInfo((4,), "float32"))
            with R.dataflow():
                y = R.emit(R.add(x, x))
                R.output(y)
            R.func_ret_value(y)
    func = ib.get()

The operators (``R.add``, ``R.call_dps_packed`` ...) are TVMScript's own; as in TVM, the
struct-info annotations (``R.Tensor`` ...) are the parser's, not this module's.
"""

from .ir import *  # noqa: F401,F403 - TVM's layout: the frames live in .ir
from .ir import (
    __all__,  # noqa: F401
    __getattr__,  # noqa: E402,F401 - R.add, R.call_dps_packed ...: TVMScript's operators
)
