"""Run each grader of a chapter in its own subprocess and collect a points table.

The repository root (which holds ``tests/grade``, ``exercises`` and ``solutions``) is found
from the current directory upwards, else next to the installed ``minitvm`` package; the
subprocess runs pytest there with the root on ``PYTHONPATH``.

Each subprocess may run ``timeout`` seconds and use ``memory_gib`` GiB of memory (default
:data:`DEFAULT_MEMORY_GIB`, or the ``MINITVM_GRADE_MEMORY_GIB`` environment variable; 0: no
limit): an answer that allocates without bound gets a ``MemoryError`` at the limit and the
status ``memory``, instead of the machine's out-of-memory killer taking the grader (or the
notebook) down.  The limit is on the data segment (``RLIMIT_DATA``: heap and private writable
mappings), not the address space: LLVM, numpy and torch reserve large address ranges they
never use (a grader process with torch spans 1.1 GiB of address space but holds 0.4 GiB of
data, the most measured over every chapter's graders).
"""

from __future__ import annotations

import ast
import html
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

EXERCISE = re.compile(r"[Ee]xercise (\d+\.\d+)")
#: GiB of memory (data segment) one grader process may use unless told otherwise
DEFAULT_MEMORY_GIB = 4.0
MEMORY_ENV = "MINITVM_GRADE_MEMORY_GIB"
#: what a process that ran out of memory leaves in its output (Python and numpy's _ArrayMemoryError,
#: C++ (LLVM), glibc)
_OUT_OF_MEMORY = re.compile(r"MemoryError\b|std::bad_alloc|[Oo]ut of memory|Cannot allocate memory")
#: the child: set the memory limit, then run pytest as ``python -m pytest`` would (no
#: ``preexec_fn``: graders run from a thread pool, where forking Python code may deadlock)
_LIMITED_PYTEST = ("import resource, runpy, sys\n"
                   "n = int(sys.argv.pop(1))\n"
                   "hard = resource.getrlimit(resource.RLIMIT_DATA)[1]\n"
                   "n = n if hard == resource.RLIM_INFINITY else min(n, hard)\n"
                   "resource.setrlimit(resource.RLIMIT_DATA, (n, n))\n"
                   "sys.argv[0] = 'pytest'\n"
                   "runpy.run_module('pytest', run_name='__main__', alter_sys=True)\n")
_JUNIT_CUT = re.compile(r"\[\+\d+ more lines; full report in element text\]$")


def find_root(start: str | Path | None = None) -> Path:
    """The repository root: the first of ``start`` (default CWD) and its parents with ``tests/grade``."""
    here = Path(start or os.getcwd()).resolve()
    for d in (here, *here.parents):
        if (d / "tests" / "grade").is_dir() and (d / "solutions").is_dir():
            return d
    pkg_root = Path(__file__).resolve().parents[2]
    if (pkg_root / "tests" / "grade").is_dir():
        return pkg_root
    raise FileNotFoundError(f"no tests/grade found from {here} upwards or next to the minitvm package; "
                            "run from the minitvm checkout")


@dataclass(frozen=True)
class Grader:
    name: str
    exercise: str
    points: int


def list_graders(chapter: str, root: Path | None = None) -> list[Grader]:
    """The graders in ``tests/grade/test_<chapter>.py``: test name, exercise number, points (read statically)."""
    path = (root or find_root()) / "tests" / "grade" / f"test_{chapter}.py"
    if not path.exists():
        raise FileNotFoundError(f"no graders for {chapter!r}: {path} does not exist")
    out = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            points = 1
            for dec in node.decorator_list:
                if (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "points"
                        and dec.args and isinstance(dec.args[0], ast.Constant)):
                    points = int(dec.args[0].value)
            m = EXERCISE.search(ast.get_docstring(node) or "")
            out.append(Grader(node.name, m.group(1) if m else "?", points))
    return out


@dataclass
class GradeResult:
    exercise: str
    grader: str
    points: int
    earned: int
    status: str  # passed | todo (stub untouched) | failed | error | timeout | memory | crashed
    message: str = ""
    seconds: float = 0.0
    details: str = ""  # the whole failure as pytest printed it (shown with verbose=True)


#: lines of each failure shown under the table (``verbose=True`` shows the whole failure)
DETAIL_LINES = 14


