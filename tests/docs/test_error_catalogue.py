"""docs/errors.md is executable: every trigger raises the error class it names, with its text."""

import re
import textwrap
from pathlib import Path

import pytest

CATALOGUE = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
ENTRY = re.compile(r"```python error: (\w+): (.*?)\n(.*?)```", re.S)
PRELUDE = re.search(r"```python\n(.*?)```", CATALOGUE.read_text(), re.S).group(1)
ENTRIES = ENTRY.findall(CATALOGUE.read_text())


def test_the_catalogue_has_entries_for_every_kind():
    kinds = {kind for kind, _, _ in ENTRIES}
    assert {"TVMScriptError", "ScheduleError", "ValueError", "TypeError", "StructInfoError",
            "RuntimeError", "BoundsError"} <= kinds


@pytest.mark.parametrize("kind, text, code", ENTRIES, ids=[f"{k}:{t[:40]}" for k, t, _ in ENTRIES])
def test_trigger_raises_the_documented_error(kind, text, code, tmp_path):
    # TVMScript needs the source of decorated functions: run the entry from a real file
    source = tmp_path / "entry.py"
    source.write_text(PRELUDE + "\n" + textwrap.dedent(code))
    namespace: dict = {"__name__": "entry"}
    with pytest.raises(Exception) as err:
        exec(compile(source.read_text(), str(source), "exec"), namespace)
    names = {cls.__name__ for cls in type(err.value).__mro__}
    assert kind in names, f"expected {kind}, got {type(err.value).__name__}: {err.value}"
    assert text in str(err.value), f"message {str(err.value)!r} lacks {text!r}"
