"""The ``minitvm`` command line."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from minitvm import __version__

    parser = argparse.ArgumentParser(prog="minitvm", description="minitvm: a teaching ML compiler")
    parser.add_argument("--version", action="version", version=f"minitvm {__version__}")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("info", help="show the versions and the host target")
    args = parser.parse_args(argv)
    if args.command == "info":
        import llvmlite
        import numpy

        print(f"minitvm {__version__}\nnumpy {numpy.__version__}\nllvmlite {llvmlite.__version__}")
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