@dataclass
class GradeReport:
    chapter: str
    target: str
    results: list[GradeResult] = field(default_factory=list)
    verbose: bool = False

    @property
    def earned(self) -> int:
        return sum(r.earned for r in self.results)

    @property
    def total(self) -> int:
        return sum(r.points for r in self.results)

    def __str__(self) -> str:
        rows = [("exercise", "grader", "points", "status", "first line of the failure")]
        rows += [(r.exercise, r.grader, f"{r.earned}/{r.points}", r.status, _clip(r.message, 90))
                 for r in self.results]
        widths = [max(len(row[c]) for row in rows) for c in range(4)]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4] for row in rows]
        lines.insert(1, "-" * max(len(x) for x in lines))
        lines.append(f"total: {self.earned}/{self.total} points ({self.chapter}, {self.target}/)")
        lines += self._failures()
        return "\n".join(line.rstrip() for line in lines)

    def _failures(self) -> list[str]:
        """Each failure in full below the table (cut to DETAIL_LINES lines unless verbose)."""
        out: list[str] = []
        for r in self.results:
            if r.status in ("passed", "todo"):
                continue
            text = (r.details or r.message) if self.verbose else r.message
            body = [x for x in text.rstrip().splitlines()]
            if not self.verbose and len(body) > DETAIL_LINES:
                body = body[:DETAIL_LINES] + [f"... ({len(body) - DETAIL_LINES} more lines: "
                                              "`minitvm grade -v` or check(..., verbose=True) shows them)"]
            out += ["", f"exercise {r.exercise} ({r.grader}): {r.status}", *("  " + x for x in body)]
        return out

    def _repr_html_(self) -> str:
        color = {"passed": "#2e7d32"}
        cells = "".join(
            f"<tr><td>{r.exercise}</td><td><code>{r.grader}</code></td><td>{r.earned}/{r.points}</td>"
            f"<td style='color:{color.get(r.status, '#c62828')}'>{r.status}</td>"
            f"<td style='text-align:left'>{html.escape(_clip(r.message, 160))}</td></tr>"
            for r in self.results)
        failures = "\n".join(self._failures()).strip()
        details = (f"<pre style='white-space:pre-wrap;max-width:100%'>{html.escape(failures)}</pre>"
                   if failures else "")
        return (f"<table><tr><th>exercise</th><th>grader</th><th>points</th><th>status</th>"
                f"<th>first line of the failure</th></tr>{cells}</table>"
                f"<p><b>total: {self.earned}/{self.total} points</b> ({self.chapter}, {self.target}/)</p>{details}")

    def __repr__(self) -> str:
        return str(self)


def _clip(text: str, n: int) -> str:
    """The first line of a failure; for a structural mismatch also the two differing values."""
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    if not lines:
        return ""
    first = lines[0]
    for more in lines[1:4]:  # numpy's assert_allclose starts with a short line: take the next ones too
        if len(first) >= 40:
            break
        first += " " + more
    return first if len(first) <= n else first[: n - 1] + "…"


def memory_limit_gib(memory_gib: float | None = None) -> float | None:
    """The memory limit of a grader process in GiB: ``memory_gib``, else the environment's
    ``MINITVM_GRADE_MEMORY_GIB``, else :data:`DEFAULT_MEMORY_GIB`; None (no limit) for 0 or less,
    or where the OS has no ``resource`` limits."""
    if memory_gib is None:
        text = os.environ.get(MEMORY_ENV, "").strip()
        try:
            memory_gib = float(text) if text else DEFAULT_MEMORY_GIB
        except ValueError:
            raise ValueError(f"{MEMORY_ENV}={text!r}: expected a number of GiB (0 for no limit)") from None
    if memory_gib <= 0 or sys.platform == "win32":
        return None
    return float(memory_gib)


def _out_of_memory(grader: Grader, limit: float, text: str, seconds: float) -> GradeResult:
    first = next((x.strip() for x in text.splitlines() if _OUT_OF_MEMORY.search(x)), "")
    return GradeResult(grader.exercise, grader.name, grader.points, 0, "memory",
                       f"used more than {limit:g} GiB of memory (the limit of one exercise; memory_gib= or "
                       f"{MEMORY_ENV} changes it): {first}", seconds, text)


