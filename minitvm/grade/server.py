"""The grading process of one chapter: start-up paid once, each grader in a forked child.

:func:`minitvm.grade.check` starts ``python -m minitvm.grade.server SPEC`` once per chapter.  This
process imports pytest (without the installed plugins such as hypothesis's: no grader uses them), numpy,
minitvm and whatever else of torch, numpy and minitvm the chapter's graders and exercise file
import, sets up LLVM's native target, exports one tiny model when the chapter uses torch
(torch.export's first call costs seconds), collects ``tests/grade/test_<chapter>.py`` once, and
then forks one child per grader (``jobs`` at a time).  A child starts from that warm state (a fork
costs milliseconds where a fresh ``python -m pytest`` cost seconds), sets its memory limit, runs
the grader's test cases through pytest's own protocol (fixtures, the grade plugin's messages) and
writes the outcome to a file.  The parent kills a child that outlives its ``timeout`` -- the clock
starts at the fork, when the exercise starts -- and a child that dies without an outcome (a
segfault, ``os._exit``) costs only its own exercise; a finished child's leftover subprocesses
(its process group) are killed with it.  The learner's exercise file is imported in the children
only: an endless loop or a crash at its import is an exercise's timeout or crash, not the chapter's.

Forking is safe here because this process runs no thread of its own when it forks: it builds
nothing (so neither minitvm's thread pool nor an LLVM JIT engine starts), deep threads
(``minitvm.ir.deep``, used while collection parses the graders' TVMScript) are not kept idle and
are joined before the first fork, tqdm's monitor thread is kept off during the torch warm-up, and
torch's and OpenMP's pools start at their first parallel operation, which only a child runs.
OpenBLAS starts its threads when numpy loads, and stops them itself before a fork (its
``pthread_atfork`` handler: after the first fork this process has one thread); a child starts its
own at its first BLAS call.  Before the first fork the process checks that no thread started since
it began (Python's or the OS's) still runs, and refuses to fork otherwise.

The outcomes go back to ``check`` as one JSON line per grader on this process's original standard
output; pytest's own printing goes to standard error.
"""

from __future__ import annotations

import ast
import collections
import ctypes
import faulthandler
import gc
import importlib
import inspect
import json
import os
import resource
import signal
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, TextIO

import pytest

from ..ir import deep
from ..target.codegen.llvm_jit import init_llvm

#: the libraries a chapter's files may import that are worth importing once, before the forks
_PRELOAD_ROOTS = ("minitvm", "numpy", "torch")
#: seconds between looks at the running children
_POLL = 0.005
#: characters of a child's own output (stdout and stderr) sent back: its last lines name a crash
_OUTPUT_CHARS = 20_000
_PR_SET_PDEATHSIG = 1


def preload(root: Path, chapter: str, target: str) -> list[str]:
    """Import the modules of torch, numpy and minitvm that the graders and the chapter's file import
    at their top level (read, not run: the learner's file is never imported here)."""
    names: list[str] = []
    for path in (root / "tests" / "grade" / f"test_{chapter}.py", root / target / f"{chapter}.py"):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue  # a broken exercise file is reported by its graders
        for node in tree.body:
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.append(node.module)
    loaded = []
    # what every grader's child would otherwise import: numpy's random module (imported lazily),
    # the messages of a failing grader, the LLVM code generator of a first build
    names += ["numpy.random", "minitvm.grade.messages", "minitvm.target.codegen.llvm"]
    for name in dict.fromkeys(n for n in names if n.split(".")[0] in _PRELOAD_ROOTS):
        try:
            importlib.import_module(name)
            loaded.append(name)
        except Exception:  # noqa: BLE001 - the child that needs it reports the failure
            pass
    # LLVM's native target set up once (it starts no thread; the JIT engines, and minitvm's
    # thread pool with its threads, start in the child that builds)
    init_llvm()
    if "torch" in sys.modules:
        warm_up_torch()
    return loaded


def warm_up_torch() -> None:
    """Export (and import into Relax) a tiny model once: torch.export's first call imports ~400
    more modules and fills torch's and minitvm's caches, 3-4 s that every grader exporting a
    model would pay again.  Nothing here starts a thread (the tensors are far below the size at
    which torch runs an operator on its thread pool)."""
    # imported here, not at the top: only a chapter whose files import torch pays for torch
    import torch

    from ..relax.frontend.torch import from_exported_program  # lazy: the same reason as torch's, above

    try:  # torch.fx's interpreter opens a hidden tqdm bar, and tqdm's first bar starts a monitor thread
        from tqdm import tqdm as bars
    except ImportError:
        bars = None
    interval = getattr(bars, "monitor_interval", None)
    if bars is not None:
        bars.monitor_interval = 0  # no monitor here; a child's first bar starts one as usual
    try:
        model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
        from_exported_program(torch.export.export(model, (torch.randn(2, 4),)), unwrap_unit_return_tuple=True)
    finally:
        if bars is not None:
            bars.monitor_interval = interval


