"""``./dev``'s set-up, run in a temporary copy with stand-ins for python, pip, jupyter, dot and
chromium (nothing is installed): a line per step the first time, nothing once set up, JupyterLab's
news pop-up off in the venv's own settings (which JupyterLab's settings code reads as the defaults)
and ``./dev lab``'s flags."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from jupyterlab_server.settings_utils import get_settings

ROOT = Path(__file__).resolve().parents[1]
NOTIFICATION = "@jupyterlab/apputils-extension:notification"

#: a stand-in for pip that records its arguments and the pip settings it was given
_FAKE_PIP = """#!/bin/sh
log="$(dirname "$0")/../calls.log"
echo "pip $* root_user_action=$PIP_ROOT_USER_ACTION version_check=$PIP_DISABLE_PIP_VERSION_CHECK" >>"$log"
"""
#: a stand-in for ``python3 -m venv DIR``: DIR with a python and the pip above
_FAKE_PYTHON = """#!/bin/sh
[ "$1 $2" = "-m venv" ] || exit 3
mkdir -p "$3/bin"
printf '#!/bin/sh\\n' >"$3/bin/python"
cp "$(dirname "$0")/fake-pip" "$3/bin/pip"
chmod +x "$3/bin/python" "$3/bin/pip"
echo "venv $3" >>"$3/calls.log"
"""
_FAKE_JUPYTER = """#!/bin/sh
echo "jupyter $*"
"""


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _copy(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The dev script and pyproject in ``tmp_path/project``; PATH with dot and chromium present."""
    project, tools = tmp_path / "project", tmp_path / "tools"
    project.mkdir()
    tools.mkdir()
    for name in ("dev", "pyproject.toml"):
        shutil.copy2(ROOT / name, project / name)
    for name in ("dot", "chromium"):  # present: need_root_tool never reaches apt-get
        _script(tools / name, "#!/bin/sh\n")
    _script(tools / "fake-pip", _FAKE_PIP)
    _script(tools / "fake-python", _FAKE_PYTHON)
    env = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ['PATH']}", PYTHON=str(tools / "fake-python"))
    return project, env


def _dev(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(project / "dev"), *args], cwd=project, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_setup_says_each_step_once_and_nothing_when_set_up(tmp_path):
    project, env = _copy(tmp_path)
    first = _dev(project, env, "setup").stdout.splitlines()
    assert [line.split(" ")[0] for line in first] == ["creating", "upgrading", "installing", "set-up", "JupyterLab's"]
    assert first[0] == f"creating the virtual environment .venv ({env['PYTHON']} -m venv) ..."
    assert first[2].startswith("installing minitvm and its extras into .venv with pip") and "minutes" in first[2]
    calls = (project / ".venv" / "calls.log").read_text().splitlines()
    assert calls == ["venv .venv",
                     "pip install -q --upgrade pip root_user_action=ignore version_check=1",
                     "pip install -q -e .[dev] root_user_action=ignore version_check=1"]
    stamps = list((project / ".venv").glob(".installed-*"))
    assert len(stamps) == 1

    again = _dev(project, env, "setup")
    assert again.stdout == again.stderr == ""
    assert (project / ".venv" / "calls.log").read_text().splitlines() == calls  # nothing reinstalled


def test_lab_has_no_news_pop_up_and_no_update_check(tmp_path):
    project, env = _copy(tmp_path)
    _dev(project, env, "setup")
    _script(project / ".venv" / "bin" / "jupyter", _FAKE_JUPYTER)
    lab = _dev(project, env, "lab").stdout
    assert lab.startswith("jupyter lab") and "--LabApp.default_url=/lab/tree/chapters" in lab
    assert "--LabApp.news_url=None" in lab and "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate" in lab

    # JupyterLab's own settings code, given the venv's app settings folder and an empty user folder,
    # takes the defaults from there: fetchNews "false" never asks, checkForUpdates false never checks
    app_settings = project / ".venv" / "share" / "jupyter" / "lab" / "settings"
    schemas = Path(sys.prefix) / "share" / "jupyter" / "lab" / "schemas"
    (tmp_path / "user-settings").mkdir()
    found, _ = get_settings(str(app_settings), str(schemas), str(tmp_path / "user-settings"),
                            schema_name=NOTIFICATION)
    properties = found["schema"]["properties"]
    assert (properties["fetchNews"]["default"], properties["checkForUpdates"]["default"]) == ("false", False)
    written = json.loads((app_settings / "overrides.d" / "minitvm.json").read_text())
    assert written == {NOTIFICATION: {"fetchNews": "false", "checkForUpdates": False}}
