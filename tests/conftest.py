"""Suite-wide checks.

The printer/parser round trip is the main oracle of the IR: every PrimFunc that any
test builds must print as TVMScript that parses back to a structurally equal function.
"""

import locale
import os

# Before torch loads its OpenMP runtime: threads waiting at a barrier sleep instead of spinning.
# Two test workers share two cores, so a spinning torch thread holds the core its partner needs
# (the digits training of chapter 3 beside a busy process: 66 s spinning, 4.5 s sleeping, 1.5 s
# alone).  Numbers are the same either way; the JupyterLab server of the browser tests inherits it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402

from minitvm.ir import assert_structural_equal
from minitvm.target import tir_build as build_module
from minitvm.tir import PrimFunc

_normalize = build_module.normalize_module


def _round_trip_checked(mod_or_func, name=None):
    mod = _normalize(mod_or_func, name)
    from minitvm.script import from_source

    for gv, func in mod.items():
        if isinstance(func, PrimFunc):
            text = func.script()
            try:
                again = from_source(text, data_only=True)  # as a tuning database reads it
            except Exception as e:  # a printer bug is a test failure, not a crash
                raise AssertionError(f"printed TVMScript of {gv.name_hint} does not parse: {e}\n{text}") from e
            assert_structural_equal(again, func)
    return mod


#: The files whose tests take longest (tens of seconds each, `pytest --durations`), run first so
#: that the two workers of `./dev test` (`-n 2 --dist worksteal`) do not end with one of them
#: running a long test alone while the other has nothing left; longest first.
SLOW_FIRST = (
    "tests/viz/test_chapters_in_browser.py",
    "tests/fuzz/test_relax_fuzz.py",
    "tests/fuzz/test_tir_fuzz.py",
    "tests/viz/test_book.py",
    "tests/test_committed.py",
    "tests/meta_schedule/test_tune_tir.py",
    "tests/relax/frontend/torch/test_zoo_dynamic.py",
    "tests/relax/frontend/torch/test_zoo.py",
    "tests/benchmarks/test_run_benchmark.py",
)


def _slow_rank(item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return SLOW_FIRST.index(path) if path in SLOW_FIRST else len(SLOW_FIRST)


def pytest_collection_modifyitems(config, items):
    """The slow files first (in SLOW_FIRST's order), every other test after them in collection
    order (a stable sort: the order inside a file is kept)."""
    items.sort(key=_slow_rank)


@pytest.fixture(autouse=True)
def round_trip_every_built_function(monkeypatch):
    """Wrap the driver so each build also checks parse(print(f)) == f."""
    monkeypatch.setattr(build_module, "normalize_module", _round_trip_checked)
    yield




@pytest.fixture(autouse=True)
def locale_left_alone():
    """A test leaves the process's locale as it found it.  A changed LC_CTYPE changes the
    encoding every later ``open``/``read_text`` of the worker reads with (a build in pieces once
    left it at "C": tests far from it failed reading UTF-8 files as ASCII); this names the test
    that changed it, and puts it back so that the tests after it are not the ones failing."""
    before = locale.setlocale(locale.LC_ALL)
    yield
    after = locale.setlocale(locale.LC_ALL)
    if after != before:
        locale.setlocale(locale.LC_ALL, before)
        pytest.fail(f"this test changed the process's locale from {before!r} to {after!r}")


@pytest.fixture(autouse=True, scope="session")
def private_config_dir(tmp_path_factory):
    """Saved executables are signed with a key from the config directory: the tests' own, never
    the user's ~/.config (subprocesses inherit it, so they load what the tests saved)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MINITVM_CONFIG_DIR", str(tmp_path_factory.mktemp("minitvm-config")))
        yield
