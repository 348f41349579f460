"""How much of TVM's own Python test suite passes on minitvm, directory by directory.

Runs the test files of a TVM checkout with ``import tvm`` answered by minitvm (and
``import tvm_ffi`` by ``minitvm_ffi``) through ``minitvm.eras.EraFinder``, as
``benchmarks/tvm_tutorials.py`` does; ``tvm.testing``'s pytest helpers are minitvm's
(``minitvm.testing.utils`` and its plugin: ``llvm`` is the only enabled target, tests marked
for a GPU are skipped).  Each test file runs in its own pytest subprocess with a time limit, so
a crash or hang costs only that file.

The directories counted are those whose subject minitvm covers (under ``tests/python``):
``arith``, ``ir``, ``te``, ``tvmscript``, ``relax``, and TIR's -- v0.23's ``tir-base``,
``tir-analysis``, ``tir-transform``, ``tir-schedule``; TVM 0.27's ``tirx-base``,
``tirx-analysis``, ``tirx-transform``, ``s_tir`` (schedule, its passes, meta-schedule).
Left out: codegen, runtime, contrib, disco, target, dlight, meta_schedule (v0.23) --
mostly GPU targets, RPC and C++ runtime internals.

    python benchmarks/tvm_tests.py --tvm /tmp/tvm023 [--files 'relax/test_op_*.py'] [--timeout 120]

A test module that fails to import counts its ``def test_`` functions as errored.  Not a
test: it prints a table (per directory: passed / failed / errored / skipped / total) and the
machine's load; ``--errors`` adds each failing test's one-line error, for grouping by cause.
A test whose error says it needs what a CPU-only machine with torch's CPU wheel cannot have
(torchvision, a GPU, a vendor library such as cuBLAS or CUTLASS) counts as ``environment``,
outside the pass rate.  A file that runs past ``--timeout`` is resumed from the test it was
running, so a long file is counted whole and a hanging test costs one time limit.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

DIRS = ("arith", "ir", "te", "tvmscript", "relax", "tir-base", "tir-analysis", "tir-transform",
        "tir-schedule", "tirx-base", "tirx-analysis", "tirx-transform", "s_tir")

# runs inside the subprocess: alias tvm to minitvm, run pytest on one file (leaving out the tests
# listed in the JSON file argv[2]), print each test's outcome as it finishes so a run cut short
# by the time limit keeps what it did
RUNNER = r"""
import json, sys
from minitvm.eras import EraFinder
sys.meta_path.insert(0, EraFinder({"tvm": "minitvm", "tvm_ffi": "minitvm_ffi"}))
import pytest
def first_error(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return (crash.message.strip().splitlines() or [""])[0][:300]
    lines = str(report.longrepr).strip().splitlines()
    said = [l[1:].strip() for l in lines if l.startswith("E ") and l[1:].strip().strip("|^ ")]
    return (said[-1] if said else lines[-1] if lines else "")[:300]
def say(tag, value):  # on a line of its own: pytest's progress dots have no newline
    print("\n@@" + tag + " " + json.dumps(value), flush=True)
class Count:
    def __init__(self, done): self.done = done; self.results = {}; self.collect_error = None
    def pytest_collectreport(self, report):
        if report.failed: self.collect_error = first_error(report)
    def pytest_collection_modifyitems(self, config, items):
        gone = [item for item in items if item.nodeid in self.done]
        if gone:
            items[:] = [item for item in items if item.nodeid not in self.done]
            config.hook.pytest_deselected(items=gone)
    def pytest_runtest_logstart(self, nodeid, location): say("start", nodeid)
    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            kind = {"passed": "passed", "skipped": "skipped"}.get(report.outcome) or (
                "failed" if report.when == "call" else "errored")
            if hasattr(report, "wasxfail"): kind = "skipped"  # xfail: TVM's own expected failure
            old = self.results.get(report.nodeid)
            if old is None or old[0] == "passed":
                err = first_error(report) if report.failed else ""
                self.results[report.nodeid] = (kind, err)
    def pytest_runtest_logfinish(self, nodeid, location):
        if nodeid in self.results: say("result", [nodeid, self.results[nodeid]])
count = Count(set(json.load(open(sys.argv[2]))))
pytest.main([sys.argv[1], "-q", "-p", "no:cacheprovider", "-p", "minitvm.testing.plugin",
             "-W", "ignore", "--no-header", "-o", "addopts="], plugins=[count])
say("end", {"collect_error": count.collect_error})
"""

# errors that say the test needs what this machine cannot have (torchvision beside the CPU
# torch, a GPU, a vendor library): counted apart from minitvm's failures
ENVIRONMENT = re.compile(
    r"No module named '(torchvision|(tvm|minitvm)\.(contrib\.(cutlass|thrust|cublas|cudnn|xcode|coreml"
    r"|tensorrt|nccl|hipblas|rocblas|miopen|mps|nnapi|clml|nvcc|rocm)"
    r"|relax\.backend\.(cuda|rocm|metal|adreno)))\b"
    r"|Torch not compiled with CUDA|CUDA driver|no CUDA-capable device")


def classify(kind: str, err: str) -> str:
    return "environment" if kind in ("failed", "errored") and ENVIRONMENT.search(err) else kind


def run_once(path: Path, timeout: int, era: str, done: set[str]) -> tuple[list, str | None]:
    """One pytest process over ``path`` leaving out ``done``: its messages (tag, value), and
    why it stopped early (None when it ran to the end)."""
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(Path(__file__).resolve().parent.parent),
               MINITVM_ERA=era)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "done.json").write_text(json.dumps(sorted(done)))
        with open(Path(tmp) / "out", "w+") as out:
            proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(path), str(Path(tmp) / "done.json")],
                                    stdout=out, stderr=subprocess.DEVNULL, text=True, env=env,
                                    cwd=str(path.parent))
            try:
                code, why = proc.wait(timeout=timeout), None
            except subprocess.TimeoutExpired:
                proc.kill()
                code, why = proc.wait(), f"ran past {timeout} s"
            out.seek(0)
            said = [line[2:].split(" ", 1) for line in out.read().splitlines() if line.startswith("@@")]
    messages = [(tag, json.loads(value)) for tag, value in said]
    if why is None and not any(tag == "end" for tag, _ in messages):
        why = f"the process died (exit {code})"
    return messages, why


def run_file(path: Path, timeout: int, era: str) -> dict:
    """{nodeid: (outcome, first error line)} for one test file, run in its own process; IR that
    names no era prints in ``era``'s names (those of the TVM the tests were written for).

    A file whose process runs past ``timeout`` or dies is run again from the first test that did
    not finish: a test that hangs or crashes the process is counted errored (with why) and the
    rest still run, so a file that is only long is counted whole."""
    results: dict[str, tuple[str, str]] = {}
    while True:
        messages, why = run_once(path, timeout, era, set(results))
        new = {nodeid: tuple(outcome) for tag, (nodeid, outcome) in
               ((t, v) for t, v in messages if t == "result")}
        results.update(new)
        if why is None:
            break
        started = [v for t, v in messages if t == "start" and v not in results]
        if started and why.startswith("the process died"):
            results[started[-1]] = ("errored", f"{why} in this test")
        elif started and not new:  # a whole time limit without one test finishing: a hang
            results[started[-1]] = ("errored", f"the test {why}")
        elif not new:
            break  # nothing started: the file hangs or dies before its first test
    ends = [v for t, v in messages if t == "end"]
    collect_error = ends[-1]["collect_error"] if ends else None
    if results and not collect_error:
        return {k: (classify(kind, err), err) for k, (kind, err) in results.items()}
    why = collect_error or (f"the file {why}" if why and why.startswith("ran") else why) or "no test ran"
    # nothing ran: every test function the file defines counts as errored, with the cause
    names = re.findall(r"^\s*def (test_\w+)", path.read_text(), flags=re.M)
    return {f"{path.name}::{name}": (classify("errored", why), why) for name in names}


def checkout_era(root: Path) -> str:
    """The era of TVM's names a checkout's tests use: v0.23 has ``tir-schedule``, 0.27 ``s_tir``."""
    return "0.23" if (root / "tir-schedule").is_dir() else "0.27"


def select_files(root: Path, patterns: list[str], every: int) -> list[Path]:
    """Test files under ``root`` in the covered directories, matching any pattern; with
    ``every`` > 1, every k-th file of each directory (a deterministic sample)."""
    chosen = []
    for d in DIRS:
        files = sorted(p for p in (root / d).rglob("test_*.py")
                       if any(fnmatch.fnmatch(str(p.relative_to(root)), pat) for pat in patterns))
        chosen += files[::every]
    return chosen


def print_table(by_dir: dict[str, dict], seconds: float) -> None:
    kinds = ("passed", "failed", "errored", "skipped", "environment")
    print(f"{'directory':16} {'files':>5} " + " ".join(f"{k[:7]:>7}" for k in kinds) + f" {'total':>6} {'pass%':>6}")
    totals = dict.fromkeys(kinds, 0)
    nfiles = 0
    for d, info in by_dir.items():
        counts = [sum(1 for kind, _ in info["results"].values() if kind == k) for k in kinds]
        for k, c in zip(kinds, counts):
            totals[k] += c
        nfiles += info["files"]
        run = sum(counts[:3])
        print(f"{d:16} {info['files']:5} " + " ".join(f"{c:7}" for c in counts) +
              f" {sum(counts):6} {100 * counts[0] / max(1, run):5.0f}%")
    run = totals["passed"] + totals["failed"] + totals["errored"]
    print(f"{'total':16} {nfiles:5} " + " ".join(f"{totals[k]:7}" for k in kinds) +
          f" {sum(totals.values()):6} {100 * totals['passed'] / max(1, run):5.0f}%")
    print(f"pass% = passed / (passed + failed + errored); environment: the test needs torchvision, a GPU "
          f"or a vendor library (told by its error); {seconds:.0f} s; load average now "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tvm", required=True, help="a TVM checkout (holds tests/python)")
    parser.add_argument("--files", default="*", help="comma-separated globs, relative to tests/python")
    parser.add_argument("--every", type=int, default=1, help="run every k-th file of each directory")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test file")
    parser.add_argument("--jobs", type=int, default=2, help="files run at once")
    parser.add_argument("--errors", action="store_true", help="print each failing test's error")
    parser.add_argument("--json", help="write every test's outcome to this file")
    args = parser.parse_args()
    root = Path(args.tvm) / "tests" / "python"
    files = select_files(root, args.files.split(","), args.every)
    print(f"load average {os.getloadavg()[0]:.1f}; {len(files)} test files from {root}")
    start = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        era = checkout_era(root)
        outcomes = list(pool.map(lambda p: run_file(p, args.timeout, era), files))
    by_dir: dict[str, dict] = {}
    for path, results in zip(files, outcomes):
        info = by_dir.setdefault(path.relative_to(root).parts[0], {"files": 0, "results": {}})
        info["files"] += 1
        info["results"].update({f"{path.relative_to(root)}::{k.split('::', 1)[-1]}": v
                                for k, v in results.items()})
    print_table(by_dir, time.perf_counter() - start)
    if args.errors:
        for info in by_dir.values():
            for nodeid, (kind, err) in info["results"].items():
                if kind in ("failed", "errored", "environment"):  # N: not applicable here
                    print(f"{'N' if kind == 'environment' else kind[0].upper()} {nodeid}: {err}")
    if args.json:
        Path(args.json).write_text(json.dumps({d: i["results"] for d, i in by_dir.items()}, indent=0))


if __name__ == "__main__":
    main()