def run_grader(chapter: str, grader: Grader, root: Path, target: str = "exercises",
               timeout: float = 60.0, memory_gib: float | None = None) -> GradeResult:
    """Run one grader in a fresh ``python -m pytest`` subprocess, killed after ``timeout`` seconds
    and held to ``memory_gib`` GiB of memory (see :func:`memory_limit_gib`)."""
    limit = memory_limit_gib(memory_gib)
    with tempfile.TemporaryDirectory(prefix="minitvm-grade-") as tmp:
        xml = Path(tmp) / "report.xml"
        python = [sys.executable, "-m", "pytest"]
        if limit is not None:
            python = [sys.executable, "-c", _LIMITED_PYTEST, str(int(limit * 2 ** 30))]
        cmd = [*python, f"tests/grade/test_{chapter}.py::{grader.name}",
               f"--grade-target={target}", f"--junitxml={xml}", "-q", "--no-header", "-p", "no:cacheprovider",
               "--tb=short"]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return GradeResult(grader.exercise, grader.name, grader.points, 0, "timeout",
                               f"did not finish within {timeout:g} s (an endless loop, or far too slow)",
                               time.perf_counter() - start)
        seconds = time.perf_counter() - start
        status, message, details = _parse_junit(xml) if xml.exists() else (None, "", "")
    if limit is not None and (status in ("failed", "error") and _OUT_OF_MEMORY.search(details or message)
                              or status is None and _OUT_OF_MEMORY.search(out)):
        return _out_of_memory(grader, limit, (details or message) if status else out, seconds)
    if status is None:
        tail = [x for x in out.strip().splitlines() if x.strip()]
        why = f"exit code {proc.returncode}" + (f" (signal {-proc.returncode})" if proc.returncode < 0 else "")
        return GradeResult(grader.exercise, grader.name, grader.points, 0, "crashed",
                           f"the grader process died: {why}; {tail[-1] if tail else 'no output'}", seconds)
    earned = grader.points if status == "passed" else 0
    if status == "failed" and message.startswith("NotImplementedError: exercise"):
        status = "todo"  # the untouched stub
    return GradeResult(grader.exercise, grader.name, grader.points, earned, status, message, seconds, details)


def _parse_junit(path: Path) -> tuple[str | None, str, str]:
    """(status, first failure message, its whole text) over all test cases of one grader
    (parametrized ones have several)."""
    cases = list(ET.parse(path).getroot().iter("testcase"))
    if not cases:
        return None, "", ""
    for case in cases:
        for tag in ("failure", "error"):
            node = case.find(tag)
            if node is not None:
                message = node.get("message") or (node.text or "")
                if _JUNIT_CUT.search(message):  # junit keeps a few lines in the attribute
                    message = node.text or message
                return ("failed" if tag == "failure" else "error"), message, node.text or message
    skipped = [c.find("skipped") for c in cases if c.find("skipped") is not None]
    if len(skipped) == len(cases):
        return "skipped", skipped[0].get("message") or "", ""
    return "passed", "", ""


def check(chapter: str, target: str = "exercises", timeout: float = 60.0, root: str | Path | None = None,
          jobs: int | None = None, only: list[str] | None = None, verbose: bool = False,
          progress: bool = True, memory_gib: float | None = None) -> GradeReport:
    """Grade ``<target>/<chapter>.py``: each grader in its own subprocess; returns the points table.

    In a notebook the returned report shows as a table; ``str(report)`` is the text table, with
    each failure below it (cut short unless ``verbose``).  ``only`` restricts to graders whose
    name or exercise number is listed; ``progress`` prints a line as each grader finishes;
    ``memory_gib`` bounds each grader's memory (see :func:`memory_limit_gib`).
    """
    root = find_root(root)
    graders = list_graders(chapter, root)
    if only:
        graders = [g for g in graders if g.name in only or g.exercise in only]
    jobs = jobs or min(2, os.cpu_count() or 1)
    limit = memory_limit_gib(memory_gib)  # (a bad MINITVM_GRADE_MEMORY_GIB is reported before any grader runs)
    if progress:
        memory = "" if limit is None else f" and {limit:g} GiB"
        print(f"grading {chapter} ({target}/): {len(graders)} exercises, up to {timeout:g} s{memory} each", flush=True)
    results: dict[str, GradeResult] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        running = {pool.submit(run_grader, chapter, g, root, target, timeout, memory_gib): g for g in graders}
        for future in as_completed(running):
            r = future.result()
            results[r.grader] = r
            if progress:
                print(f"  [{len(results)}/{len(graders)}] exercise {r.exercise}: {r.status} ({r.seconds:.1f} s)",
                      flush=True)
    return GradeReport(chapter, target, [results[g.name] for g in graders], verbose)
