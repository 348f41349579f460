"""How much of TVM's own documentation tutorials runs on minitvm, block by block.

A learner's next reading after the course is TVM's ``docs/**/tutorials/*.py`` (sphinx-gallery
files: prose in ``####`` comment sections, code between them).  This script runs each tutorial's
code blocks in order, in one namespace per tutorial, with ``import tvm`` answered by minitvm and
``import tvm_ffi`` by ``minitvm_ffi``, and counts the blocks that run.  Every block runs; left out
of the count are those that need what this machine lacks: a GPU or a download named in their own
code (comments and ``print`` calls aside), a third-party package the interpreter lacks (the block
fails importing it), or a name whose last binding came from such a block -- read as the block
runs, or read inside a function or class the block calls (``ast`` tracks what each statement
binds and reads; a NameError for a name only left-out blocks bind counts too).  A left-out block
whose error is not the one its needs explain (a missing ``tvm`` name, say) fails on its own: it
is counted, as a CPU block that fails.  ``--errors`` prints why each block is left out.  Each
tutorial runs in a subprocess with a time limit per block, so one crash or hang costs only its
blocks.

    python benchmarks/tvm_tutorials.py --docs /path/to/tvm/docs [--timeout 120] [--only quick_start]

The TVM checkout is not part of minitvm (no download here): pass any version's ``docs`` folder.
``--json FILE`` keeps every block's outcome; ``--python /path/to/venv/bin/python`` runs the same
blocks on that interpreter's installed TVM instead (no alias), to see what TVM itself passes;
``--lend-packages`` appends this interpreter's site-packages to that one's path (same Python
version), so TVM's blocks that need torch or transformers get them where TVM's venv lacks them.
``--compare FILE`` (another run's ``--json``) lists the blocks that run in one and not the other;
``--results FILE`` classifies and prints a saved ``--json`` run again without running anything.
Not a test: it prints a table, and the first error of each failing block.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import re
import site
import subprocess
import sys
import time
import tokenize
from pathlib import Path

GPU_WORDS = re.compile(r"\b(cuda|metal|vulkan|opencl|rocm|webgpu|nvptx|cublas|cudnn|tensorrt|nvidia)\b", re.I)
# what fetches weights or data from the network (pretrained models, the HF hub, URLs)
DOWNLOAD_WORDS = re.compile(r"pre-?trained|_Weights\.|download|urlopen|urlretrieve|requests\.get", re.I)
# errors a GPU or a download explains; an AttributeError/ImportError is a missing name, never explained
GPU_ERROR = re.compile(r"cuda|gpu|cublas|cudnn|nvidia|metal|vulkan|opencl|rocm|device", re.I)
NET_ERROR = re.compile(r"connect|internet|network|download|resolve|pre-?trained|weights|hugging ?face|url|http", re.I)
SECTION = re.compile(r"^#{20,}\s*$|^# %%")
LABEL = {"gpu": "GPU", "download": "download", "package": "missing-package"}


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


def strip_comments(code: str) -> str:
    """The block with its comments blanked (strings kept: ``tvm.device("cuda")`` names a GPU, a
    comment mentioning cuBLAS does not); positions are unchanged, so ``ast`` offsets still hold."""
    lines = code.split("\n")
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == tokenize.COMMENT:
                row, col = tok.start
                lines[row - 1] = lines[row - 1][:col]
    except (tokenize.TokenError, SyntaxError):
        return code
    return "\n".join(lines)


class _Names(ast.NodeVisitor):
    """Which module-level names one statement binds, which it reads as it runs (before binding
    them), and which the bodies of the functions and classes it defines read later, when called."""

    def __init__(self):
        self.defines, self.reads, self.deferred = set(), set(), set()
        self.hidden: list[set] = []  # names local to the enclosing functions, classes, comprehensions
        self.in_function = 0

    def load(self, name: str) -> None:
        if any(name in scope for scope in self.hidden):
            return
        if self.in_function:
            self.deferred.add(name)
        elif name not in self.defines:
            self.reads.add(name)

    def store(self, name: str) -> None:
        (self.hidden[-1] if self.hidden else self.defines).add(name)

    def visit_Name(self, node):
        (self.load if isinstance(node.ctx, ast.Load) else self.store)(node.id)

    def visit_Assign(self, node):  # the value runs before the names are bound
        self.visit(node.value)
        for target in node.targets:
            self.visit(target)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            self.load(node.target.id)
        self.visit(node.value)
        self.visit(node.target)

    def visit_AnnAssign(self, node):
        for part in (node.annotation, node.value, node.target):
            if part is not None:
                self.visit(part)

    def visit_For(self, node):
        self.visit(node.iter)
        self.visit(node.target)
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        self.visit(node.target)

    def visit_Import(self, node):
        for alias in node.names:
            self.store(alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node):
        for alias in node.names:
            if alias.name != "*":
                self.store(alias.asname or alias.name)

    def visit_ExceptHandler(self, node):
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self.store(node.name)
        for stmt in node.body:
            self.visit(stmt)

    def _scoped(self, local: set, body: list, function: bool) -> None:
        self.hidden.append(local)
        self.in_function += function
        for part in body:
            self.visit(part)
        self.in_function -= function
        self.hidden.pop()

    def visit_FunctionDef(self, node):
        # decorators, defaults and annotations run now; the body when called
        args = node.args
        for part in node.decorator_list + args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.visit(part)
        params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a}
        assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        declared = {name for n in ast.walk(node) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
        self._scoped(params | (assigned - declared), node.body, function=True)
        self.store(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
        self._scoped(params, [node.body], function=True)

    def visit_ClassDef(self, node):
        for part in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.visit(part)
        self._scoped(set(), node.body, function=False)  # a class body runs now, its names are attributes
        self.store(node.name)

    def _comprehension(self, node):
        local = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        parts = [g.iter for g in node.generators] + [c for g in node.generators for c in g.ifs]
        elts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        self._scoped(local, parts + elts, function=False)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension


def statement_names(code: str) -> list[tuple[str, set, set, set]]:
    """Per module-level statement of a block: its source (comments and ``print`` calls blanked: a GPU
    a tutorial only talks about is not one it uses), the names it binds, reads as it runs and reads
    later inside its functions.  A block that does not parse gives none."""
    code = strip_comments(code)
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    out = []
    for stmt in tree.body:
        names = _Names()
        names.visit(stmt)
        text = ast.get_source_segment(code, stmt) or ""
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                text = text.replace(ast.get_source_segment(code, node) or "\0", "")
        out.append((text, names.defines, names.reads, names.deferred))
    return out


def own_reasons(text: str) -> list[tuple[str, str]]:
    """What a piece of code needs by its own words: a GPU, a download."""
    found = []
    for category, words, what in (("gpu", GPU_WORDS, "a GPU"), ("download", DOWNLOAD_WORDS, "a download")):
        hit = words.search(text)
        if hit:
            found.append((category, f"names {what} (`{hit.group(0)}`)"))
    return found


def _error_name(error: str, kind: str) -> str | None:
    """The name in a NameError ("name 'x' is not defined") or a missing module's name (top level)."""
    pattern = {"NameError": r"^NameError: name '(\w+)'",
               "module": r"^ModuleNotFoundError: No module named '(\w+)"}[kind]
    hit = re.match(pattern, error)
    return hit.group(1) if hit else None


