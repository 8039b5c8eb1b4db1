"""Per-simulator summary of the cocotb tests run by the regression (build/results/*.xml).

Prints one row per (simulator, test module, config) and a total per simulator, and exits
non-zero if any cocotb test failed or a simulator ran no test at all.
"""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

SIMS = ["icarus", "verilator"]


def collect(results_dir: Path):
    rows = []
    for xml in sorted(results_dir.glob("*.xml")):
        sim, tag = xml.stem.split("--", 1)
        n = failed = 0
        sim_ns = wall = 0.0
        for tc in ET.parse(xml).getroot().iter("testcase"):
            n += 1
            failed += tc.find("failure") is not None or tc.find("error") is not None
            wall += float(tc.get("time", 0))
            for p in tc.iter("property"):
                if p.get("name") == "sim_time_duration":
                    sim_ns += float(p.get("value"))
        rows.append((sim, tag, n, failed, sim_ns, wall))
    return rows


def main(argv=None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    d = Path(argv[0]) if argv else Path("build/results")
    rows = collect(d)
    if not rows:
        print(f"sim_summary: no cocotb results under {d}")
        return 1
    print(f"{'simulator':<10} {'bench (top-config)':<28} {'tests':>5} {'failed':>6} {'sim us':>9} {'wall s':>7}")
    tot = defaultdict(lambda: [0, 0, 0.0, 0.0])
    for sim, tag, n, f, ns, wall in rows:
        print(f"{sim:<10} {tag:<28} {n:>5} {f:>6} {ns / 1000:>9.1f} {wall:>7.1f}")
        t = tot[sim]
        t[0] += n
        t[1] += f
        t[2] += ns
        t[3] += wall
    print("-" * 70)
    rc = 0
    for sim in SIMS:
        n, f, ns, wall = tot.get(sim, [0, 0, 0.0, 0.0])
        print(f"{sim:<10} {'TOTAL':<28} {n:>5} {f:>6} {ns / 1000:>9.1f} {wall:>7.1f}")
        if n == 0 or f:
            rc = 1
    n_all = sum(t[0] for t in tot.values())
    f_all = sum(t[1] for t in tot.values())
    print(f"cocotb: {n_all - f_all} passed, {f_all} failed")
    return rc


if __name__ == "__main__":
    sys.exit(main())
