"""`make bench-ar`: effective bisection bandwidth of the RTL fabric, static routing against
adaptive (docs/reliability.md).

    python -m tools.bench_ar [--perms 3]

Builds the 2-level fat tree `fat_tree_2(8)` of our switches (config fab8-ar: fab8 with
adaptive routing; 12 switches, 31 hardware endpoints) for Verilator once, and runs
tb/fabric_ar.py::ar_bisection twice: our SM with ftree (d-mod-k) and no AR groups (static),
then with them (adaptive). Each run: a local round (every endpoint to a neighbour on its own
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perms", type=int, default=3, help="random permutations per mode (1..8)")
    a = ap.parse_args(argv)
    if not 1 <= a.perms <= 8:
        ap.error(f"--perms: 1..8, got {a.perms}")
    from tb.common.fabric_tb import run_fabric_bench
    from tb.test_fabric import FAB_CFG, _plan
    cfg = FAB_CFG.replace(name="fab8-ar", adaptive=True)
    out = ROOT / "build" / "bench-ar"
    out.mkdir(parents=True, exist_ok=True)
    runs = {}
    for mode in ("static", "adaptive"):
        res = out / f"{mode}.json"
        res.unlink(missing_ok=True)
        t0 = time.perf_counter()
        tag = f"ib_fabric-{cfg.name}"
        run_fabric_bench(cfg, _plan(8), tag=tag, src=ROOT / "build" / "sim" / f"{tag}-src",
                         testcase="ar_bisection", test_module="tb.fabric_ar",
                         env={"FABRIC_AR": str(res), "FABRIC_AR_MODE": mode, "FABRIC_AR_PERMS": str(a.perms)})
        runs[mode] = {**json.loads(res.read_text()), "build_and_run_s": round(time.perf_counter() - t0)}
    print("\neffective bisection of fat_tree_2(8) in RTL (12 switches, 31 endpoints, 256-byte packets back to "
          "back; Verilator)")
    print(f"{'round':>8} | {'static pkts/cycle':>17} {'of local':>8} {'out of order':>12} | "
          f"{'adaptive pkts/cycle':>19} {'of local':>8} {'out of order':>12}")
    st, ad = runs["static"]["rounds"], runs["adaptive"]["rounds"]
    for s, d in zip(st, ad, strict=True):
        print(f"{s['round']:>8} | {s['rate']:>17.3f} {s['of_local']:>8.2f} {s['rcv_errors']:>12} | "
              f"{d['rate']:>19.3f} {d['of_local']:>8.2f} {d['rcv_errors']:>12}")
    mean = {m: sum(r["of_local"] for r in runs[m]["rounds"][1:]) / a.perms for m in runs}
    print(f"{'mean':>8} | {'':>17} {mean['static']:>8.2f} {'':>12} | {'':>19} {mean['adaptive']:>8.2f}")
    print("out of order: packets the checkers saw arrive behind a later one of the same sender (delivered, "
          "good data; counted in rcv_errors)")
    ad_run = runs["adaptive"]
    print(f"AR groups given: {ad_run['ar_groups']}, adaptive (switch, LID) pairs {ad_run['ar_lids']}")
    (out / "result.json").write_text(json.dumps({"runs": runs, "mean_of_local": mean}, indent=1))
    print(f"written {out / 'result.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
