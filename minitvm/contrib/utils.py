"""``tvm.contrib.utils`` (TVM 0.27: ``tvm.support.utils``): a temporary directory for build files.

TVM's tutorials export a library into one (``temp = utils.tempdir(); lib.export_library(
temp.relpath("lib.so"))``).  It is removed when closed, when garbage-collected, or at exit,
unless ``keep_for_debug=True``.
"""

from __future__ import annotations

import atexit
import os
import pathlib
import shutil
import tempfile

__all__ = ["TempDirectory", "tempdir"]

# directories made here and not yet removed, removed at exit
_LIVE: set[str] = set()


class TempDirectory:
    """A directory of its own under the system's temporary directory (or ``custom_path``)."""

    def __init__(self, custom_path: str | None = None, keep_for_debug: bool | None = None) -> None:
        self.temp_dir: str | None = None  # set once the directory exists
        self.keep_for_debug = bool(keep_for_debug)
        if custom_path:
            os.mkdir(custom_path)  # as TVM: the path must not exist yet
            self.temp_dir = str(custom_path)
        else:
            self.temp_dir = tempfile.mkdtemp(prefix="minitvm-")
        if not self.keep_for_debug:
            _LIVE.add(self.temp_dir)

    @property
    def path(self) -> pathlib.Path:
        return pathlib.Path(self._dir())

    def relpath(self, name: str) -> str:
        """The path of ``name`` inside the directory."""
        return os.path.join(self._dir(), name)

    def listdir(self) -> list[str]:
        return os.listdir(self._dir())

    def remove(self) -> None:
        """Delete the directory and what is in it (kept if made with ``keep_for_debug``)."""
        if self.temp_dir and not self.keep_for_debug:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            _LIVE.discard(self.temp_dir)
        self.temp_dir = None

    def __truediv__(self, other: str | pathlib.Path) -> pathlib.Path:
        if not isinstance(other, (str, pathlib.Path)):
            raise TypeError(f"TempDirectory / needs a str or pathlib.Path, got {other!r}")
        return self.path / other

    def __enter__(self) -> TempDirectory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def __del__(self) -> None:
        self.remove()

    def _dir(self) -> str:
        if self.temp_dir is None:
            raise RuntimeError("this TempDirectory was removed")
        return self.temp_dir


def tempdir(custom_path: str | None = None, keep_for_debug: bool | None = None) -> TempDirectory:
    """A new temporary directory (``custom_path`` to choose where; it must not exist)."""
    return TempDirectory(custom_path, keep_for_debug)


@atexit.register
def _remove_all() -> None:
    for path in list(_LIVE):
        shutil.rmtree(path, ignore_errors=True)
    _LIVE.clear()
