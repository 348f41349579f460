"""The ``minitvm`` command line."""

from __future__ import annotations

import argparse
import sys

from minitvm import __version__
from minitvm.grade import check


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="minitvm", description="minitvm: a teaching ML compiler")
    parser.add_argument("--version", action="version", version=f"minitvm {__version__}")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("info", help="show the versions and the host target")
    g = sub.add_parser("grade", help="grade your exercises for a chapter (e.g. `minitvm grade ch01`)")
    g.add_argument("chapter", help="chapter to grade: ch01, ch02, ...")
    g.add_argument("--target", choices=["exercises", "solutions"], default="exercises",
                   help="grade exercises/ (default) or the reference solutions/")
    g.add_argument("--timeout", type=float, default=60.0, help="seconds each grader may take (default 60)")
    g.add_argument("--memory-gib", type=float, default=None,
                   help="GiB of memory each grader may use (default 4, or $MINITVM_GRADE_MEMORY_GIB; 0: no limit)")
    g.add_argument("--only", nargs="*", help="only these graders (test names or exercise numbers like 1.3)")
    g.add_argument("--root", default=None, help="repository root (default: found from the current directory)")
    g.add_argument("-v", "--verbose", action="store_true", help="show each failure whole, not cut short")
    args = parser.parse_args(argv)
    if args.command == "grade":
        try:
            report = check(args.chapter, target=args.target, timeout=args.timeout, root=args.root, only=args.only,
                           verbose=args.verbose, memory_gib=args.memory_gib)
        except (FileNotFoundError, ValueError) as err:
            print(f"minitvm grade: {err}", file=sys.stderr)
            return 2
        print(report)
        return 0 if report.earned == report.total else 1
    if args.command == "info":
        import llvmlite
        import numpy

        print(f"minitvm {__version__}\nnumpy {numpy.__version__}\nllvmlite {llvmlite.__version__}")
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
