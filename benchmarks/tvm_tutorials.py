"""How much of TVM's own documentation tutorials runs on minitvm, block by block.

A learner's next reading after the course is TVM's ``docs/**/tutorials/*.py`` (sphinx-gallery
files: prose in ``####`` comment sections, code between them).  This script runs each tutorial's
code blocks in order, in one namespace per tutorial, with ``import tvm`` answered by minitvm and
``import tvm_ffi`` by ``minitvm_ffi``, and counts the blocks that run.  Blocks that need a GPU
(they name cuda, metal, vulkan, opencl, rocm or webgpu) are counted apart.  Each tutorial runs in
a subprocess with a time limit per block, so one crash or hang costs only its blocks.

    python benchmarks/tvm_tutorials.py --docs /path/to/tvm/docs [--timeout 120] [--only quick_start]

The TVM checkout is not part of minitvm (no download here): pass any version's ``docs`` folder.
``--json FILE`` keeps every block's outcome; ``--python /path/to/venv/bin/python`` runs the same
blocks on that interpreter's installed TVM instead (no alias), to see what TVM itself passes;
``--lend-packages`` appends this interpreter's site-packages to that one's path (same Python
version), so TVM's blocks that need torch or transformers get them where TVM's venv lacks them.
``--compare FILE`` (another run's ``--json``) lists the blocks that run in one and not the other.
Not a test: it prints a table, and the first error of each failing block.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import site
import subprocess
import sys
import time
from pathlib import Path

GPU_WORDS = re.compile(r"\b(cuda|metal|vulkan|opencl|rocm|webgpu|nvptx|cublas|cudnn|tensorrt)\b", re.I)
SECTION = re.compile(r"^#{20,}\s*$|^# %%")


def code_blocks(text: str) -> list[str]:
    """The code blocks of a sphinx-gallery file: what lies between its comment sections."""
    body = re.sub(r'^(?:\s*#[^\n]*\n)*\s*(?:"""|\'\'\').*?(?:"""|\'\'\')', "", text, count=1, flags=re.S)
    blocks, current, in_text = [], [], False
    for line in body.splitlines():
        if SECTION.match(line):
            in_text = True
            blocks.append("\n".join(current))
            current = []
            continue
        if in_text and (line.startswith("#") or not line.strip()):
            continue  # prose of the section
        in_text = False
        current.append(line)
    blocks.append("\n".join(current))
    return [b for b in blocks if b.strip()]


# runs inside the subprocess: alias tvm to minitvm, run the blocks, report one JSON line each
ALIAS = ('from minitvm.eras import EraFinder\n'
         'sys.meta_path.insert(0, EraFinder({"tvm": "minitvm", "tvm_ffi": "minitvm_ffi"}))\n')
RUNNER = r'''
import json, linecache, signal, sys, traceback
ALIAS
blocks, timeout = json.loads(sys.stdin.read())
def on_alarm(*_): raise TimeoutError(f"block ran past {timeout} s")
signal.signal(signal.SIGALRM, on_alarm)
namespace = {"__name__": "__main__"}
for k, code in enumerate(blocks):
    signal.alarm(timeout)
    name = f"<tutorial block {k}>"
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)  # inspect.getsource reads it
    try:
        exec(compile(code, name, "exec"), namespace)
        result = {"block": k, "ok": True}
    except BaseException as err:
        last = traceback.format_exception_only(type(err), err)[-1].strip()
        result = {"block": k, "ok": False, "error": last[:300]}
    finally:
        signal.alarm(0)
    print("@@" + json.dumps(result), flush=True)
'''


def run_tutorial(path: Path, timeout: int, python: str = sys.executable, lend: bool = False) -> list[dict]:
    """Each block's outcome; ``python`` other than this interpreter runs the blocks on its own ``tvm``
    (with ``lend``, this interpreter's packages appended after its own)."""
    blocks = code_blocks(path.read_text())
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    lent = f"sys.path.extend({site.getsitepackages()!r})\n" if lend else ""
    runner = RUNNER.replace("ALIAS", ALIAS if python == sys.executable else lent)
    try:
        proc = subprocess.run([python, "-c", runner], input=json.dumps([blocks, timeout]),
                              capture_output=True, text=True, timeout=timeout * (len(blocks) + 1), env=env,
                              cwd=str(path.parent))
        out = proc.stdout
    except subprocess.TimeoutExpired as err:
        out = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
    done = {r["block"]: r for r in (json.loads(line[2:]) for line in out.splitlines() if line.startswith("@@"))}
    results = []
    for k, code in enumerate(blocks):
        r = done.get(k, {"block": k, "ok": False, "error": "the process died before this block ended"})
        r["gpu"] = bool(GPU_WORDS.search(code))
        results.append(r)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default=os.environ.get("TVM_DOCS"), help="a TVM checkout's docs folder")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per block")
    parser.add_argument("--only", default="", help="run tutorials whose file name contains this")
    parser.add_argument("--errors", action="store_true", help="print the first error of each failing block")
    parser.add_argument("--json", default="", help="write every block's outcome to this file")
    parser.add_argument("--python", default=sys.executable,
                        help="another interpreter runs the blocks on its own installed tvm (no minitvm alias)")
    parser.add_argument("--lend-packages", action="store_true",
                        help="with --python: append this interpreter's site-packages (torch ...) to its path")
    parser.add_argument("--compare", default="", help="another run's --json: list the blocks only one of them runs")
    args = parser.parse_args()
    if not args.docs:
        parser.error("--docs DIR (or TVM_DOCS): the docs folder of a TVM checkout")
    files = sorted(p for p in Path(args.docs).glob("**/tutorials/*.py") if args.only in p.name)
    print(f"load average {os.getloadavg()[0]:.1f}; {len(files)} tutorials from {args.docs}")
    print(f"{'tutorial':42} {'blocks':>6} {'CPU':>5} {'run':>5} {'s':>6}")
    totals, outcomes = [0, 0, 0], {}
    for path in files:
        start = time.perf_counter()
        results = outcomes[str(path.relative_to(args.docs))] = run_tutorial(path, args.timeout, args.python,
                                                                      args.lend_packages)
        cpu = [r for r in results if not r["gpu"]]
        ok = sum(r["ok"] for r in cpu)
        totals = [totals[0] + len(results), totals[1] + len(cpu), totals[2] + ok]
        print(f"{path.stem:42} {len(results):6} {len(cpu):5} {ok:5} {time.perf_counter() - start:6.1f}")
        if args.errors:
            for r in cpu:
                if not r["ok"]:
                    print(f"    block {r['block']}: {r['error']}")
    print(f"{'total':42} {totals[0]:6} {totals[1]:5} {totals[2]:5}   "
          f"({100 * totals[2] / max(1, totals[1]):.0f}% of the CPU blocks run)")
    if args.json:
        Path(args.json).write_text(json.dumps(outcomes, indent=1))
    if args.compare:
        compare(outcomes, json.loads(Path(args.compare).read_text()), args.compare)


def compare(ours: dict, theirs: dict, name: str) -> None:
    """The CPU blocks that run in one of two runs and not in the other (tutorial, block index)."""
    def passed(outcomes: dict) -> set:
        return {(f, r["block"]) for f, rs in outcomes.items() for r in rs if r["ok"] and not r["gpu"]}
    mine, other = passed(ours), passed({f: rs for f, rs in theirs.items() if f in ours})
    for title, blocks in ((f"run in {name} only", other - mine), ("run here only", mine - other)):
        print(f"{title}: {len(blocks)}")
        for f, k in sorted(blocks):
            print(f"    {f} block {k}")


if __name__ == "__main__":
    main()
