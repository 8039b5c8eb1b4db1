"""`make bench-ar`: effective bisection bandwidth of the RTL fabric, static routing against
adaptive, over many permutations (docs/reliability.md).

    python -m bench.ar [--perms 20] [--modes static,adaptive,pinned] [--seed 1]

Builds the 2-level fat tree `fat_tree_2(8)` of our switches (config fab8-ar: fab8 with
adaptive routing; 12 switches, 31 hardware endpoints) once as a native Verilator binary
(verif/native/fabric.py) and, per mode, programs the switches as our SM does (ftree routes;
sm/adaptive.py's AR groups and adaptive LIDs for `adaptive`, the same groups flow-pinned
for `pinned`: one port per (SLID, DLID); none for `static`). Then rounds of traffic, every
endpoint sending 256-byte packets back to back to one destination
(scenarios/fabric.py: bisection_round):

  local   each endpoint to the next one on its own leaf (no spine crossed): the rate the
          endpoints and links reach when nothing collides, the reference;
  perm r  a random permutation of the endpoints (no one to itself); the same --perms
          permutations for every mode.

Per round: the packets all endpoints receive per cycle over a 3,000-cycle window in which
every sender is still sending (asserted at both ends of the window), as a fraction of the
local round's: the effective bisection, raw (every packet) and in order (the packets the
checkers accepted in sequence: a packet overtaken by a later one of its flow is not
counted; per-packet adaptive routing reorders, static and flow-pinned must not). Every
packet must arrive, none corrupted or misdelivered; a round that breaks a rule fails the
tool. Prints the per-mode mean with its 95 % confidence interval (Student's t over the
permutations) and min / max; writes build/bench-ar/result.json.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODES = ("static", "adaptive", "pinned")
PAYLOAD_WORDS = 64                       # fab8's MTU, 256 bytes
COUNT = 160                              # packets per sender per round


def ci95(xs: list[float]) -> tuple[float, float]:
    """(mean, half-width of the 95 % confidence interval of the mean; Student's t)."""
    from scipy import stats
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, float("nan")
    return m, float(stats.t.ppf(0.975, len(xs) - 1) * statistics.stdev(xs) / len(xs) ** 0.5)


def run_modes(modes: list[str], perms: int, seed: int, say=print) -> dict:
    from fabric.topology import fat_tree_2
    from hw.fabric.fabric import FabricPlan
    from scenarios.fabric import (
        EP_COUNTERS,
        FAB_CFG,
        bisection_round,
        check_bisection_round,
        endpoints_by_leaf,
        offline_bring_up,
        offline_routes,
        permutation,
    )
    from sm.adaptive import ar_plan
    from verif.harness import NativeHarness
    from verif.native import NativeSim
    from verif.native.fabric import build_fabric
    cfg = FAB_CFG.replace(name="fab8-ar", adaptive=True)
    topo = fat_tree_2(8)
    plan = FabricPlan.from_topology(topo, sm_ca="H0")
    fab, routes = offline_routes(topo, "ftree")
    arp = ar_plan(fab, routes)
    assert arp.acyclic and arp.groups, f"the SM gave no AR groups: {arp.why}"
    t0 = time.perf_counter()
    exe = build_fabric(cfg, plan, say=say)
    say(f"built in {time.perf_counter() - t0:.0f} s")
    n = len(plan.endpoints)
    rounds = [("local", {j: eps[(eps.index(j) + 1) % len(eps)] for eps in endpoints_by_leaf(plan).values()
                         for j in eps})]
    rounds += [(f"perm {r}", dict(enumerate(permutation(n, seed * 1000 + r)))) for r in range(perms)]
    runs = {}

    async def one(h, mode):
        t = time.perf_counter()
        lid_of = await offline_bring_up(h, cfg, plan, fab, routes, ar=None if mode == "static" else arp,
                                        pinned=mode == "pinned")
        sent = [0] * n
        got = [dict.fromkeys(EP_COUNTERS, 0) for _ in range(n)]
        rows = []
        for name, dst in rounds:
            row, sent, got = await bisection_round(h, plan, lid_of, dst, count=COUNT, payload_words=PAYLOAD_WORDS,
                                                   sent_before=sent, got_before=got)
            row["round"] = name
            row["bad"] = check_bisection_round(row, n, COUNT, keeps_order=mode != "adaptive")
            if row["bad"]:
                say(f"FAIL {mode} {name}: {row['bad']}")
            rows.append(row)
        ref = rows[0]["rate"]
        for row in rows:
            row["of_local"] = row["rate"] / ref
            row["in_order_of_local"] = row["rate_in_order"] / ref
        say(f"{mode}: {len(rows)} rounds in {time.perf_counter() - t:.0f} s")
        return {"mode": mode, "rounds": rows, "ar_groups": 0 if mode == "static" else arp.groups,
                "ar_lids": 0 if mode == "static" else arp.lids}

    async def go(h):
        for mode in modes:
            runs[mode] = await one(h, mode)
    with NativeSim(exe) as s:
        asyncio.run(go(NativeHarness(s)))
    return runs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perms", type=int, default=20, help="random permutations per mode (>= 2)")
    ap.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--seed", type=int, default=1, help="the permutations derive from it")
    a = ap.parse_args(argv)
    if a.perms < 2:
        ap.error(f"--perms: at least 2 (an interval needs two), got {a.perms}")
    modes = [m for m in a.modes.split(",") if m]
    if not modes or any(m not in MODES for m in modes):
        ap.error(f"--modes: some of {', '.join(MODES)}, got {a.modes!r}")
    out = ROOT / "build" / "bench-ar"
    out.mkdir(parents=True, exist_ok=True)
    runs = run_modes(modes, a.perms, a.seed)
    print("\neffective bisection of fat_tree_2(8) in RTL (12 switches, 31 endpoints, 256-byte packets back to back;"
          " native Verilator)")
    print("per round: packets received per cycle over a 3,000-cycle window, every sender busy, as a fraction of the"
          " local round's")
    print(f"{'round':>8} | " + " | ".join(f"{m + ' raw':>13} {'in order':>8} {'reordered':>9}" for m in runs))
    for rs in zip(*(runs[m]["rounds"] for m in runs), strict=True):
        print(f"{rs[0]['round']:>8} | " + " | ".join(
            f"{r['of_local']:>13.3f} {r['in_order_of_local']:>8.3f} {r['rcv_errors']:>9}" for r in rs))
    summary = {}
    print(f"\n{'mode':>8} {'perms':>5} {'raw: mean +- 95% CI':>22} {'min':>6} {'max':>6} "
          f"{'in order: mean +- 95% CI':>26} {'min':>6} {'max':>6} {'local pkts/cycle':>16}")
    for m, r in runs.items():
        raw = [x["of_local"] for x in r["rounds"][1:]]
        ino = [x["in_order_of_local"] for x in r["rounds"][1:]]
        (mr, hr), (mi, hi) = ci95(raw), ci95(ino)
        summary[m] = {"raw_mean": mr, "raw_ci95": hr, "raw_min": min(raw), "raw_max": max(raw), "in_order_mean": mi,
                      "in_order_ci95": hi, "in_order_min": min(ino), "in_order_max": max(ino),
                      "local_rate": r["rounds"][0]["rate"]}
        print(f"{m:>8} {len(raw):>5} {f'{mr:.3f} +- {hr:.3f}':>22} {min(raw):>6.3f} {max(raw):>6.3f} "
              f"{f'{mi:.3f} +- {hi:.3f}':>26} {min(ino):>6.3f} {max(ino):>6.3f} {r['rounds'][0]['rate']:>16.3f}")
    print("static: ftree's LFTs; adaptive: per-packet AR groups; pinned: flow-pinned AR groups (one port per "
          "(SLID, DLID))")
    print("in order: packets the checkers accepted in sequence; reordered: packets seen behind a later one of their "
          "sender (rcv_errors: a gap and a duplicate each)")
    for m, r in runs.items():
        if m != "static":
            print(f"{m}: AR groups {r['ar_groups']}, adaptive (switch, LID) pairs {r['ar_lids']}")
    (out / "result.json").write_text(json.dumps({"runs": runs, "summary": summary}, indent=1))
    print(f"written {out / 'result.json'}")
    failed = [(m, x["round"], x["bad"]) for m, r in runs.items() for x in r["rounds"] if x["bad"]]
    if failed:
        print(f"{len(failed)} rounds failed their checks: {failed[:3]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
