"""The fabric simulator (netsim/) against the RTL fabric (hw/fabric/fabric.py): the same
fabric, the same LFTs, the same traffic, every packet timed on both.

The RTL side is the native Verilator binary of `ib_fabric` built with its monitors
(verif/native/fabric.py), programmed as our SM programs it (scenarios/fabric.py:
offline_bring_up, the ftree LFTs), its hardware endpoints' generators sending. The driver's
`record` command writes, cycle by cycle with no Python in the loop, every endpoint's
`mon_ep<j>`: a data packet's first flit leaving endpoint j (with its DLID), a packet's first
flit arriving at it (with its SLID), a packet's last flit arriving. Packets of one (source,
destination) pair are delivered in order (static routes, one VL), so the k-th packet of a
pair to leave is the k-th to arrive: a packet's latency is the cycle after its last flit
arrived minus the cycle its first flit left, the same span the simulator reports (its host
starts sending -> its tail delivered). The hardware checkers judge every packet besides
(ICRC, format, payload, order), and the RTL's own latency counter (generation stamp ->
tail at the checker) is read too.

The simulator's side is `netsim` with `rtl_params(cfg, words)`: its time unit is a byte
time, a flit of `cfg.bytes_per_flit` bytes per cycle; a packet occupies its link for its
whole flits; the cable's `delay` cycles are the propagation delay; a switch's head-in to
head-out is `core_latency_cycles(cfg)`; the input buffer per data VL is
`cfg.buffer_blocks_per_vl` blocks. Each workload is the RTL generators' traffic exactly: a
sender sends `count` packets of `words` payload words, to its destinations in turn (the
generator's order: one flow per destination, and the simulator's host serves its flows in
round robin, in list order), back to back from one instant.

    plan, fab, routes = ft2_plan(8)
    wl = permutation_workload(plan, fab, count=64, words=32, seed=1)
    rtl = rtl_measure(exe, plan, fab, routes, [wl], tmpdir)[0]
    sim = sim_measure(fab, routes, wl, rtl_params(FAB_CFG, wl.words))
    compare(rtl, sim)   # throughput, mean and p99 latency, and their relative differences
"""
from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contracts.config import SwitchConfig, core_latency_cycles

__all__ = ["Workload", "ft2_plan", "permutation_workload", "leaf_workload", "incast_workload", "rtl_params",
           "netsim_flows", "rtl_measure", "sim_measure", "compare", "packets_from_record", "DELAY", "TOLERANCE",
           "plain_params", "rtl_fabric"]

DELAY = 2                       # FabricTop's cable: cycles each way (wire and PHYs)
HEADER = 26                     # LRH 8 + BTH 12 + ICRC 4 + VCRC 2 bytes
# the bar: the simulator's throughput within 3 % of the RTL's, its mean and p99 latency within 10 %
TOLERANCE = {"throughput": 0.03, "mean": 0.10, "p99": 0.10}


@dataclass(frozen=True)
class Workload:
    name: str
    flows: dict                  # sending endpoint -> its destination endpoints, in the order it sends to them
    count: int                   # packets each sender sends (a multiple of its destinations)
    words: int                   # payload words of every packet


def ft2_plan(k: int = 8):
    """(FabricPlan, Fabric, Routes) of fat_tree_2(k) with the SM's CA H0 as the plan's host
    (its link stays down here) and our SM's ftree routes."""
    from fabric.topology import fat_tree_2
    from hw.fabric.fabric import FabricPlan
    from scenarios.fabric import offline_routes
    topo = fat_tree_2(k)
    fab, routes = offline_routes(topo, "ftree")
    return FabricPlan.from_topology(topo, sm_ca="H0"), fab, routes


def _lid_of(plan, fab) -> dict[int, int]:
    from scenarios.fabric import lids_of_endpoints
    return lids_of_endpoints(plan, fab)


def permutation_workload(plan, fab, count: int, words: int, seed: int) -> Workload:
    """Every endpoint sends to one other, every endpoint receives from one (no fixed point)."""
    from scenarios.fabric import permutation
    p = permutation(len(plan.endpoints), seed)
    return Workload(f"permutation s{seed}", {j: [p[j]] for j in range(len(plan.endpoints))}, count, words)


