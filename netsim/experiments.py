"""Published results, re-run on the fabric simulator (netsim.fast; each set-up is small
enough to check against netsim.ref too). Each experiment prints a table, writes it as
Markdown and draws a PNG into an output directory (docs/netsim/ by `make`).

    python -m netsim.experiments livelock [--out DIR]    make netsim-livelock
    python -m netsim.experiments deadlock [--out DIR]    make netsim-deadlock
    python -m netsim.experiments collateral [--out DIR]  make netsim-collateral
    python -m netsim.experiments resilience [--out DIR]  make netsim-resilience

livelock   Guo et al., "RDMA over Commodity Ethernet at Scale" (SIGCOMM 2016), section 4.1:
           a NIC that answers a NAK by resending the message from its first packet
           (go-back-0) never completes a 4 MB message when every 256th packet is lost;
           going back to the lost packet (go-back-N) does. Two hosts on one switch, 40 Gb/s,
           MTU 1,024, the switch dropping every 256th data packet it receives. Selective
           retransmission (IRN, Mittal et al., SIGCOMM 2018) beside them.
deadlock   A routing with a cycle in its channel dependency graph deadlocks under credits and
           under PFC alike; up*/down*, whose graph our SM's checker (sm.cdg) proves acyclic,
           does not on the same torus and traffic; the lossy fabric keeps moving, paying in
           drops and retransmissions.
collateral Handley et al., "Re-architecting datacenter networks and stacks for low latency
           and high performance" (NDP, SIGCOMM 2017), Fig. 19's set-up: a 432-host 10 Gb/s
           fat tree, one long flow, and a 64-flow incast to the long flow's receiver's
           neighbour on the same top-of-rack switch. Under PFC the incast's pauses spread and
           slow the long flow, which shares no congested link with it; on a lossy fabric the
           incast's drops stay at its own port. Beside them IB credits, without and with IB
           congestion control (Annex A10). (NDP's own transport trims packets; ours is a
           lossy fabric with IRN-style selective retransmission.)
"""
from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

from fabric.topology import HCA, SWITCH, Topology, torus_2d
from netsim import fast
from netsim.common import DeadlockError, Params
from netsim.workload import Flow, uniform
from sm.cdg import check as cdg_check
from sm.fabric import Fabric
from sm.routing import route

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "netsim"


def _md(rows: list[dict]) -> str:
    keys = list(rows[0])
    out = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    out += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(out)


def _show(title: str, rows: list[dict], out: Path, name: str, note: str = ""):
    md = f"### {title}\n\n{_md(rows)}\n" + (f"\n{note}\n" if note else "")
    print(md)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text(md)


def star(n: int) -> Fabric:
    """n hosts on one n-port switch (host h on port h + 1)."""
    t = Topology(f"star-{n}")
    t.add(SWITCH, "S0", n)
    for h in range(n):
        t.add(HCA, f"H{h}", 1)
        t.connect("S0", h + 1, f"H{h}", 1)
    return Fabric.from_topology(t)


# ---------------------------------------------------------------------------- livelock

LIVELOCK = Params(gbps=40.0, prop=2_500, sw_latency=1_500, mtu=1024, header=62, buf_blocks=4096, mode="lossy",
                  rto=500_000, drop_every=256)       # 40 GbE: 0.2 ns a byte; 500 ns links; RTO 100 us


def livelock(out: Path = OUT, message: int = 4 << 20, horizon_ms: float = 20.0, samples: int = 40) -> list[dict]:
    fab = star(2)
    lft = route(fab, "minhop").lft
    flows = [Flow(0, 1, message)]
    horizon = LIVELOCK.byte_times(horizon_ms * 1e6)
    rows, curves = [], {}
    for tp, label in (("gb0", "go-back-0"), ("gbn", "go-back-N"), ("irn", "selective (IRN)")):
        prm = dataclasses.replace(LIVELOCK, transport=tp, max_time=horizon)
        res = fast.simulate(fab, lft, flows, prm)
        done = res.fct[0] >= 0
        # the message's bytes taken by the receiver over time (a run per sample: tiny runs)
        ts = np.linspace(0, min(horizon, res.end), samples + 1)[1:]
        curves[label] = (ts, [fast.simulate(fab, lft, flows, dataclasses.replace(prm, max_time=int(x)))
                              .delivered_bytes[1] for x in ts])
        span = res.fct[0] if done else horizon
        rows.append({"transport": label, "message done": f"{prm.ns(res.fct[0]) / 1e6:.3f} ms" if done else
                     f"no (in {horizon_ms:g} ms)",
                     "goodput Gb/s": f"{(message if done else 0) * 8 / prm.ns(span):.2f}",
                     "data packets sent": res.packets + res.retransmits if done else "-",
                     "resent": res.retransmits, "dropped": res.drops, "NAKs": res.naks, "timeouts": res.timeouts})
    _show("Go-back-0 livelock (Guo et al. 2016, section 4.1)", rows, out, "livelock",
          "Two hosts, one switch, 40 Gb/s, MTU 1,024 (4,096 packets), every 256th data packet into the "
          "switch dropped; RTO 100 us. The paper: with go-back-0 the 4 MB message never completes (zero "
          "goodput); go-back-N completes it. Goodput counts the message only when it is complete.")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, (ts, got) in curves.items():
        ax.plot([LIVELOCK.ns(x) / 1e6 for x in ts], [g / 2**20 for g in got], label=label, marker=".")
    ax.axhline(message / 2**20, color="grey", ls=":", lw=1)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("message taken by the receiver (MiB)")
    ax.set_title("4 MB message, every 256th packet lost")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "livelock.png", dpi=110)
    plt.close(fig)
    return rows


