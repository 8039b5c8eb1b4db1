"""The fabric simulator at scale (`make bench-netsim`): wall time, peak memory, events and
packets per second of netsim's fast core, each run in a process of its own (so its peak
resident memory is its own), one at a time.

Runs (--runs, comma-separated):
  htsim-ib, htsim-pfc   the set-up of issue 38's reference point, measured with htsim's
                        main_roce on this machine at 254.5 s and 1.95 GB: a k = 32 3-level fat
                        tree (8,192 hosts, 1,280 switches), 100 Gb/s, 1 us links, 1,500-byte
                        packets, 400 KB of buffer per input port, a random permutation of 2 MB
                        flows; routed by our SM's ftree; credits (IB) or PFC
  scale-ib              a k = 80 3-level fat tree: 128,000 hosts, 8,000 switches (the fabric
                        `make sm-scale` routes), a permutation of SIZE-byte flows (default 1 MB)
  a2a-ib                a k = 34 3-level fat tree (9,826 hosts, 1,445 switches): an all-to-all,
                        every host sending SIZE bytes (default 1 KB, one packet) to every other:
                        96.5 M flows, all from time 0, each host round-robin over its flows
Wall is the whole process after Python's start: building the fabric, routing it, checking the
routes, the workload and the simulation (and numba loading its compiled core from the cache;
a first compile, ~20 s, is done by a warm-up run on a small fabric before timing).

Each run is repeated --repeats times (seeds 1, 2, ...: another permutation each; the
all-to-all is the same each time), one process at a time; the table gives the median and
the range (min-max) of wall, simulation time, peak memory and events per second: one run
of ~50 s on this 2-core virtual machine varies by 20 % and more from hour to hour.

    python -m bench.netsim [--runs htsim-ib,htsim-pfc] [--size BYTES] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

RUNS = {
    "htsim-ib": dict(k=32, mode="ib", size=2_000_000),
    "htsim-pfc": dict(k=32, mode="pfc", size=2_000_000),
    "scale-ib": dict(k=80, mode="ib", size=1_000_000),
    "a2a-ib": dict(k=34, mode="ib", size=1_024, workload="all-to-all"),
    "htsim": dict(k=32, mode="htsim", size=2_000_000),      # the peer: bench/htsim_peer.py (HTSIM_SRC)
}


def derangement(n: int, seed: int):
    """A random permutation of range(n) with no fixed point (numpy's generator of `seed`):
    the permutation workload, ours and htsim's alike."""
    import numpy as np
    rng = np.random.default_rng(seed)
    while True:
        perm = rng.permutation(n)
        if not (perm == np.arange(n)).any():
            return perm


def one(k: int, mode: str, size: int, seed: int = 1, workload: str = "permutation") -> dict:
    t0 = time.perf_counter()
    import numpy as np

    from fabric.topology import fat_tree_3
    from netsim import fast
    from netsim.common import Params
    from sm.fabric import Fabric
    from sm.routing import route
    fab = Fabric.from_topology(fat_tree_3(k))
    lft = route(fab, "ftree").lft
    t_route = time.perf_counter() - t0
    if workload == "all-to-all":                  # host i to i+1, i+2, ... (mod C): its flows in that order
        n = fab.C
        src = np.repeat(np.arange(n, dtype=np.int32), n - 1)
        dst = ((src.astype(np.int64) + np.tile(np.arange(1, n, dtype=np.int64), n)) % n).astype(np.int32)
    else:
        src, dst = np.arange(fab.C), derangement(fab.C, seed)
    prm = Params(gbps=100.0, prop=12_500, sw_latency=1_625, mtu=1500 - 26, buf_blocks=400_000 // 64, mode=mode)
    t1 = time.perf_counter()
    res = fast.simulate_arrays(fab, lft, src, dst, np.full(len(src), size), prm=prm)
    t_sim = time.perf_counter() - t1
    wall = time.perf_counter() - t0
    assert res.delivered_packets == res.packets, "not every packet was delivered"
    return {"run": f"k={k} {mode} {workload}", "hosts": fab.C, "switches": fab.S, "flows": len(src),
            "packets": res.packets,
            "events": res.events, "wall_s": round(wall, 1), "route_s": round(t_route, 1), "sim_s": round(t_sim, 1),
            "Mevents_per_s": round(res.events / t_sim / 1e6, 2), "Mpackets_per_s": round(res.packets / t_sim / 1e6, 3),
            "peak_MB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "sim_time_us": round(prm.ns(res.end) / 1e3, 1),
            "fct_mean_us": round(prm.ns(float(res.fct.mean())) / 1e3, 1), "pauses": res.pauses}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.netsim", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="htsim-ib,htsim-pfc")
    ap.add_argument("--size", type=int, help="flow size in bytes (default: the run's)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each, seeds 1..N (median and range)")
    ap.add_argument("--htsim-src", help="the run 'htsim': a csg-htsim checkout (default: $HTSIM_SRC)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error("--repeats must be at least 1")
    if a.one:
        kw = dict(RUNS[a.one])
        if a.size:
            kw["size"] = a.size
        if kw["mode"] == "htsim":
            from tools import htsim_peer
            exe = htsim_peer.build(htsim_peer.source(a.htsim_src))
            n = kw["k"] ** 3 // 4
            print(json.dumps(htsim_peer.run(exe, derangement(n, a.seed), kw["size"], tag=f"seed{a.seed}")))
            return
        print(json.dumps(one(**kw, seed=a.seed)))
        return
    names = a.runs.split(",")
    for name in names:
        if name not in RUNS:
            sys.exit(f"bench_netsim: unknown run {name!r} (one of {', '.join(RUNS)})")
    # warm-up: the compiled core into numba's cache, outside any timing (and htsim built)
    subprocess.run([sys.executable, "-c", "from bench.netsim import warm; warm()"], check=True)
    if "htsim" in names:
        from tools import htsim_peer
        try:
            htsim_peer.build(htsim_peer.source(a.htsim_src))
        except htsim_peer.HtsimError as e:
            sys.exit(f"bench_netsim: {e}")
    rows: dict[str, list[dict]] = {}
    for seed in range(1, a.repeats + 1):           # seed by seed, the runs side by side in time
        for name in names:
            cmd = [sys.executable, "-m", "bench.netsim", "--one", name, "--seed", str(seed)] + (
                ["--size", str(a.size)] if a.size else []) + (["--htsim-src", a.htsim_src] if a.htsim_src else [])
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            rows.setdefault(name, []).append(json.loads(out.strip().splitlines()[-1]) | {"seed": seed})
            print(json.dumps(rows[name][-1]), flush=True)
    keys = ("wall_s", "sim_s", "peak_MB", "Mevents_per_s", "Mpackets_per_s", "sim_time_us")

    def cell(v):
        v = sorted(x for x in v if x is not None)
        if not v:
            return "-"
        return f"{statistics.median(v):g}" + (f" ({v[0]:g}-{v[-1]:g})" if len(v) > 1 else "")
    print(f"\n{a.repeats} run(s) each: median (min-max)\n")
    print("| run | hosts | switches | flows | packets | events | " + " | ".join(keys) + " |\n|"
          + "---|" * (6 + len(keys)))
    for rs in rows.values():
        r0 = rs[0]
        ev = sorted(r.get("events", 0) for r in rs)
        evs = "-" if not ev[-1] else f"{ev[0]:,}" + ("" if ev[0] == ev[-1] else f"-{ev[-1]:,}")
        print(f"| {r0['run']} | {r0['hosts']:,} | {r0.get('switches', '-')} | {r0['flows']:,} | "
              f"{r0.get('packets', '-')} | {evs} | " + " | ".join(cell([r.get(k) for r in rs]) for k in keys) + " |")
    if "htsim" in rows:                            # the ratio on equal work, seed by seed
        for name, rs in rows.items():
            if name != "htsim":
                ratio = [h["wall_s"] / r["wall_s"] for h, r in zip(rows["htsim"], rs, strict=True)]
                print(f"\nhtsim wall / {name} wall, seed by seed: {', '.join(f'{x:.2f}' for x in ratio)} "
                      f"(median {statistics.median(ratio):.2f}x)")


def warm():
    """Compile (or load) the fast cores the runs use on a tiny fabric."""
    from fabric.topology import fat_tree_2
    from netsim import fast
    from netsim.common import Params
    from netsim.workload import permutation
    from sm.fabric import Fabric
    from sm.routing import route
    fab = Fabric.from_topology(fat_tree_2(4))
    lft = route(fab, "ftree").lft
    for mode in ("ib", "pfc", "lossy"):
        fast.simulate(fab, lft, permutation(fab.C, 10_000), Params(mode=mode))


if __name__ == "__main__":
    main()
