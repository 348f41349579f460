"""benchmarks/tvm_tutorials.py, the tool that counts TVM's tutorial blocks minitvm runs: how it cuts
a sphinx-gallery file into blocks, and what --compare lists.  Running tutorials is the tool's job,
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
        return [{"block": k, "ok": ok, "gpu": k == gpu} for k, ok in enumerate(oks)]

    ours = {"a.py": run(True, False, True), "b.py": run(True, True, False, gpu=2)}
    theirs = {"a.py": run(True, True, False), "b.py": run(False, True, True, gpu=2), "c.py": run(True)}
    tool.compare(ours, theirs, "tvm.json")
    assert capsys.readouterr().out.splitlines() == [
        "run in tvm.json only: 1", "    a.py block 1",  # (c.py was not run here: not counted)
        "run here only: 2", "    a.py block 2", "    b.py block 0"]