# ---------------------------------------------------------------------------- deadlock

DEADLOCK = Params(gbps=100.0, prop=1_250, sw_latency=1_625, mtu=4096, buf_blocks=320, pause_delay=0,
                  rto=125_000)                         # 100 ns links, 20 KB per port and VL, RTO 10 us


def deadlock(out: Path = OUT, n: int = 4, flows_per_host: int = 6, size: int = 256 << 10, seed: int = 2,
             seeds: int = 10):
    fab = Fabric.from_topology(torus_2d(n, n, hosts=1))
    wl = uniform(fab.C, fab.C * flows_per_host, size, seed)
    rows = []
    outcome = {}
    routes = {e: route(fab, e) for e in ("minhop", "updn")}
    for engine, r in routes.items():
        verdict = cdg_check(fab, r)
        for mode in ("ib", "pfc", "lossy"):
            prm = dataclasses.replace(DEADLOCK, mode=mode)
            t0 = time.perf_counter()
            try:
                res = fast.simulate(fab, r.lft, wl, prm)
                what = (f"all delivered in {prm.ns(res.fct.max()) / 1e3:.1f} us" if (res.fct >= 0).all() else
                        f"{res.delivered_packets}/{res.packets} delivered")
                cost = f"{res.drops} dropped, {res.retransmits} resent" if mode == "lossy" else (
                    f"{res.pauses} PAUSEs" if mode == "pfc" else "-")
                outcome[(engine, mode)] = (True, prm.ns(res.fct.max()) / 1e3)
            except DeadlockError as e:
                what = (f"DEADLOCK at {prm.ns(e.t) / 1e3:.1f} us: {len(e.cycle) - 1} buffers in a cycle "
                        f"({e.cycle[0]} -> ...)")
                cost = "-"
                outcome[(engine, mode)] = (False, prm.ns(e.t) / 1e3)
            rows.append({"routing": engine, "SM's CDG check": "acyclic" if verdict.acyclic else
                         f"CYCLE of {len(verdict.cycle)} channels", "flow control": mode,
                         "outcome": what, "cost": cost, "wall s": f"{time.perf_counter() - t0:.2f}"})
    _show(f"Deadlock on a {n}x{n} torus", rows, out, "deadlock",
          f"{n}x{n} torus, one host per switch, {flows_per_host} flows of {size >> 10} KB from each host to random "
          f"others (seed {seed}); 100 Gb/s, 100 ns links, 20 KB of buffer per input port and VL "
          f"(PFC's XOFF from the headroom the link needs), RTO 10 us. A deadlock is declared when nothing is "
          f"left to happen with packets undelivered; the cycle of buffers waiting on each other is named.")
    # the same over `seeds` workloads: how often each deadlocks
    summary = []
    for engine, r in routes.items():
        row = {"routing": engine}
        for mode in ("ib", "pfc", "lossy"):
            dl = 0
            for sd in range(1, seeds + 1):
                try:
                    fast.simulate(fab, r.lft, uniform(fab.C, fab.C * flows_per_host, size, sd),
                                  dataclasses.replace(DEADLOCK, mode=mode))
                except DeadlockError:
                    dl += 1
            row[f"{mode}: deadlocked"] = f"{dl} of {seeds}"
        summary.append(row)
    _show(f"Deadlocks over {seeds} workloads (seeds 1-{seeds})", summary, out, "deadlock_seeds",
          "Credits use the whole buffer before a sender waits; PFC pauses at XOFF, with the headroom above it "
          "unused, so the same cyclic routing locks up under PFC more often. Neither ever does on up*/down*.")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    modes = ("ib", "pfc", "lossy")
    for j, engine in enumerate(("minhop", "updn")):
        for m, mode in enumerate(modes):
            done, t_us = outcome[(engine, mode)]
            x = j * 4 + m
            if not done:
                ax.bar(x, t_us, color="white", edgecolor="firebrick", hatch="//")
                ax.text(x, t_us, "deadlock", ha="center", va="bottom", fontsize=8, color="firebrick")
            else:
                ax.bar(x, t_us, color=("steelblue", "darkorange", "seagreen")[m])
    ax.set_xticks([j * 4 + m for j in range(2) for m in range(3)],
                  [f"{m}\n{e}" for e in ("minhop", "updn") for m in modes], fontsize=8)
    ax.text(1, -0.2, "cyclic CDG", transform=ax.get_xaxis_transform(), ha="center", fontsize=9)
    ax.text(5, -0.2, "acyclic CDG", transform=ax.get_xaxis_transform(), ha="center", fontsize=9)
    ax.set_ylabel("last flow done / deadlocked (us)")
    ax.set_title(f"{n}x{n} torus: a cyclic routing deadlocks under credits and PFC")
    fig.tight_layout()
    fig.savefig(out / "deadlock.png", dpi=110)
    plt.close(fig)
    return rows + summary