def _explained(error: str, roots: set, tainted: dict) -> bool:
    """Whether an excluded block's error is the one its exclusion predicts (else it fails on its own)."""
    if _error_name(error, "NameError") in tainted:
        return True
    if error.startswith("ModuleNotFoundError"):
        return "package" in roots and not _error_name(error, "module").startswith("tvm")
    if error.startswith(("AttributeError", "ImportError", "SyntaxError")):
        return False  # a name minitvm (or TVM) lacks: no GPU or network explains it
    return ("gpu" in roots and bool(GPU_ERROR.search(error))) or ("download" in roots and bool(NET_ERROR.search(error)))


def _statement_taint(k: int, stmt: tuple, tainted: dict) -> tuple[list, tuple | None]:
    """One statement's reasons to be left out, and the taint (root, why) of the names it binds."""
    text, _, reads, deferred = stmt
    own = own_reasons(text)
    used = [(n, tainted[n]) for n in sorted(reads) if n in tainted]
    # names bound earlier in the same block pass their taint on, but are no reason of their own
    reasons = own + [(root, f"uses `{n}` defined by {why}") for n, (root, _, why, j) in used if j != k]
    if own:
        origin = f"{LABEL[own[0][0]]} block {k}"
        return reasons, (own[0][0], origin, origin, k)
    if used:
        n, (root, origin, why, j) = used[0]  # bound earlier in this block: its own story holds
        return reasons, (root, origin, why if j == k else f"block {k} (through `{n}` of {origin})", k)
    later = [(n, tainted[n]) for n in sorted(deferred) if n in tainted]
    if later:  # a function or class whose code reads a left-out name when called: its name carries that
        n, (root, origin, _, _) = later[0]
        return reasons, (root, origin, f"block {k} (whose code reads `{n}` of {origin})", k)
    return reasons, None