def native_threads() -> dict[str, str]:
    """This process's threads (Linux: from /proc), by id: their names."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return {}
    names = {}
    for tid in tasks:
        try:
            names[tid] = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
        except OSError:
            pass  # ended meanwhile
    return names


def outcome(reports: list[Any]) -> tuple[str, str, str]:
    """(status, first failure message, its whole text) over a grader's test cases, as pytest's
    JUnit report words them: a failure in the test's body is ``failed``, one in its set-up or
    tear-down an ``error``; all cases skipped is ``skipped``."""
    for report in reports:
        if not report.failed:
            continue
        crash = getattr(report.longrepr, "reprcrash", None)
        reason = crash.message if crash is not None else str(report.longrepr)
        if report.when == "call":
            return "failed", reason, str(report.longrepr)
        return "error", f'failed on {report.when} with "{reason}"', str(report.longrepr)
    calls = [r for r in reports if r.when == "call" or r.skipped]
    if calls and all(r.skipped for r in calls):
        longrepr = calls[0].longrepr
        return "skipped", (longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)), ""
    return "passed", "", ""


class ForkLoop:
    """pytest plugin that replaces the test loop: each grader's cases run in a forked child."""

    def __init__(self, graders: list[str], timeout: float, memory_bytes: int | None, jobs: int,
                 channel: TextIO, workdir: Path) -> None:
        self.graders, self.timeout, self.memory_bytes = graders, timeout, memory_bytes
        self.jobs, self.channel, self.workdir = max(1, jobs), channel, workdir
        self.collect_errors: list[str] = []
        self.reports: list[Any] = []  # a child's reports of its grader
        self.idle_threads = deep.MAX_IDLE_THREADS
        self.threads_at_start = native_threads()  # the main thread and OpenBLAS's (see the module's doc)

    def send(self, grader: str, **fields: Any) -> None:
        self.channel.write(json.dumps({"grader": grader, **fields}) + "\n")
        self.channel.flush()

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors.append(str(report.longrepr))

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.reports.append(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: Any) -> bool:
        cases: dict[str, list[Any]] = collections.defaultdict(list)
        for item in session.items:
            cases[getattr(item, "originalname", None) or item.name.split("[")[0]].append(item)
        todo = []
        for name in self.graders:
            if cases.get(name):
                todo.append((name, cases[name]))
            else:  # its file did not import, or no such test: what pytest said
                details = "\n".join(self.collect_errors) or f"pytest collected no test named {name}"
                first = details.strip().splitlines()[0] if details.strip() else ""
                self.send(name, status="error", message=f"collection failure: {first}", details=details,
                          seconds=0.0, output="", exitcode=0, timeout=False)
        self.before_forking(session.config)
        self.run(todo)
        return True

    def before_forking(self, config: Any) -> None:
        """No thread but this one (and OpenBLAS's, there from the start); the pytest temporary
        folder shared (children make numbered folders in it); the objects so far frozen, so a
        child's collector leaves their pages shared."""
        for thread in threading.enumerate():
            if thread is not threading.current_thread():
                thread.join(timeout=10)
        alive = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
        deadline = time.monotonic() + 5  # a joined thread's OS thread ends a moment after join returns
        while (started := self.threads_started()) and time.monotonic() < deadline:
            time.sleep(_POLL)
        if alive or started:
            raise RuntimeError("the grading process of a chapter must not fork with threads running: "
                               f"{alive or started}")
        factory = getattr(config, "_tmp_path_factory", None)
        if factory is not None:
            factory.getbasetemp()
        # pytest's traceback of a failure asks inspect for each frame's module, which first maps
        # every loaded module's file (~0.2 s): map them once here, not in every failing child
        inspect.getmodule(ForkLoop.child.__code__)
        gc.collect()
        gc.freeze()

    def threads_started(self) -> list[str]:
        """The names of the OS threads that were not there when this process started."""
        return sorted(name for tid, name in native_threads().items() if tid not in self.threads_at_start)

    def run(self, todo: list[tuple[str, list[Any]]]) -> None:
        pending = collections.deque(todo)
        running: dict[int, tuple[str, float]] = {}
        try:
            while pending or running:
                while pending and len(running) < self.jobs:
                    name, items = pending.popleft()
                    running[self.fork(name, items)] = (name, time.perf_counter())
                if not self.reap(running):
                    time.sleep(_POLL)
        finally:
            for pid in running:  # interrupted: no child outlives this process
                _kill_group(pid)
                os.waitpid(pid, 0)

    def fork(self, name: str, items: list[Any]) -> int:
        for stream in (sys.stdout, sys.stderr, self.channel):
            stream.flush()
        pid = os.fork()
        if pid == 0:
            self.child(name, items)  # never returns
        try:
            os.setpgid(pid, pid)  # also set by the child: whichever runs first
        except OSError:
            pass
        return pid

    def reap(self, running: dict[int, tuple[str, float]]) -> int:
        """Report the children that finished or ran out of time; how many did."""
        done = 0
        for pid, (name, started) in list(running.items()):
            seconds = time.perf_counter() - started
            exited = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
            if not exited and seconds <= self.timeout:
                continue
            _kill_group(pid)  # its own subprocesses too, before the group's id can be reused
            _, status = os.waitpid(pid, 0)
            del running[pid]
            done += 1
            if not exited:
                self.send(name, timeout=True, seconds=seconds)
                continue
            self.send(name, timeout=False, seconds=seconds, exitcode=os.waitstatus_to_exitcode(status),
                      output=_tail(self.workdir / f"{name}.out"), **_read_outcome(self.workdir / f"{name}.json"))
        return done

    def child(self, name: str, items: list[Any]) -> None:
        """The grader's cases in this forked child; its outcome in ``<name>.json``; never returns."""
        code = 70
        try:
            os.setpgid(0, 0)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the chapter's handler is for the chapter's process
            _die_with_parent()
            os.close(self.channel.fileno())
            out = os.open(self.workdir / f"{name}.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out, 1)
            os.dup2(out, 2)
            faulthandler.enable(file=out, all_threads=True)  # a crash's traceback, whatever fd 2 is then
            if self.memory_bytes is not None:
                hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
                n = self.memory_bytes if hard == resource.RLIM_INFINITY else min(self.memory_bytes, hard)
                resource.setrlimit(resource.RLIMIT_DATA, (n, n))
            deep.MAX_IDLE_THREADS = self.idle_threads
            for k, item in enumerate(items):
                nextitem = items[k + 1] if k + 1 < len(items) else None
                item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            status, message, details = outcome(self.reports)
            result = self.workdir / f"{name}.json"
            partial = result.with_suffix(".part")
            partial.write_text(json.dumps({"status": status, "message": message, "details": details}))
            partial.rename(result)  # whole or absent: a child killed while writing left no outcome
            code = 0
        except BaseException:  # noqa: BLE001 - reported as this exercise's crash, never raised into pytest
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001
                    pass
            os._exit(code)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass  # already gone


def _die_with_parent() -> None:
    """Linux: this child gets SIGKILL when the chapter's process dies, killed or not."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - _OUTPUT_CHARS))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _read_outcome(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"status": None, "message": "", "details": ""}


def main(argv: list[str] | None = None) -> int:
    spec = json.loads((argv if argv is not None else sys.argv[1:])[0])
    root, chapter, target = Path.cwd(), spec["chapter"], spec["target"]
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # pytest's printing (and a stray print) must not mix with the outcomes
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # check() interrupted: the finally kills the children
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="minitvm-grade-") as tmp:
        loop = ForkLoop(spec["graders"], spec["timeout"], spec["memory_bytes"], spec["jobs"], channel, Path(tmp))
        deep.MAX_IDLE_THREADS = 0  # a deep thread that the warm-up or collection starts ends with its job
        preloaded = preload(root, chapter, target)
        args = [*(f"tests/grade/test_{chapter}.py::{name}" for name in spec["graders"]),
                f"--grade-target={target}", "-q", "--no-header", "-p", "no:cacheprovider", "--tb=short",
                # no installed plugin is loaded (hypothesis, xdist, anyio ...): no grader uses them, and
                # they cost ~1.3 s of start-up (hypothesis's ~1 s); the grade plugin comes from addopts
                "--disable-plugin-autoload",
                # sys-level capture: every child a capture of its own (fd-level capture would share
                # one temporary file between concurrent children); a crash's output lands in its file
                "--capture=sys", f"--basetemp={Path(tmp) / 'pytest'}"]
        print(f"grade server: {chapter} ({target}/) ready in {time.perf_counter() - started:.2f} s "
              f"(preloaded {', '.join(preloaded) or 'nothing'})", file=sys.stderr, flush=True)
        return int(pytest.main(args, plugins=[loop]))


if __name__ == "__main__":
    sys.exit(main())