# ---------------------------------------------------------------------------- collateral

COLLATERAL = Params(gbps=10.0, prop=1_250, sw_latency=163, mtu=4096, buf_blocks=1600, rto=250_000, transport="irn")
# 10 Gb/s: 0.8 ns a byte; 1 us links; 130 ns switches; 100 KB per input port (or output queue); RTO 200 us
COLLATERAL_CC = dict(cc=True, cc_threshold=400, ccti_increase=16, ccti_timer=12_500, cct_step=2_000)
# RoCE's DCQCN at 10 Gb/s (byte times of 0.8 ns): ECN from 5 KB (80 blocks) of queue, every packet
# from 40 KB, at most 10 % in between; a CNP per 50 us per flow; the 55 us timers; the 10 MB byte
# counter; 40 Mb/s and 400 Mb/s increases (the DCQCN paper's, Zhu et al. 2015, at this rate)
COLLATERAL_DCQCN = dict(dcqcn=True, ecn_kmin=80, ecn_kmax=640, ecn_pmax=0.1, cnp_interval=62_500,
                        alpha_timer=68_750, rate_timer=68_750, rate_ai=0.004, rate_hai=0.04)
# CC: marks past 25 KB queued at a root port; a BECN raises the CCTI by 16; it falls by one
# every 10 us; each step of the table is 1.6 us between packets (a 4 KB packet takes 3.3 us)


def collateral(out: Path = OUT, k: int = 12, incast_n: int = 64, incast_size: int = 128 << 10,
               horizon_ms: float = 12.0, incast_at_ms: float = 1.0, samples: int = 36, seed: int = 1):
    from fabric.topology import fat_tree_3
    fab = Fabric.from_topology(fat_tree_3(k))
    rng = np.random.default_rng(seed)
    # the long flow's receiver B and its neighbour C on the same ToR; the long flow's source
    # and the incast's senders elsewhere (other ToRs)
    b_host = 0
    tor = int(fab.ca_sw[b_host])
    same = [h for h in range(fab.C) if int(fab.ca_sw[h]) == tor]
    c_host = same[1]
    others = [h for h in range(fab.C) if int(fab.ca_sw[h]) != tor]
    pick = rng.choice(others, incast_n + 1, replace=False)
    a_host, senders = int(pick[0]), [int(x) for x in pick[1:]]
    horizon = COLLATERAL.byte_times(horizon_ms * 1e6)
    at = COLLATERAL.byte_times(incast_at_ms * 1e6)
    long_size = int(horizon * 1.2)                  # more than the horizon can carry
    flows = [Flow(a_host, b_host, long_size)] + [Flow(sx, c_host, incast_size, start=at) for sx in senders]
    cases = (("PFC", dict(mode="pfc")), ("PFC + DCQCN", dict(mode="pfc", **COLLATERAL_DCQCN)),
             ("lossy (IRN)", dict(mode="lossy")), ("IB credits", dict(mode="ib")),
             ("IB credits + CC", dict(mode="ib", **COLLATERAL_CC)))
    ts = np.linspace(0, horizon, samples + 1)
    rows, curves = [], {}
    for engine in ("updn", "ftree"):
        lft = route(fab, engine).lft
        for label, kw in cases:
            rows.append(_collateral_case(fab, lft, engine, label, kw, flows, ts, at, b_host, incast_n, curves))
    _show_collateral(fab, rows, curves, out, k, incast_n, incast_size, incast_at_ms, a_host, b_host, c_host, ts, at)
    return rows