def classify(blocks: list[str], results: list[dict]) -> None:
    """Mark each block's result: ``needs`` (why it would be left out: a GPU or a download named in its
    own code, a package this interpreter lacks, or a name last bound by such a block), ``excluded``
    (left out of the count) and ``own_failure`` (left out by its needs, yet failing on something
    else: counted, as a CPU block that fails)."""
    tainted: dict[str, tuple] = {}  # name -> (root category, the root block, which block binds it and why)
    binders: dict[str, list[int]] = {}  # name -> the blocks that bind it
    for k, (code, r) in enumerate(zip(blocks, results)):
        error = "" if r["ok"] else r.get("error", "")
        package = _error_name(error, "module") if error.startswith("ModuleNotFoundError") else None
        package = package if package and not package.startswith("tvm") else None
        reasons, bound, block_taint = [], {}, None
        for stmt in statement_names(code):
            if package and re.search(rf"\b(import|from)\s+{package}\b", stmt[0]) and block_taint is None:
                # what this import and the statements after it bind never got bound
                reasons.append(("package", f"needs `{package}`, which is not installed"))
                origin = f"{LABEL['package']} block {k}"
                block_taint = ("package", origin, f"{origin} (`{package}`)", k)
            stmt_reasons, taint = _statement_taint(k, stmt, tainted)
            reasons += [x for x in stmt_reasons if x not in reasons]
            for name in stmt[1]:
                bound[name] = block_taint or taint
                if bound[name] is None:
                    tainted.pop(name, None)
                else:
                    tainted[name] = bound[name]
        missing = _error_name(error, "NameError")
        fallback = not reasons and missing in binders and all(results[j]["excluded"] for j in binders[missing])
        if fallback:  # a clean statement its left-out block never reached (or a binding the scan missed)
            j = binders[missing][-1]
            reasons.append((results[j]["category"].split()[-1],
                            f"fails on `{missing}`, bound only by left-out block {j}"))
        for name in bound:
            binders.setdefault(name, []).append(k)
        roots = {root for root, _ in reasons}
        own = [root for root, text in reasons if not text.startswith(("uses", "fails on"))]
        r["needs"] = [text for _, text in reasons]
        r["category"] = (own[0] if own else f"via {reasons[0][0]}") if reasons else ""
        r["own_failure"] = bool(reasons) and bool(error) and not (fallback or _explained(error, roots, tainted))
        r["excluded"] = bool(reasons) and not r["own_failure"]


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
        text = " ".join("".join(traceback.format_exception_only(type(err), err)).split())
        result = {"block": k, "ok": False, "error": text[:400], "name": getattr(err, "name", None)}
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
    results = [done.get(k, {"block": k, "ok": False, "error": "the process died before this block ended"})
               for k in range(len(blocks))]
    classify(blocks, results)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default=os.environ.get("TVM_DOCS"), help="a TVM checkout's docs folder")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per block")
    parser.add_argument("--only", default="", help="run tutorials whose file name contains this")
    parser.add_argument("--errors", action="store_true",
                        help="print the first error of each failing block, and why each left-out block is")
    parser.add_argument("--json", default="", help="write every block's outcome to this file")
    parser.add_argument("--python", default=sys.executable,
                        help="another interpreter runs the blocks on its own installed tvm (no minitvm alias)")
    parser.add_argument("--lend-packages", action="store_true",
                        help="with --python: append this interpreter's site-packages (torch ...) to its path")
    parser.add_argument("--compare", default="", help="another run's --json: list the blocks only one of them runs")
    parser.add_argument("--results", default="",
                        help="a saved --json run: classify and print it again, running nothing")
    args = parser.parse_args()
    if not args.docs:
        parser.error("--docs DIR (or TVM_DOCS): the docs folder of a TVM checkout")
    files = sorted(p for p in Path(args.docs).glob("**/tutorials/*.py") if args.only in p.name)
    saved = json.loads(Path(args.results).read_text()) if args.results else None
    print(f"load average {os.getloadavg()[0]:.1f}; {len(files)} tutorials from {args.docs}")
    print(f"{'tutorial':42} {'blocks':>6} {'left out':>8} {'CPU':>5} {'run':>5} {'s':>6}")
    outcomes = {}
    for path in files:
        start, key = time.perf_counter(), str(path.relative_to(args.docs))
        if saved is not None:
            results = saved[key]
            classify(code_blocks(path.read_text()), results)
        else:
            results = run_tutorial(path, args.timeout, args.python, args.lend_packages)
        outcomes[key] = results
        cpu = [r for r in results if not r["excluded"]]
        print(f"{path.stem:42} {len(results):6} {len(results) - len(cpu):8} {len(cpu):5} "
              f"{sum(r['ok'] for r in cpu):5} {time.perf_counter() - start:6.1f}")
        if args.errors:
            print_reasons(results)
    summarize(outcomes)
    if args.json:
        Path(args.json).write_text(json.dumps(outcomes, indent=1))
    if args.compare:
        compare(outcomes, json.loads(Path(args.compare).read_text()), args.compare)


