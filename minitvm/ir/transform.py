"""``minitvm.ir.transform``: the pass infrastructure under the name TVM gives it
(``tvm.ir.transform.module_pass``, ``PassContext``, ``Sequential``); the same objects as
``minitvm.transform``."""

from ..transform import *  # noqa: F403 - this module is an alias of minitvm.transform
from ..transform import __all__  # noqa: F401
