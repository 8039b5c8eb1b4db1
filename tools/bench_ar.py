"""`make bench-ar`: effective bisection bandwidth of the RTL fabric, static routing against
adaptive (docs/reliability.md).

    python -m tools.bench_ar [--perms 3] [--modes static,adaptive,pinned] [--reuse]

Builds the 2-level fat tree `fat_tree_2(8)` of our switches (config fab8-ar: fab8 with
adaptive routing; 12 switches, 31 hardware endpoints) for Verilator once, and runs
tb/fabric_ar.py::ar_bisection once per mode: our SM with ftree (d-mod-k) and no AR groups
(static), with per-packet AR groups (adaptive), with flow-pinned AR groups (pinned: one port
per (SLID, DLID), order kept). Each run: a local round (every endpoint to a neighbour on its own
leaf: the reference rate) and --perms random permutations (every endpoint sends full-size
packets back to back to one other). Prints, per permutation, the packets received per cycle
as a fraction of the local round's (the effective bisection) and the packets the checkers
saw out of order; writes build/bench-ar/result.json. The build takes several CPU-minutes and
each run a few more; nothing else should run beside it.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


MODES = ("static", "adaptive", "pinned")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perms", type=int, default=3, help="random permutations per mode (1..8)")
    ap.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--reuse", action="store_true",
                    help="take a mode's result from an earlier run (build/bench-ar/MODE.json) when it has one")
    a = ap.parse_args(argv)
    if not 1 <= a.perms <= 8:
        ap.error(f"--perms: 1..8, got {a.perms}")
    modes = [m for m in a.modes.split(",") if m]
    if not modes or any(m not in MODES for m in modes):
        ap.error(f"--modes: some of {', '.join(MODES)}, got {a.modes!r}")
    from tb.common.fabric_tb import run_fabric_bench
    from tb.test_fabric import FAB_CFG, _plan
    cfg = FAB_CFG.replace(name="fab8-ar", adaptive=True)
    out = ROOT / "build" / "bench-ar"
    out.mkdir(parents=True, exist_ok=True)
    runs = {}
    for mode in modes:
        res = out / f"{mode}.json"
        if a.reuse and res.exists():
            old = json.loads(res.read_text())
            if len(old["rounds"]) == a.perms + 1:
                runs[mode] = {**old, "reused": True}
                continue
        res.unlink(missing_ok=True)
        t0 = time.perf_counter()
        tag = f"ib_fabric-{cfg.name}"
        run_fabric_bench(cfg, _plan(8), tag=tag, src=ROOT / "build" / "sim" / f"{tag}-src",
                         testcase="ar_bisection", test_module="tb.fabric_ar",
                         env={"FABRIC_AR": str(res), "FABRIC_AR_MODE": mode, "FABRIC_AR_PERMS": str(a.perms)})
        runs[mode] = {**json.loads(res.read_text()), "build_and_run_s": round(time.perf_counter() - t0)}
    print("\neffective bisection of fat_tree_2(8) in RTL (12 switches, 31 endpoints, 256-byte packets back to "
          "back; Verilator)")
    print(f"{'round':>8} | " + " | ".join(f"{m + ' pkts/cycle':>19} {'of local':>8} {'out of order':>12}"
                                          for m in runs))
    rows = zip(*(runs[m]["rounds"] for m in runs), strict=True)
    for rs in rows:
        print(f"{rs[0]['round']:>8} | " + " | ".join(f"{r['rate']:>19.3f} {r['of_local']:>8.2f} {r['rcv_errors']:>12}"
                                                     for r in rs))
    mean = {m: sum(r["of_local"] for r in runs[m]["rounds"][1:]) / a.perms for m in runs}
    print(f"{'mean':>8} | " + " | ".join(f"{'':>19} {mean[m]:>8.2f} {'':>12}" for m in runs))
    print("static: ftree's LFTs; adaptive: per-packet AR groups; pinned: flow-pinned AR groups (one port per "
          "(SLID, DLID))")
    print("out of order: packets the checkers saw arrive behind a later one of the same sender (delivered, "
          "good data; counted in rcv_errors)")
    for m, r in runs.items():
        if m != "static":
            print(f"{m}: AR groups given {r['ar_groups']}, adaptive (switch, LID) pairs {r['ar_lids']}"
                  + (" (reused from an earlier run)" if r.get("reused") else ""))
    (out / "result.json").write_text(json.dumps({"runs": runs, "mean_of_local": mean}, indent=1))
    print(f"written {out / 'result.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
