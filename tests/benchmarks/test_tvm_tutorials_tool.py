"""benchmarks/tvm_tutorials.py, the tool that counts TVM's tutorial blocks minitvm runs: how it cuts
a sphinx-gallery file into blocks, which blocks it leaves out (a GPU, a download, a missing package,
or a name such a block binds) and why, and what --compare lists.  Running tutorials is the tool's job,
not this test's (no TVM checkout here)."""

from __future__ import annotations

GALLERY = '''"""
Title
=====
"""

import tvm

######################################################################
# Prose of a section, with code in it:
#
#   x = 1
#

x = tvm.cpu()
dev = tvm.cuda(0)

# %%
# another section
y = 2
'''


def test_blocks_are_the_code_between_sections_and_gpu_words_mark_them(load_benchmark):
    tool = load_benchmark("tvm_tutorials")
    blocks = tool.code_blocks(GALLERY)
    assert [b.strip() for b in blocks] == ["import tvm", "x = tvm.cpu()\ndev = tvm.cuda(0)", "y = 2"]
    assert [bool(tool.GPU_WORDS.search(b)) for b in blocks] == [False, True, False]


def test_compare_lists_the_cpu_blocks_only_one_run_passes(load_benchmark, capsys):
    tool = load_benchmark("tvm_tutorials")

    def run(*oks: bool, gpu: int = -1) -> list[dict]:
        return [{"block": k, "ok": ok, "excluded": k == gpu} for k, ok in enumerate(oks)]

    ours = {"a.py": run(True, False, True), "b.py": run(True, True, False, gpu=2)}
    theirs = {"a.py": run(True, True, False), "b.py": run(False, True, True, gpu=2), "c.py": run(True)}
    tool.compare(ours, theirs, "tvm.json")
    assert capsys.readouterr().out.splitlines() == [
        "run in tvm.json only: 1", "    a.py block 1",  # (c.py was not run here: not counted)
        "run here only: 2", "    a.py block 2", "    b.py block 0"]


def ok(k: int) -> dict:
    return {"block": k, "ok": True}


def failed(k: int, error: str) -> dict:
    return {"block": k, "ok": False, "error": error}


def test_a_block_using_a_name_a_gpu_block_binds_is_left_out_even_through_a_class(load_benchmark):
    tool = load_benchmark("tvm_tutorials")
    blocks = ["import tvm\nx = 1",
              "dev = tvm.device('cuda', 0)  # a GPU\ntarget = tvm.target.Target.from_device(dev)",
              "class Model:\n    def build(self):\n        return tvm.compile(None, target=target)",
              "m = Model()\nm.build()",
              "y = x + 1  # on cuda it would be the same\nprint('a CUDA build would differ')"]
    results = [ok(0), ok(1), ok(2), failed(3, "NotImplementedError: target='cuda-emulated' is not built"), ok(4)]
    tool.classify(blocks, results)
    assert [r["excluded"] for r in results] == [False, True, False, True, False]
    assert results[1]["needs"] == ["names a GPU (`cuda`)"] and results[1]["category"] == "gpu"
    # defining the class runs nothing on a GPU; calling it does
    assert results[3]["needs"] == ["uses `Model` defined by block 2 (whose code reads `target` of GPU block 1)"]
    assert results[3]["category"] == "via gpu" and not results[3]["own_failure"]
    assert results[4]["needs"] == []  # a comment or a print naming a GPU is no use of one


def test_a_left_out_block_failing_on_something_else_is_counted(load_benchmark):
    tool = load_benchmark("tvm_tutorials")
    blocks = ["import tvm\nw = tvm.hub.from_pretrained('tiny')", "v = tvm.hub.from_pretrained('other')",
              "dev = tvm.cuda(0)\nmod = tvm.tir.transform.DefaultGPUSchedule()(mod)", "print(w, v)"]
    results = [failed(0, "OSError: We couldn't connect to 'https://huggingface.co'"),
               failed(1, "AttributeError: module 'minitvm' has no attribute 'hub'"),
               failed(2, "AttributeError: module 'minitvm.tir.transform' has no attribute 'DefaultGPUSchedule'"),
               failed(3, "NameError: name 'w' is not defined")]
    tool.classify(blocks, results)
    assert [(r["excluded"], r["own_failure"]) for r in results] == [
        (True, False), (False, True), (False, True), (True, False)]
    assert results[0]["needs"] == ["names a download (`pretrained`)"]
    assert results[3]["needs"] == ["uses `v` defined by download block 1", "uses `w` defined by download block 0"]


def test_a_missing_package_leaves_out_what_its_import_binds_and_a_name_error_names_the_block(load_benchmark, capsys):
    tool = load_benchmark("tvm_tutorials")
    blocks = ["import os\nimport torchvision\nnet = torchvision.models.resnet18()",
              "flag = os.getenv('CI')", "out = net(1)",
              "t = tvm.cpu()\nz = tvm.cuda(0).compute_version\nlate = 3",
              "print(late)", "print(undefined_here)"]
    results = [failed(0, "ModuleNotFoundError: No module named 'torchvision'"), ok(1),
               failed(2, "NameError: name 'net' is not defined"), failed(3, "RuntimeError: no CUDA device"),
               failed(4, "NameError: name 'late' is not defined"),
               failed(5, "NameError: name 'undefined_here' is not defined")]
    tool.classify(blocks, results)
    assert [r["excluded"] for r in results] == [True, False, True, True, True, False]
    assert results[0]["needs"] == ["needs `torchvision`, which is not installed"]
    assert results[1]["needs"] == []  # `os` was bound before the failing import
    assert results[2]["needs"] == ["uses `net` defined by missing-package block 0 (`torchvision`)"]
    # `late` reads clean, but its block failed before binding it: the NameError says so
    assert results[4]["needs"] == ["fails on `late`, bound only by left-out block 3"]
    tool.print_reasons(results)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("    block 0 left out (package): needs `torchvision`, which is not installed"
                        " -- fails: ModuleNotFoundError: No module named 'torchvision'")
    assert lines[-1] == "    block 5: NameError: name 'undefined_here' is not defined"


def test_statement_names_reads_binds_and_deferred_reads(load_benchmark):
    tool = load_benchmark("tvm_tutorials")
    code = ("a = [k * b for k in c]  # k is the comprehension's\n"
            "d += a\n"
            "def f(x, y=e):\n    z = x + g\n    return z\n"
            "for i in h:\n    j = i\n")
    names = [stmt[1:] for stmt in tool.statement_names(code)]
    assert names == [({"a"}, {"b", "c"}, set()), ({"d"}, {"d", "a"}, set()),
                     ({"f"}, {"e"}, {"g"}), ({"i", "j"}, {"h"}, set())]
