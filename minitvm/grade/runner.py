"""Grade a chapter: one process for the chapter, each grader in a child forked from it.

The repository root (which holds ``tests/grade``, ``exercises`` and ``solutions``) is found
from the current directory upwards, else next to the installed ``minitvm`` package; the
chapter's process (:mod:`minitvm.grade.server`) runs pytest there with the root on ``PYTHONPATH``.
It pays interpreter, pytest and library start-up once; each grader runs in a child forked from
it, so a crash, an endless loop or an answer that allocates without bound costs only that exercise.
An exercise that is still the untouched stub is graded ``todo`` from the file's text, without
running anything (:mod:`.untouched`); a chapter with nothing else to grade starts no process.

Each grader may run ``timeout`` seconds, counted from its child's start, and use ``memory_gib`` GiB
of memory (default :data:`DEFAULT_MEMORY_GIB`, or the ``MINITVM_GRADE_MEMORY_GIB`` environment
variable; 0: no limit): an answer that allocates without bound gets a ``MemoryError`` at the limit
and the status ``memory``, instead of the machine's out-of-memory killer taking the grader (or the
notebook) down.  The limit is on the data segment (``RLIMIT_DATA``: heap and private writable
mappings), not the address space: LLVM, numpy and torch reserve large address ranges they
never use (a grader process with torch spans 1.1 GiB of address space but holds 0.4 GiB of
data, the most measured over every chapter's graders).
"""

from __future__ import annotations

import ast
import html
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .untouched import untouched_exercises

EXERCISE = re.compile(r"[Ee]xercise (\d+\.\d+)")
#: GiB of memory (data segment) one grader process may use unless told otherwise
DEFAULT_MEMORY_GIB = 4.0
MEMORY_ENV = "MINITVM_GRADE_MEMORY_GIB"
#: what a process that ran out of memory leaves in its output (Python and numpy's _ArrayMemoryError,
#: C++ (LLVM), glibc)
_OUT_OF_MEMORY = re.compile(r"MemoryError\b|std::bad_alloc|[Oo]ut of memory|Cannot allocate memory")
#: the folder holding the minitvm package that runs the grader
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
#: a line naming an exception, as a traceback's last line or pytest's INTERNALERROR shows it
_EXCEPTION_LINE = re.compile(r"^(?:INTERNALERROR> )?((?:\w+\.)*\w*(?:Error|Exception|Interrupt): .*)")
#: characters of the chapter process's own output kept when it dies
_SERVER_LOG_CHARS = 20_000


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


def _result(grader: Grader, raw: dict, timeout: float, limit: float | None) -> GradeResult:
    """A grader's row from what the chapter's process reported of its child (see :mod:`.server`)."""
    seconds = float(raw.get("seconds", 0.0))
    if raw.get("timeout"):
        return GradeResult(grader.exercise, grader.name, grader.points, 0, "timeout",
                           f"did not finish within {timeout:g} s (an endless loop, or far too slow)", seconds)
    status, message, details = raw.get("status"), raw.get("message", ""), raw.get("details", "")
    out, code = raw.get("output", ""), int(raw.get("exitcode", 0))
    if limit is not None and (status in ("failed", "error") and _OUT_OF_MEMORY.search(details or message)
                              or status is None and _OUT_OF_MEMORY.search(out)):
        return _out_of_memory(grader, limit, (details or message) if status else out, seconds)
    if status is None:
        why = f"exit code {code}" + (f" (signal {-code})" if code < 0 else "")
        message = f"the grader process died: {why}; {_last_words(out)}"
        return GradeResult(grader.exercise, grader.name, grader.points, 0, "crashed", message, seconds,
                           f"{message}\n{out}" if out.strip() else "")
    earned = grader.points if status == "passed" else 0
    if status == "failed" and message.startswith("NotImplementedError: exercise"):
        status = "todo"  # the untouched stub
    return GradeResult(grader.exercise, grader.name, grader.points, earned, status, message, seconds, details)


