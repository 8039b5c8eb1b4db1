"""`make bench-fabric`: the RTL fabric's simulation speed, natively (docs/fabric.md).

    python -m bench.fabric [--threads 1,2] [--radix 8] [--rounds 5]

The fabric `fat_tree_2(k)` (k = 8: 12 eight-port switches of config fab8 and 31 hardware
endpoints) is built as a native Verilator binary (verif/native/fabric.py: hierarchical, every
switch and endpoint behind a registered reset; one build directory per --threads value) and
driven over its pipe with no Python per cycle. The switches are programmed as our SM
programs them (ftree routes, written over AXI4-Lite), then, --rounds times each:

  idle      20,000 cycles, every link up and trained, no traffic
  traffic   every endpoint sends 200 packets of 1..32 words to the endpoints of the next
            leaf (every packet crosses a spine); the round lasts until every packet is in,
            and must be perfect (scenarios/fabric.py: check_traffic)

Prints fabric cycles per second, median (min-max) over the rounds, and the build time;
writes build/bench-fabric/result.json. The build takes a few CPU-minutes per --threads
value; nothing else should run beside it.
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
TARGET = 10_000                          # fabric cycles/s for fat_tree_2(8) (issue 35)


def run_variant(k: int, threads: int, rounds: int, say=print) -> dict:
    from fabric.topology import fat_tree_2
    from hw.fabric.fabric import FabricPlan
    from scenarios.fabric import FAB_CFG, check_traffic, leaf_flows, offline_bring_up, offline_routes, traffic
    from verif.harness import NativeHarness
    from verif.native import NativeSim
    from verif.native.fabric import build_fabric
    topo = fat_tree_2(k)
    plan = FabricPlan.from_topology(topo, sm_ca="H0")
    fab, routes = offline_routes(topo, "ftree")
    t0 = time.perf_counter()
    exe = build_fabric(FAB_CFG, plan, threads=threads, say=say)
    build_s = time.perf_counter() - t0
    idle, busy, bad = [], [], []

    async def go(h):
        lid_of = await offline_bring_up(h, FAB_CFG, plan, fab, routes)
        for _ in range(rounds):
            t = time.perf_counter()
            await h.step(20_000)
            idle.append(20_000 / (time.perf_counter() - t))
        flows = leaf_flows(plan)
        for r in range(rounds):
            res = await traffic(h, plan, lid_of, flows, 200, seed=r + 1, prior=200 * r)
            bad.extend(check_traffic(plan, res))
            busy.append(res["cycles"] / res["seconds"])
    with NativeSim(exe) as s:
        asyncio.run(go(NativeHarness(s)))
    return {"radix": k, "switches": len(plan.switches), "endpoints": len(plan.endpoints), "threads": threads,
            "build_s": round(build_s, 1), "idle": idle, "traffic": busy, "bad": bad}


def cell(xs: list[float]) -> str:
    return f"{statistics.median(xs):,.0f} ({min(xs):,.0f}-{max(xs):,.0f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,2", help="Verilator --threads values, comma-separated")
    ap.add_argument("--radix", type=int, default=8, help="fat_tree_2 radix (even, 4..8)")
    ap.add_argument("--rounds", type=int, default=5, help="idle and traffic rounds per variant")
    a = ap.parse_args(argv)
    try:
        threads = [int(x) for x in a.threads.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--threads: comma-separated integers, got {a.threads!r}")
    if not threads or min(threads) < 1:
        ap.error(f"--threads: at least one value, each >= 1, got {a.threads!r}")
    if a.radix % 2 or not 4 <= a.radix <= 8:
        ap.error(f"--radix: even, 4..8 (the switches have 8 ports), got {a.radix}")
    if a.rounds < 1:
        ap.error(f"--rounds: at least 1, got {a.rounds}")
    out = ROOT / "build" / "bench-fabric"
    out.mkdir(parents=True, exist_ok=True)
    rows = [run_variant(a.radix, t, a.rounds) for t in threads]
    r0 = rows[0]
    print(f"\nfat_tree_2({a.radix}): {r0['switches']} switches (8 ports, 64-bit, 2 VLs) + {r0['endpoints']} hardware "
          "endpoints, native Verilator, no Python per cycle")
    print(f"fabric cycles/s, median (min-max) of {a.rounds} rounds")
    print(f"{'threads':>7}  {'idle links':>24}  {'traffic over the spines':>26}  {'build s':>8}")
    for r in rows:
        print(f"{r['threads']:>7}  {cell(r['idle']):>24}  {cell(r['traffic']):>26}  {r['build_s']:>8.0f}")
    (out / "result.json").write_text(json.dumps(rows, indent=1))
    print(f"target for fat_tree_2(8): >= {TARGET:,} fabric cycles/s; written {out / 'result.json'}")
    bad = [b for r in rows for b in r["bad"]]
    if bad:
        print("traffic rounds failed their checks:\n  " + "\n  ".join(bad[:10]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
