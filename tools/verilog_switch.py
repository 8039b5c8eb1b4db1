"""`make verilog-switch`: `ib_switch` Verilog for 4, 8, 16 and 64 ports, each linted with
Verilator -Wall (waivers: docs/lint.md), as a table of sizes and times.

    python -m tools.verilog_switch [--configs small,default,p16,p64] [--no-lint]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from contracts.config import get_config
from hw.verilog import generate
from tools.lint import lint_file

DEFAULT = ["small", "default", "p16", "p64"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default=",".join(DEFAULT))
    ap.add_argument("--no-lint", action="store_true")
    ap.add_argument("--out", default="build/verilog")
    a = ap.parse_args(argv)
    rows, bad = [], 0
    for name in a.configs.split(","):
        cfg = get_config(name)
        t0 = time.time()
        (path,) = generate(cfg, Path(a.out), ["ib_switch"])
        t_gen = time.time() - t0
        lint, t_lint = "-", 0.0
        if not a.no_lint:
            t0 = time.time()
            waived, fails = lint_file(path, "ib_switch")
            t_lint = time.time() - t0
            lint = "clean" if not fails else f"{len(fails)} warnings"
            bad += len(fails)
            for line in fails[:20]:
                print(line)
        rows.append((name, cfg.ports, cfg.data_width, cfg.data_vls, path.stat().st_size / 1e6, t_gen, lint, t_lint,
                     path))
        print(f"{name}: {path} ({rows[-1][4]:.1f} MB) in {t_gen:.0f} s, lint {lint} in {t_lint:.0f} s", flush=True)
    hdr = ["config", "ports", "W", "VLs", "Verilog MB", "elab s", "lint", "lint s"]
    print("\n" + " ".join(f"{h:>{w}}" for h, w in zip(hdr, [8, 5, 4, 4, 10, 7, 8, 7], strict=True)))
    for r in rows:
        print(f"{r[0]:>8} {r[1]:>5} {r[2]:>4} {r[3]:>4} {r[4]:>10.1f} {r[5]:>7.0f} {r[6]:>8} {r[7]:>7.0f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