def leaf_workload(plan, count: int, words: int) -> Workload:
    """Every endpoint of a leaf sends to every endpoint of the next leaf in turn (all of them
    starting with the same one): every packet crosses a spine, and the senders of a leaf
    meet at each receiver in turn."""
    import math

    from scenarios.fabric import leaf_flows
    flows = leaf_flows(plan)
    n = math.lcm(*(len(d) for d in flows.values()))       # every sender's packets split evenly
    return Workload("leaf to next leaf", flows, count - count % n or n, words)


def incast_workload(plan, fab, count: int, words: int, senders: int = 4, seed: int = 1) -> Workload:
    """`senders` endpoints with consecutive LIDs (the checker's window), none on the
    receiver's leaf, all send to one endpoint (a hotspot). Seeds 1, 2, ... pick distinct
    (receiver, senders) sets, in an order shuffled once."""
    lid_of = _lid_of(plan, fab)
    by_lid = sorted(range(len(plan.endpoints)), key=lambda j: lid_of[j])
    leaf = {j: s for (s, _p), j in plan.endpoint_at().items()}
    sets = [(d, by_lid[a:a + senders]) for d in by_lid for a in range(len(by_lid) - senders + 1)
            if all(leaf[j] != leaf[d] for j in by_lid[a:a + senders])]
    random.Random(0).shuffle(sets)
    if not 1 <= seed <= len(sets):
        raise ValueError(f"incast_workload: seed {seed} of 1..{len(sets)}")
    dst, src = sets[seed - 1]
    return Workload(f"incast {senders}:1 s{seed}", {j: [dst] for j in src}, count, words)


