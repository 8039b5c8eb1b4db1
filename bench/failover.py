"""`make bench-failover`: failover in the RTL fabric, many cuts, natively (docs/reliability.md).

    python -m bench.failover [--radix 4,8] [--los 0,64,1024] [--runs 50]

For each radix k, the 2-level fat tree `fat_tree_2(k)` of our switches (SwitchConfig fab8:
8 ports, 64 bits, 2 VLs, failover) and hardware endpoints is built once as a native
Verilator binary (verif/native/fabric.py, with the monitor outputs and a run-time
loss-of-signal time `los_cycles`). Each run (scenarios/fabric.py: failover_run): reset,
the switches programmed as our SM programs them (ftree routes and the failover alternates of
sm/failover.py, written over AXI4-Lite), leaf L1's endpoints sending packets of random
length to the next leaf; once a packet for a LID that L1 routes over its first spine cable
starts leaving on that cable, `offset` cycles more, the cable is cut; its ends see the link
go down `los` cycles later (the PHYs' loss-of-signal detection time: 0 is an ideal PHY).
Runs differ in seed (traffic start, gaps, lengths) and offset (where in a packet the cut
falls): --runs of them per (radix, los).

Measured per run: cycles from the cut to the first packet for a rerouted LID leaving on the
alternate port (no SM involved), packets that started on the dead port after the cut (before
its PHY saw it), packets the leaf discarded for the dead port (PortXmitDiscards), packets
lost. Every run must pass check_failover (every packet sent; none delivered bad, twice or
out of order; no more lost than were on the cable, started into it after the cut or counted
by the leaf's discards): a run that does not is printed and the tool exits 1. Prints min / median /
max per (radix, los); writes build/bench-failover/result.json.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COUNT = 60                     # packets per sender per run


def _ints(ap, name: str, text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--{name}: comma-separated integers, got {text!r}")


def run_radix(k: int, loss: list[int], runs: int, seed0: int, say=print) -> list[dict]:
    from fabric.topology import fat_tree_2
    from hw.fabric.fabric import FabricPlan
    from scenarios.fabric import FAB_CFG, alternates_of, check_failover, failover_run, offline_routes
    from sm.failover import alternates
    from verif.harness import NativeHarness
    from verif.native import NativeSim
    from verif.native.fabric import build_fabric
    topo = fat_tree_2(k)
    plan = FabricPlan.from_topology(topo, sm_ca="H0")
    fab, routes = offline_routes(topo, "ftree")
    alts = alternates_of(fab, alternates(fab, routes))
    t0 = time.perf_counter()
    exe = build_fabric(FAB_CFG, plan, los=True, monitor=True, say=say)
    build_s = time.perf_counter() - t0
    senders = len(fab.cas_at[fab.sw_names.index("L1")])
    rows = []

    async def go(h):
        for los in loss:
            for r in range(runs):
                rng = random.Random(seed0 * 1_000_003 + 7919 * k + 131 * los + r)
                seed, offset = rng.randrange(1, 1 << 30), rng.randrange(0, 40)
                res = await failover_run(h, FAB_CFG, plan, fab, routes, alts, count=COUNT, seed=seed,
                                         offset=offset, los=los)
                bad = check_failover(res, COUNT, senders)
                rows.append({"radix": k, "switches": len(plan.switches), "endpoints": len(plan.endpoints),
                             "bad": bad, **{x: res[x] for x in ("seed", "offset", "los", "cycles_to_alternate",
                                                              "starts_on_dead_port_after_cut", "sent",
                                                              "delivered", "lost", "xmit_discards_dead_port")}})
                if bad:
                    say(f"FAIL radix {k} los {los} seed {seed} offset {offset}: {bad}")
    t1 = time.perf_counter()
    with NativeSim(exe) as s:
        asyncio.run(go(NativeHarness(s)))
    say(f"fat_tree_2({k}): build {build_s:.0f} s, {len(rows)} runs in {time.perf_counter() - t1:.0f} s")
    return rows


def mmm(xs) -> str:
    return f"{min(xs)} / {statistics.median(xs):g} / {max(xs)}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--radix", default="4,8", help="fat_tree_2 radixes, comma-separated (even, 4..8)")
    ap.add_argument("--los", default="0,64,1024", help="loss-of-signal detection times in cycles (0..4000)")
    ap.add_argument("--runs", type=int, default=50, help="cuts per (radix, los), each its own seed and offset")
    ap.add_argument("--seed", type=int, default=1, help="the runs' seeds and offsets derive from it")
    a = ap.parse_args(argv)
    ks, loss = _ints(ap, "radix", a.radix), _ints(ap, "los", a.los)
    if not ks or any(k % 2 or not 4 <= k <= 8 for k in ks):
        ap.error(f"--radix: even values in 4..8 (the switches have 8 ports), got {a.radix!r}")
    if not loss or any(not 0 <= x <= 4000 for x in loss):
        ap.error(f"--los: values in 0..4000, got {a.los!r}")
    if a.runs < 1:
        ap.error(f"--runs: at least 1, got {a.runs}")
    out = ROOT / "build" / "bench-failover"
    out.mkdir(parents=True, exist_ok=True)
    rows = [r for k in ks for r in run_radix(k, loss, a.runs, a.seed)]
    print("\nfailover in the RTL fabric (native Verilator): one of leaf L1's spine cables cut under L1's traffic;"
          " min / median / max over the runs")
    print(f"{'fabric':>14} {'los cycles':>10} {'runs':>4} {'cycles cut->alternate':>22} "
          f"{'started into dead port':>22} {'discarded by leaf':>17} {'lost':>12} {'sent per run':>12} {'failed':>6}")
    for k in ks:
        for los in loss:
            rs = [r for r in rows if r["radix"] == k and r["los"] == los]
            print(f"{'fat_tree_2(' + str(k) + ')':>14} {los:>10} {len(rs):>4} "
                  f"{mmm([r['cycles_to_alternate'] for r in rs]):>22} "
                  f"{mmm([r['starts_on_dead_port_after_cut'] for r in rs]):>22} "
                  f"{mmm([r['xmit_discards_dead_port'] for r in rs]):>17} {mmm([r['lost'] for r in rs]):>12} "
                  f"{rs[0]['sent']:>12} {sum(bool(r['bad']) for r in rs):>6}")
    print("los: cycles from the cut to the PHYs reporting the link down (0: an ideal PHY); the switch reroutes "
          "in hardware once its port sees it")
    print("lost: packets on the wire at the cut (at most the cable's 2-cycle delay holds), started into the "
          "dead port before its PHY saw the cut, or discarded by the leaf (PortXmitDiscards: taken out of its "
          "queue for the dead port, waiting for credit, when the port went down)")
    (out / "result.json").write_text(json.dumps(rows, indent=1))
    print(f"written {out / 'result.json'}")
    failed = [r for r in rows if r["bad"]]
    if failed:
        print(f"{len(failed)} runs failed their checks", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