def print_reasons(results: list[dict]) -> None:
    """Each failing CPU block's error; each left-out block's reasons (and its error, which they explain)."""
    for r in results:
        needs = "; ".join(r["needs"][:3]) + (f"; and {len(r['needs']) - 3} more" if len(r["needs"]) > 3 else "")
        if r["excluded"]:
            print(f"    block {r['block']} left out ({r['category']}): {needs}"
                  + ("" if r["ok"] else f" -- fails: {r['error'][:120]}"))
        elif not r["ok"]:
            print(f"    block {r['block']}: {r['error']}")
            if r["own_failure"]:
                print(f"        (it also {needs}, but that does not explain this error: counted as a CPU block)")


def summarize(outcomes: dict) -> None:
    """The totals, and the left-out blocks by category."""
    results = [r for rs in outcomes.values() for r in rs]
    cpu = [r for r in results if not r["excluded"]]
    run = sum(r["ok"] for r in cpu)
    print(f"{'total':42} {len(results):6} {len(results) - len(cpu):8} {len(cpu):5} {run:5}   "
          f"({100 * run / max(1, len(cpu)):.0f}% of the CPU blocks run)")
    counts: dict[str, int] = {}
    for r in results:
        if r["excluded"]:
            counts[r["category"]] = counts.get(r["category"], 0) + 1
    own = sum(r["own_failure"] for r in results)
    print("left out: " + (", ".join(f"{c} {n}" for c, n in sorted(counts.items())) or "none")
          + f"; blocks needing a GPU or a download that fail on something else (counted): {own}")


def compare(ours: dict, theirs: dict, name: str) -> None:
    """The CPU blocks that run in one of two runs and not in the other (tutorial, block index)."""
    def passed(outcomes: dict) -> set:
        # (a run saved before blocks were classified marks only its GPU blocks)
        return {(f, r["block"]) for f, rs in outcomes.items() for r in rs
                if r["ok"] and not r.get("excluded", r.get("gpu"))}
    mine, other = passed(ours), passed({f: rs for f, rs in theirs.items() if f in ours})
    for title, blocks in ((f"run in {name} only", other - mine), ("run here only", mine - other)):
        print(f"{title}: {len(blocks)}")
        for f, k in sorted(blocks):
            print(f"    {f} block {k}")


if __name__ == "__main__":
    main()
