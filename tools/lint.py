"""`make lint`: Verilator --lint-only -Wall on the generated Verilog of every top for the
W=64 and W=512 configs, with documented waivers (hw/lint/waivers.py). Fails on any
warning outside the waiver list and prints a table of what it waived."""
from __future__ import annotations

import collections
import re
import subprocess
import sys
from pathlib import Path

from contracts.config import CONFIGS
from hw.lint.waivers import WAIVERS
from hw.verilog import TOPS, generate

LINT_CONFIGS = ["small", "w512", "small-ext", "small-rxreg"]  # W = 64 and 512; extended LIDs; rx registered
# ib_loopback is the switch plus endpoints, both linted on their own at every width: the
# composition is linted at W = 64 only (it doubles the lint time at W = 512)
LINT_SKIP = {("w512", "ib_loopback")}
# rx_register changes the switch's top only (a register stage in front of its blocks)
LINT_ONLY = {"small-rxreg": ("ib_switch",)}


def lint_file(path: Path, top: str) -> tuple[collections.Counter, list[str]]:
    verilator = str(Path(sys.executable).parent / "verilator")
    cmd = [verilator, "--lint-only", "-Wall", "--top-module", top, str(path)]
    # one pass with every warning on: waived kinds are counted, anything else fails
    # (a second run with -Wno-... would double the time of the 64-port lint)
    waived = collections.Counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    bad = []
    for l in r.stderr.splitlines():
        m = re.match(r"%Warning-(\w+):", l)
        if m and m.group(1) in WAIVERS:
            waived[m.group(1)] += 1
        elif l.startswith("%Warning") or (l.startswith("%Error") and not l.startswith("%Error: Exiting due to")):
            bad.append(l)
    finished = "%Error: Exiting due to" in r.stderr or r.returncode == 0
    if not finished:            # crashed or killed (e.g. out of memory): never "clean"
        bad += r.stderr.splitlines()[-5:] + [f"verilator exited with {r.returncode} before finishing"]
    return waived, bad


def main() -> int:
    failures = 0
    rows = []
    for cname in LINT_CONFIGS:
        cfg = CONFIGS[cname]
        tops = [t for t in LINT_ONLY.get(cname, TOPS) if (cname, t) not in LINT_SKIP]
        for path in generate(cfg, Path("build/lint"), tops):
            top = path.stem
            waived, bad = lint_file(path, top)
            rows.append((cname, cfg.data_width, top, "clean" if not bad else f"{len(bad)} FAIL",
                         ", ".join(f"{k}:{v}" for k, v in sorted(waived.items()))))
            for l in bad:
                print(l)
            failures += len(bad)
    w = [max(len(str(r[i])) for r in rows + [("config", "W", "top", "result", "")]) for i in range(4)]
    print(f"{'config':<{w[0]}}  {'W':>{w[1]}}  {'top':<{w[2]}}  {'result':<{w[3]}}  waived (docs/lint.md)")
    for r in rows:
        print(f"{r[0]:<{w[0]}}  {r[1]:>{w[1]}}  {r[2]:<{w[2]}}  {r[3]:<{w[3]}}  {r[4]}")
    if failures:
        print(f"lint: {failures} unwaived warning(s)")
        return 1
    print(f"lint: clean ({len(rows)} files; tops {', '.join(TOPS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