def _untouched_results(graders: list[Grader], path: Path) -> dict[str, GradeResult]:
    """``todo`` rows, read from the file without running it, for the graders whose exercise is
    still the untouched stub (see :mod:`.untouched`): the message is the one the stub raises."""
    try:
        stubs = untouched_exercises(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return {}  # the graders report what is wrong with the file
    return {g.name: GradeResult(g.exercise, g.name, g.points, 0, "todo", stubs[g.exercise])
            for g in graders if g.exercise in stubs}


def _start_server(chapter: str, graders: list[Grader], root: Path, target: str, timeout: float,
                  limit: float | None, jobs: int, log: Any) -> subprocess.Popen:
    """The chapter's grading process (:mod:`minitvm.grade.server`), run from ``root``."""
    spec = {"chapter": chapter, "target": target, "graders": [g.name for g in graders], "timeout": timeout,
            "memory_bytes": None if limit is None else int(limit * 2 ** 30), "jobs": jobs}
    env = dict(os.environ)
    # the course's root first (its exercises/, and its minitvm if it is a checkout), then the minitvm
    # running this function: the chapter's process needs this version's minitvm.grade.server
    env["PYTHONPATH"] = os.pathsep.join([str(root), _PACKAGE_PARENT, *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.Popen([sys.executable, "-m", "minitvm.grade.server", json.dumps(spec)], cwd=root, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, text=True,
                            encoding="utf-8", start_new_session=True)


def _last_words(text: str) -> str:
    """What a dead process said last: Python's fatal error line if it printed one (a traceback and
    the list of loaded extension modules follow it), else its last exception, else its last line."""
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    fatal = [x for x in lines if x.startswith("Fatal Python error")]
    raised = [m.group(1) for m in map(_EXCEPTION_LINE.match, lines) if m]
    return fatal[-1] if fatal else raised[-1] if raised else lines[-1] if lines else "no output"


def _server_died(grader: Grader, chapter: str, code: int | None, log: Any) -> GradeResult:
    log.seek(0)
    text = log.read().decode("utf-8", "replace")
    message = (f"the grading process of {chapter} ended before this exercise (exit code {code}); "
               f"{_last_words(text)}")
    return GradeResult(grader.exercise, grader.name, grader.points, 0, "crashed", message, 0.0,
                       f"{message}\n{text[-_SERVER_LOG_CHARS:]}")


def check(chapter: str, target: str = "exercises", timeout: float = 60.0, root: str | Path | None = None,
          jobs: int | None = None, only: list[str] | None = None, verbose: bool = False,
          progress: bool = True, memory_gib: float | None = None) -> GradeReport:
    """Grade ``<target>/<chapter>.py``: one process for the chapter, each grader in a child forked
    from it (``jobs`` at a time, default 2 or the CPUs if fewer), each with ``timeout`` seconds from
    its own start; returns the points table.

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
    results = _untouched_results(graders, root / target / f"{chapter}.py")
    if progress:
        for k, r in enumerate(results.values(), 1):
            print(f"  [{k}/{len(graders)}] exercise {r.exercise}: todo (the stub, untouched)", flush=True)
    to_run = [g for g in graders if g.name not in results]
    if not to_run:  # nothing to run (and pytest given no test would run every test it finds)
        return GradeReport(chapter, target, [results[g.name] for g in graders], verbose)
    by_name = {g.name: g for g in to_run}
    with tempfile.TemporaryFile() as log:
        server = _start_server(chapter, to_run, root, target, timeout, limit, jobs, log)
        try:
            for line in server.stdout:  # one line per grader, as its child finishes
                raw = json.loads(line)
                r = results[raw["grader"]] = _result(by_name[raw["grader"]], raw, timeout, limit)
                if progress:
                    print(f"  [{len(results)}/{len(graders)}] exercise {r.exercise}: {r.status} ({r.seconds:.1f} s)",
                          flush=True)
            code = server.wait()
        finally:
            if server.poll() is None:  # interrupted: the process kills its children as it ends
                server.terminate()
                try:
                    server.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)
                    server.wait()
        for g in graders:
            if g.name not in results:
                results[g.name] = _server_died(g, chapter, code, log)
    return GradeReport(chapter, target, [results[g.name] for g in graders], verbose)