def _collateral_case(fab, lft, engine, label, kw, flows, ts, at, b_host, incast_n, curves):
    prm = dataclasses.replace(COLLATERAL, **kw)
    got = [0]
    for x in ts[1:]:
        r = fast.simulate(fab, lft, flows, dataclasses.replace(prm, max_time=int(x)))
        got.append(int(r.delivered_bytes[b_host]))
    rate = np.diff(got) * 8 / (np.diff(ts) * 8 / prm.gbps)      # Gb/s per interval
    curves[(engine, label)] = rate
    horizon = ts[-1]
    during = rate[(ts[1:] > at) & (ts[1:] <= at + (horizon - at) / 2)]
    before = rate[(ts[1:] <= at)]
    before = before[1:] if len(before) > 1 else before   # (the first interval holds the flow's start)
    res = r                                          # the run to the horizon
    inc_fct = res.fct[1:]
    return {"routing": engine, "fabric": label, "long flow before, Gb/s": f"{before.mean():.2f}",
                 "long flow with the incast, Gb/s": f"{during.mean():.2f}",
                 "its low point, Gb/s": f"{rate[ts[1:] > at].min():.2f}",
                 "incast done": f"{(inc_fct >= 0).sum()}/{incast_n}",
                 "incast last, ms": f"{prm.ns(inc_fct.max()) / 1e6:.2f}" if (inc_fct >= 0).all() else "-",
            "PAUSEs": res.pauses, "drops": res.drops, "FECN / ECN marks": res.fecn, "BECNs / CNPs": res.becn}


def _show_collateral(fab, rows, curves, out, k, incast_n, incast_size, incast_at_ms, a_host, b_host, c_host, ts, at):
    _show("Collateral damage (NDP, SIGCOMM 2017, Fig. 19 set-up)", rows, out, "collateral",
          f"k = {k} 3-level fat tree ({fab.C} hosts, {fab.S} switches), 10 Gb/s, 1 us links, MTU 4,096, 100 KB "
          f"per input port and VL (lossy: per output queue), ftree routing. A long flow to host "
          f"{fab.ca_names[b_host]} from {fab.ca_names[a_host]}; at {incast_at_ms:g} ms {incast_n} hosts each send "
          f"{incast_size >> 10} KB to {fab.ca_names[c_host]}, on the same ToR. 'With the incast' is the long "
          f"flow's mean rate over the first half of what follows. The paper reports the long flow cut "
          f"to a fraction of its rate under PFC and untouched under NDP. up*/down* spreads the paths to B and "
          f"to C over the same links (as ECMP does in the paper); ftree gives every host of a ToR its own "
          f"uplink, so the two share none. CC: {COLLATERAL_CC}. DCQCN: {COLLATERAL_DCQCN}.")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    mid = (ts[1:] + ts[:-1]) / 2
    for ax, engine in zip(axes, ("updn", "ftree"), strict=True):
        for (e, label), rate in curves.items():
            if e == engine:
                ax.plot([COLLATERAL.ns(x) / 1e6 for x in mid], rate, label=label, marker=".")
        ax.axvline(COLLATERAL.ns(at) / 1e6, color="grey", ls=":", lw=1)
        ax.set_xlabel("time (ms); the incast starts at the dotted line")
        ax.set_title(f"routed {engine}", fontsize=10)
    axes[0].set_ylabel("long flow's throughput (Gb/s)")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"A long flow beside a {incast_n}-to-1 incast on the neighbouring port")
    fig.tight_layout()
    fig.savefig(out / "collateral.png", dpi=110)
    plt.close(fig)
    return rows


