"""The pytest plugin behind ``minitvm.testing.utils`` (TVM's ``tvm.testing.plugin``): a test
taking ``target`` runs once per enabled target (llvm) unless it parametrizes ``target`` itself,
targets minitvm cannot run are skipped by name, ``dev`` is the target's device, and the
fixtures of one ``parameters(...)`` call vary together.

    pytest -p minitvm.testing.plugin tests/...
"""

from __future__ import annotations

from typing import Any

import pytest

from ..runtime import device
from . import utils


@pytest.fixture
def dev(target: Any) -> Any:
    """The device a ``target`` test runs on."""

    return device(target if isinstance(target, str) else target.kind.name)


def pytest_generate_tests(metafunc: Any) -> None:
    _parametrize_correlated_parameters(metafunc)
    _auto_parametrize_target(metafunc)
    _add_target_marks(metafunc)


def _parametrized_names(metafunc: Any) -> list[str]:
    names = []
    for mark in metafunc.definition.iter_markers("parametrize"):
        argnames = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
        names += [a.strip() for a in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
    return names


def _auto_parametrize_target(metafunc: Any) -> None:
    if "target" in metafunc.fixturenames and "target" not in _parametrized_names(metafunc):
        excluded = getattr(metafunc.function, "tvm_excluded_targets", [])
        targets = [t for t in utils.ENABLED_TARGETS if t not in excluded]
        metafunc.definition.add_marker(pytest.mark.parametrize("target", targets, scope="session"))


def _add_target_marks(metafunc: Any) -> None:
    """Give each parametrization over ``target`` the skip mark of its target kind."""
    if "target" not in metafunc.fixturenames:
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        argnames = mark.args[0] if mark.args else ""
        names = [a.strip() for a in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
        if "target" not in names or len(mark.args) < 2 or not isinstance(mark.args[1], list):
            continue
        k = names.index("target")
        new = []
        for value in mark.args[1]:
            if isinstance(value, type(pytest.param(None))):
                values, marks = value.values, list(value.marks)
            else:
                values, marks = ((value,) if len(names) == 1 else tuple(value)), []
            new.append(pytest.param(*values, marks=utils.target_requirement(values[k]) + marks))
        mark.args[1][:] = new


def _parametrize_correlated_parameters(metafunc: Any) -> None:
    groups: dict[int, dict] = {}
    for name, fixturedefs in metafunc.definition._fixtureinfo.name2fixturedefs.items():
        func = fixturedefs[-1].func
        if hasattr(func, "parametrize_group") and hasattr(func, "parametrize_values"):
            group = groups.setdefault(func.parametrize_group, {"ids": func.parametrize_ids, "params": []})
            group["params"].append((name, func.parametrize_values))
    for group in groups.values():
        params, ids = group["params"], group["ids"]
        if len(params) == 1:
            metafunc.parametrize(params[0][0], params[0][1], indirect=True, ids=ids)
        else:
            names = ",".join(name for name, _ in params)
            metafunc.parametrize(names, list(zip(*[v for _, v in params])), indirect=True, ids=ids)
