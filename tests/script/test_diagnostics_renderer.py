"""tvm.ir.diagnostics.override_renderer: a rejected script's error reaches the renderer as a
Diagnostic (span, message) before it is raised."""

from __future__ import annotations

import pytest

from minitvm.ir.diagnostics import DiagnosticLevel, override_renderer
from minitvm.script import TVMScriptError, from_source


def test_the_renderer_sees_the_error_with_its_line_then_it_is_raised():
    seen = []
    override_renderer(lambda ctx: seen.extend(ctx.diagnostics))
    try:
        with pytest.raises(TVMScriptError):
            from_source("@T.prim_func\ndef f(a: T.handle):\n    T.evaluate(0)\n"
                        "    A = T.match_buffer((16,), 'float32')\n")
    finally:
        override_renderer(None)
    (d,) = seen
    assert d.level == DiagnosticLevel.ERROR and d.span.line == 4 and "T.match_buffer" in d.message
    with pytest.raises(TVMScriptError):  # no renderer: only the raised error
        from_source("@T.prim_func\ndef f(a: T.handle):\n    A = T.match_buffer((16,), 'float32')\n")
    assert len(seen) == 1