def resilience(out: Path = OUT, k: int = 8, size: int = 1 << 20, seeds: int = 3, fail_at_us: float = 20.0,
               hoq_life_us: float = 100.0):
    """Adaptive routing and failover in the switch (docs/reliability.md), at fabric scale: a
    k-ary 3-level fat tree at 100 Gb/s routed ftree, a random permutation of `size`-byte
    flows; static routes against the SM's AR groups (sm/adaptive.py: per packet); then the
    leaf up-link carrying host 0's flow fails at `fail_at_us`, with neither, the SM's failover
    alternates (sm/failover.py), AR, or both. HOQLife (`hoq_life_us`) discards what waits
    for a port down with nothing to take it; no SM re-routes during the run."""
    from fabric.topology import fat_tree_3
    from netsim.common import Resilience
    from netsim.workload import permutation
    from sm.adaptive import ar_plan
    from sm.failover import alternates
    fab = Fabric.from_topology(fat_tree_3(k))
    routes = route(fab, "ftree")
    plan = ar_plan(fab, routes)
    alt = alternates(fab, routes).alt
    prm = Params(gbps=100.0, prop=1_250, sw_latency=1_625, mtu=4_096, buf_blocks=1_600)
    prm = dataclasses.replace(prm, hoq_life=prm.byte_times(hoq_life_us * 1e3))
    t_fail = prm.byte_times(fail_at_us * 1e3)
    cases = (("static routes", {}, False), ("adaptive (AR groups)", dict(ar=True), False),
             ("static, link fails", {}, True), ("failover alternates, link fails", dict(alt=True), True),
             ("adaptive, link fails", dict(ar=True), True), ("adaptive + alternates, link fails",
                                                            dict(ar=True, alt=True), True))
    rows = []
    fcts: dict[str, list] = {}
    for label, kw, fails in cases:
        per = []
        for seed in range(1, seeds + 1):
            flows = permutation(fab.C, size, seed)
            leaf = int(fab.ca_sw[flows[0].src])
            port = int(routes.lft[leaf, fab.lid_ca[flows[0].dst]])
            ar = kw.get("ar", False)
            rs = Resilience(group=plan.group if ar else None, adaptive=plan.adaptive if ar else None,
                            alt=alt if kw.get("alt") else None, failures=[(t_fail, leaf, port)] if fails else [])
            t0 = time.perf_counter()
            res = fast.simulate(fab, routes.lft, flows, prm, resilience=rs)
            per.append((res, time.perf_counter() - t0))
        done = [r.fct[r.fct >= 0] for r, _ in per]
        fcts[label] = np.concatenate(done)
        rows.append({"run": label, "flows done": f"{sum(len(d) for d in done)}/{fab.C * seeds}",
                     "FCT mean us": f"{np.median([prm.ns(d.mean()) / 1e3 for d in done]):.1f}",
                     "FCT p99 us": f"{np.median([prm.ns(np.percentile(d, 99)) / 1e3 for d in done]):.1f}",
                     "DEST_DOWN discards": sum(r.counters.get("dest_down", 0) for r, _ in per),
                     "HOQLife discards": sum(r.counters.get("hoq_discards", 0) for r, _ in per),
                     "wall s (all seeds)": f"{sum(w for _, w in per):.1f}"})
    note = (f"fat_tree_3({k}): {fab.C} hosts, {fab.S} switches, 100 Gb/s, 100 ns links, MTU 4,096, 100 KB per "
            f"input buffer, IB credits; random permutations of {size >> 10} KB flows, seeds 1-{seeds} (FCT: median "
            f"over the seeds of each seed's mean and p99, over the flows that finished). The failing link is the "
            f"up-link of host 0's leaf that its flow takes, at {fail_at_us:g} us, both directions; HOQLife "
            f"{hoq_life_us:g} us. A leaf's up-link has an alternate (the other up-links); the far end's down-port "
            f"to the leaf has none in a fat tree (no equal-cost detour), so packets reaching it are discarded "
            f"(DEST_DOWN) until an SM re-routes, which this run does not model. {len(plan.members)} AR groups, "
            f"{plan.lids:,} adaptive (switch, LID) pairs.")
    _show("Adaptive routing and failover (`make netsim-resilience`)", rows, out, "resilience", note)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.5, 4))
    for label, f in fcts.items():
        x = np.sort(prm.ns(f) / 1e3)
        ax.plot(x, np.arange(1, len(x) + 1) / len(x), label=label)
    ax.set_xlabel("flow completion time (us)")
    ax.set_ylabel("fraction of flows done")
    ax.set_title(f"fat_tree_3({k}), permutation of {size >> 10} KB flows, IB credits", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "resilience.png", dpi=110)
    plt.close(fig)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m netsim.experiments", description=__doc__.split("\n\n")[0])
    ap.add_argument("which", choices=["livelock", "deadlock", "collateral", "resilience", "all"])
    ap.add_argument("--out", type=Path, default=OUT, help="directory for the tables and plots (default docs/netsim)")
    a = ap.parse_args(argv)
    for name, fn in (("livelock", livelock), ("deadlock", deadlock), ("collateral", collateral),
                     ("resilience", resilience)):
        if a.which in (name, "all"):
            fn(a.out)


if __name__ == "__main__":
    main()
