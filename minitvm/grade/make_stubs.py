"""Generate ``exercises/chNN.py`` from ``solutions/chNN.py``, so the two never drift.

In a solution, the code between ``# BEGIN SOLUTION`` and ``# END SOLUTION`` (inside a
function whose docstring starts with ``Exercise N.M``) becomes
``raise NotImplementedError("exercise N.M: ...")``; everything else is copied.

    python -m minitvm.grade.make_stubs          # rewrite exercises/ (teachers; overwrites learners' work)
    python -m minitvm.grade.make_stubs --check  # exit 1 if exercises/ differ from what would be generated
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from .runner import find_root

BEGIN = re.compile(r"^(\s*)# BEGIN SOLUTION\s*$")
END = re.compile(r"^\s*# END SOLUTION\s*$")
DEF = re.compile(r"^\s*def (\w+)\(")
EXERCISE = re.compile(r"Exercise (\d+\.\d+)")
HEADER = "# Generated from solutions/{name} by `python -m minitvm.grade.make_stubs`: edit the bodies that raise.\n"


def make_stub(source: str, name: str = "chNN.py") -> str:
    """The exercise text for one solution file's text."""
    lines = source.splitlines(keepends=True)
    out = [HEADER.format(name=name)]
    func, number, inside = None, None, False
    for lineno, line in enumerate(lines, 1):
        if inside:
            if END.match(line):
                inside = False
            continue
        m = DEF.match(line)
        if m:
            func, number = m.group(1), None
        m = EXERCISE.search(line)
        if m and func and number is None:
            number = m.group(1)
        m = BEGIN.match(line)
        if m:
            if func is None or number is None:
                raise ValueError(f"{name}:{lineno}: '# BEGIN SOLUTION' outside a function "
                                 "whose docstring says 'Exercise N.M'")
            out.append(f'{m.group(1)}raise NotImplementedError("exercise {number}: write {func}")\n')
            inside = True
            continue
        out.append(line.replace("(solved)", "(to solve)"))
    if inside:
        raise ValueError(f"{name}: '# BEGIN SOLUTION' without '# END SOLUTION'")
    return "".join(out)


def generate(root: Path, out_dir: Path | None = None) -> dict[Path, str]:
    """Every ``solutions/ch*.py`` as stub text, keyed by its path under ``out_dir`` (default ``root/exercises``)."""
    out_dir = out_dir or root / "exercises"
    return {out_dir / p.name: make_stub(p.read_text(), p.name) for p in sorted((root / "solutions").glob("ch*.py"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minitvm.grade.make_stubs", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when exercises/ are stale")
    parser.add_argument("--root", type=Path, default=None, help="repository root (default: found from the CWD)")
    args = parser.parse_args(argv)
    root = args.root or find_root()
    stale = []
    for path, text in generate(root).items():
        if not path.exists() or path.read_text() != text:
            stale.append(path)
            if not args.check:
                path.write_text(text)
                print(f"wrote {path.relative_to(root)}")
    if args.check and stale:
        print("stale: " + ", ".join(str(p.relative_to(root)) for p in stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