def rtl_params(cfg: SwitchConfig, words: int, fc: bool = True, **kw):
    """netsim Params for the RTL fabric of `cfg` carrying packets of `words` payload words
    (byte times; a cycle is cfg.bytes_per_flit of them). A packet's wire bytes are its whole
    flits (the last one padded), as long on the link as in the RTL; its credit blocks must
    come out as the RTL counts them (PktLen, with the VCRC when cfg.credit_vcrc)."""
    from netsim.common import BLOCK, Params
    bpf = cfg.bytes_per_flit
    pay = 4 * words
    flits = -(-(pay + HEADER) // bpf)
    rtl_blocks = -(-((6 + words) * 4 + (2 if cfg.credit_vcrc else 0)) // BLOCK)
    if -(-flits * bpf // BLOCK) != rtl_blocks:
        raise ValueError(f"{words} payload words: {flits} flits make {-(-flits * bpf // BLOCK)} blocks, the RTL "
                         f"counts {rtl_blocks}: choose another length")
    if pay > cfg.mtu:
        raise ValueError(f"{words} payload words exceed the MTU of {cfg.mtu} bytes")
    link = dict(fc_bytes=bpf, fc_update=cfg.fc_update_blocks, fc_period=cfg.fc_period * bpf) if fc else {}
    alloc = dict(alloc="islip", islip_fair_every=cfg.islip_fair_every, islip_iterations=cfg.islip_iterations,
                 islip_cycle=bpf)
    return Params(gbps=8.0, prop=DELAY * bpf, sw_latency=core_latency_cycles(cfg) * bpf, mtu=pay,
                  header=flits * bpf - pay, buf_blocks=cfg.buffer_blocks_per_vl, vls=cfg.data_vls, **alloc | link | kw)


def plain_params(cfg: SwitchConfig, words: int):
    """The simulator without the RTL's link layer and allocator (credits free of wire time,
    a plain round robin): what the comparison must be able to tell apart."""
    return rtl_params(cfg, words, fc=False, alloc="rr")


def rtl_fabric(say=None, k: int = 8):
    """The RTL side's set-up: (cfg, plan, fab, routes, exe) for fat_tree_2(k) of the fabric
    config at radix k (8: FAB_CFG itself; `make sim` runs k = 4, 4-port switches that build
    in half the time), the native binary built with its monitors (cached between runs)."""
    from scenarios.fabric import FAB_CFG
    from verif.native.fabric import build_fabric
    cfg = FAB_CFG if k == FAB_CFG.ports else FAB_CFG.replace(name=f"fab{k}", ports=k)
    plan, fab, routes = ft2_plan(k)
    exe = build_fabric(cfg, plan, monitor=True, say=say)
    return cfg, plan, fab, routes, exe


def netsim_flows(plan, fab, wl: Workload):
    """The workload as netsim flows: per sender, a flow to each destination (in its order),
    count / destinations packets each, all from time 0."""
    from netsim.workload import Flow
    ca = {name: k for k, name in enumerate(fab.ca_names)}
    out = []
    for j, dsts in wl.flows.items():
        if wl.count % len(dsts):
            raise ValueError(f"{wl.name}: {wl.count} packets do not split over {len(dsts)} destinations")
        for d in dsts:
            out.append(Flow(ca[plan.endpoints[j]], ca[plan.endpoints[d]], wl.count // len(dsts) * 4 * wl.words))
    return out


def packets_from_record(rec: np.ndarray, names: list[str], eps: list[int], lid_of: dict[int, int]) -> dict:
    """Per packet, from a `record` of the endpoints' monitors (names[i] = mon_ep<eps[i]>):
    source and destination endpoints, the cycle its first flit left and the cycle its last
    flit arrived; packets of a pair matched in order. Raises AssertionError on a record
    that does not add up (a packet that arrived without leaving, or the reverse)."""
    ep_of_lid = {v: k for k, v in lid_of.items()}
    tx: dict[tuple, list[int]] = {}
    rx: dict[tuple, list[int]] = {}
    open_at: dict[int, int | None] = {}
    for cyc, idx, v in rec.tolist():
        j = eps[idx]
        if v >> 34 & 1:
            tx.setdefault((j, ep_of_lid[v >> 16 & 0xFFFF]), []).append(cyc)
        if v >> 33 & 1:
            assert open_at.get(j) is None, f"{names[idx]}: a packet began at cycle {cyc} inside another"
            open_at[j] = ep_of_lid[v & 0xFFFF]
        if v >> 32 & 1:
            src = open_at.get(j)
            assert src is not None, f"{names[idx]}: a packet ended at cycle {cyc} that never began"
            rx.setdefault((src, j), []).append(cyc)
            open_at[j] = None
    src, dst, t0, t1 = [], [], [], []
    for pair, sent in tx.items():
        got = rx.get(pair, [])
        assert len(got) == len(sent), f"endpoints {pair}: {len(sent)} packets left, {len(got)} arrived"
        for a, b in zip(sent, got, strict=True):
            assert b > a, f"endpoints {pair}: a packet arrived at {b}, before it left at {a}"
        src += [pair[0]] * len(sent)
        dst += [pair[1]] * len(sent)
        t0 += sent
        t1 += got
    extra = set(rx) - set(tx)
    assert not extra, f"packets arrived for pairs that sent none: {sorted(extra)[:4]}"
    return {"src": np.array(src), "dst": np.array(dst), "sent": np.array(t0, np.int64),
            "tail": np.array(t1, np.int64)}


def _summary(lat: np.ndarray, first: int, last: int, payload_bytes: int, bpf: int) -> dict:
    """Figures in cycles: per-packet latency (mean, p50, p99, max), the span from the first
    packet's start to the last one's tail, and the throughput over it (payload bytes per cycle)."""
    span = last - first
    return {"packets": int(lat.size), "mean": float(lat.mean()), "p50": float(np.percentile(lat, 50)),
            "p99": float(np.percentile(lat, 99)), "max": float(lat.max()), "span": span,
            "throughput": payload_bytes / span, "bytes_per_cycle": bpf}


def rtl_measure(exe: Path, cfg: SwitchConfig, plan, fab, routes, workloads: list[Workload], tmpdir: Path,
                say=None) -> list[dict]:
    """Run every workload on the RTL fabric (one bring-up, then one workload at a time, each
    with every packet checked by the hardware) and time its packets. Per workload: the
    summary (cycles), the packets, and the checkers' verdicts."""
    from scenarios.fabric import EP_COUNTERS, offline_bring_up
    from verif.harness import NativeHarness
    from verif.native import NativeSim, read_record
    n = len(plan.endpoints)
    names = [f"mon_ep{j}" for j in range(n)]
    out = []

    async def go(h, sim):
        for wi, wl in enumerate(workloads):        # each from reset: counters and sequence numbers at 0
            lid_of = await offline_bring_up(h, cfg, plan, fab, routes)
            cfg_in = {}
            srcs: dict[int, list[int]] = {}
            for j, dsts in wl.flows.items():
                lids = [lid_of[d] for d in dsts]
                assert lids == list(range(lids[0], lids[0] + len(lids))), (
                    f"{wl.name}: endpoint {j}'s destinations' LIDs {lids} are not consecutive in its order")
                cfg_in |= {f"ep{j}__gen__{k}": v for k, v in dict(
                    slid=lid_of[j], dlid_base=lids[0], ndest=len(lids), sl=0, vl=0, qp=0x11, len_min=wl.words,
                    len_mask=0, count=wl.count, gap=0).items()}
                for d in dsts:
                    srcs.setdefault(d, []).append(lid_of[j])
            for d, ls in srcs.items():
                assert max(ls) - min(ls) < 4, f"{wl.name}: endpoint {d}'s sources {ls} span more than 4 LIDs"
                cfg_in |= {f"ep{d}__chk__src_base": min(ls), f"ep{d}__chk__len_min": wl.words,
                           f"ep{d}__chk__len_mask": 0}
            await h.set(cfg_in)
            path = Path(tmpdir) / f"record-{wi}.bin"
            sim.record(path, *names)
            await h.set({f"ep{j}__gen__en": 1 for j in wl.flows})
            want = wl.count * len(wl.flows)
            rcv = [f"ep{j}__counters__rcv_pkts" for j in range(n)]
            ok, cycles = await h.until(rcv, ">=", want, 200 * wl.count * (wl.words + 8) + 50_000, 200)
            await h.step(300)
            sim.record(None)
            v = await h.get_dict([f"ep{j}__counters__{k}" for j in range(n) for k in EP_COUNTERS]
                                 + [f"ep{j}__sent_pkts" for j in range(n)])
            pk = packets_from_record(read_record(path), names, list(range(n)), lid_of)
            lat = pk["tail"] + 1 - pk["sent"]
            row = _summary(lat, int(pk["sent"].min()), int(pk["tail"].max()) + 1, int(lat.size) * 4 * wl.words,
                           cfg.bytes_per_flit)
            cnt = {k: sum(v[f"ep{j}__counters__{k}"] for j in range(n)) for k in EP_COUNTERS
                   if k not in ("lat_min", "lat_max")}
            row |= {"workload": wl.name, "done": ok, "run_cycles": cycles, "packets_rtl": pk,
                    "sent": sum(v[f"ep{j}__sent_pkts"] for j in range(n)), "counters": cnt,
                    "first_starts": sorted({int(pk["sent"][pk["src"] == j].min()) for j in wl.flows})}
            out.append(row)
            if say:
                say(f"RTL {wl.name}: {row['packets']} packets, {row['span']} cycles, "
                    f"mean {row['mean']:.1f} p99 {row['p99']:.1f} cycles")

    with NativeSim(exe) as s:
        asyncio.run(go(NativeHarness(s), s))
    return out


def sim_measure(plan, fab, routes, wl: Workload, prm, engine: str = "fast") -> dict:
    """The workload on the simulator (`engine`: "fast", the numba core, or "ref"), in cycles."""
    from netsim import fast, ref
    flows = netsim_flows(plan, fab, wl)
    res = (fast if engine == "fast" else ref).simulate(fab, routes.lft, flows, prm)
    assert res.delivered_packets == res.packets, f"{wl.name}: {res.delivered_packets} of {res.packets} delivered"
    unit = rtl_unit(prm)
    lat = np.asarray(res.latency, np.float64) / unit
    span = float(np.max(res.fct)) / unit
    return _summary(lat, 0, span, int(sum(f.size for f in flows)), unit) | {"workload": wl.name,
                                                                             "events": res.events}


def rtl_unit(prm) -> int:
    """Byte times per RTL cycle in Params made by rtl_params (the propagation delay is the
    cable's DELAY cycles)."""
    return prm.prop // DELAY


def compare(rtl: dict, sim: dict) -> dict:
    """Relative differences of the simulator's figures from the RTL's (sim / rtl - 1)."""
    return {k: sim[k] / rtl[k] - 1 for k in ("throughput", "mean", "p50", "p99")}
