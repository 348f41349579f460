"""Grading time per chapter: ``minitvm.grade.check`` on the untouched exercises and on the
solutions (issue 36's target: an untouched chapter in <= 5 s, a solved one in <= 15 s on 2 cores).

    .venv/bin/python benchmarks/grading_time.py [--chapters ch01 ch02] [--targets exercises solutions]

Each row is one ``check(chapter, target=...)`` call, as ``minitvm grade chNN --target ...`` runs it,
timed from the call to the finished report (process start-up included).  The untouched exercises are
the committed stubs (``git show HEAD:exercises/chNN.py``), graded in a temporary copy of the course,
so a learner's answers in this clone are not what is measured; every untouched grader should say
``todo`` and every solution grader ``passed`` (the status column), else the row measured something else.
An untouched exercise is graded ``todo`` from the file's text without running (``minitvm.grade.untouched``),
so an untouched row starts no grading process and measures that reading.
The load average (1 minute) is printed before and after each row: other processes share the cores,
and a row measured under load is slower than the target allows for a quiet machine.  The CPU
seconds (user + system of the grading processes and their children) depend less on that load: on
2 quiet cores a chapter takes about half its CPU seconds, or its slowest exercise if that is longer.
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# `python benchmarks/x.py` puts benchmarks/ (not the repo) first on sys.path: import this checkout
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from minitvm.grade import check  # noqa: E402 - after the path set-up above

#: seconds a chapter may take, per target (issue 36)
TARGET_SECONDS = {"exercises": 5.0, "solutions": 15.0}
CHAPTERS = sorted(p.stem for p in (ROOT / "solutions").glob("ch*.py"))


def committed(rel: str) -> str:
    """``rel`` as committed in HEAD; the working tree's text outside a git checkout."""
    try:
        proc = subprocess.run(["git", "-C", str(ROOT), "show", f"HEAD:./{rel}"], capture_output=True, timeout=60)
        if proc.returncode == 0:
            return proc.stdout.decode("utf-8")
    except OSError:
        pass
    return (ROOT / rel).read_text(encoding="utf-8")


def untouched_course(dest: Path) -> Path:
    """A copy of the course at ``dest``: the committed stubs, this checkout's graders and pytest set-up."""
    for rel in ("pyproject.toml", "tests/conftest.py", *(str(p.relative_to(ROOT)) for p in
                                                          (ROOT / "tests" / "grade").glob("test_ch*.py"))):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, dest / rel)
    for pkg in ("exercises", "solutions"):
        (dest / pkg).mkdir(exist_ok=True)
        (dest / pkg / "__init__.py").write_text("")
    for chapter in CHAPTERS:
        (dest / "exercises" / f"{chapter}.py").write_text(committed(f"exercises/{chapter}.py"))
    return dest


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished descendants: every grading process
    and the children they waited for.  Less sensitive to other load than the wall time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def grade_once(chapter: str, target: str, root: Path) -> dict:
    load = os.getloadavg()[0]
    cpu = _children_cpu()
    start = time.perf_counter()
    report = check(chapter, target=target, root=root, progress=False)
    seconds = time.perf_counter() - start
    cpu = _children_cpu() - cpu
    statuses = collections.Counter(r.status for r in report.results)
    expected = "todo" if target == "exercises" else "passed"
    for r in report.results:  # the row timed something else: say what
        if r.status != expected:
            print(f"  {chapter} {target}: exercise {r.exercise} {r.status}: {r.message.splitlines()[0][:200]}")
            break
    return {"chapter": chapter, "target": target, "seconds": seconds, "cpu": cpu, "load": (load, os.getloadavg()[0]),
            "points": f"{report.earned}/{report.total}",
            "statuses": ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", nargs="*", default=CHAPTERS, help="chapters to grade (default: all)")
    parser.add_argument("--targets", nargs="*", default=list(TARGET_SECONDS), choices=list(TARGET_SECONDS),
                        help="exercises (the untouched stubs) and/or solutions (default: both)")
    args = parser.parse_args(argv)
    print(f"grading time, {os.cpu_count()} CPUs, python {sys.version.split()[0]}, minitvm from {ROOT}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="minitvm-grading-time-") as tmp:
        course = untouched_course(Path(tmp))
        for chapter in args.chapters:
            for target in args.targets:
                row = grade_once(chapter, target, course if target == "exercises" else ROOT)
                row["met"] = row["seconds"] <= TARGET_SECONDS[target]
                rows.append(row)
                print(f"  {chapter} {target}: {row['seconds']:.1f} s", flush=True)
    print(table(rows))
    met = sum(r["met"] for r in rows)
    print(f"target met in {met} of {len(rows)} rows (exercises <= {TARGET_SECONDS['exercises']:g} s, "
          f"solutions <= {TARGET_SECONDS['solutions']:g} s); load average now "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


def table(rows: list[dict]) -> str:
    head = ("chapter", "target", "seconds", "limit", "met", "CPU s", "points", "statuses", "load 1 min (start-end)")
    cells = [head] + [(r["chapter"], r["target"], f"{r['seconds']:.1f}", f"{TARGET_SECONDS[r['target']]:g}",
                       "yes" if r["met"] else "NO", f"{r['cpu']:.1f}", r["points"], r["statuses"],
                       f"{r['load'][0]:.2f}-{r['load'][1]:.2f}") for r in rows]
    widths = [max(len(c[k]) for c in cells) for k in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
