"""The RTL fabric (hw/fabric/fabric.py) as a named scenario: its config `FAB_CFG` and plan
(`fabric_plan`: fat_tree_2(8), the SM's node on H0), and its traffic phase, written once on
a harness (verif/harness.py): under cocotb after our SM's in-band bring-up
(scenarios/fabric_inband.py, tb/test_fabric.py),
or on the native Verilator binary after an offline one (bench/fabric.py,
tests/test_fabric_native.py), with no Python per cycle.

  offline_bring_up   what an SM would program, written straight into every switch's
                     registers over its AXI4-Lite port: the switch's LID, the LFT our SM's
                     engine computed from the net file (sm.routing), the failover
                     alternates, every cabled port Armed then Active; the endpoints are
                     given their LIDs and bring their own ports up
  traffic            every endpoint of `flows` sends `count` packets to its destinations
                     (contiguous LIDs); the checkers judge every packet; the result says,
                     per endpoint, what was sent and received, good, bad and out of order
  check_traffic      what must hold: every packet received good, by the endpoint it was
                     for, in order, once; no receive or checker error anywhere
"""
from __future__ import annotations

import random
import time

from contracts.config import SwitchConfig
from contracts.counters import counter_index
from contracts.defs import PortState
from contracts.regmap import build_regmap
from contracts.streams import LINK_FLIT

__all__ = ["FAB_CFG", "SW_GUID0", "fabric_plan", "offline_routes", "lids_of_endpoints", "switch_writes",
           "offline_bring_up", "endpoints_by_leaf", "leaf_flows", "start_traffic", "traffic", "check_traffic",
           "EP_COUNTERS", "alternates_of", "failover_run", "check_failover", "permutation", "bisection_round",
           "check_bisection_round"]

# rx_register: a Verilated fabric runs 1.7x the cycles/s with the switches' link inputs
# registered (docs/fabric.md, "The RTL fabric's simulation speed"); failover: the SM gives
# the switches their alternate ports (docs/reliability.md)
FAB_CFG = SwitchConfig(name="fab8", ports=8, data_width=64, data_vls=2, mtu=256, buffer_blocks_per_vl=16,
                       fc_period=256, lft_entries=64, rx_register=True, failover=True)
SW_GUID0 = 0x0002C90300000001


def fabric_plan(k: int = 8):
    """fat_tree_2(k) as the RTL fabric builds it, the SM's node on CA H0."""
    from fabric.topology import fat_tree_2
    from hw.fabric.fabric import FabricPlan
    return FabricPlan.from_topology(fat_tree_2(k), sm_ca="H0")


EP_COUNTERS = ("rcv_pkts", "rcv_good", "rcv_bad", "rcv_errors", "icrc_err", "format_err", "pattern_err",
               "unknown_src", "seq_gap", "seq_lost", "seq_dup", "lat_min", "lat_max", "lat_sum")


def offline_routes(topo, engine: str = "ftree"):
    """(Fabric, Routes) of our SM's `engine` on `topo` (LIDs: switches first, then CAs)."""
    from sm.fabric import Fabric
    from sm.routing import route
    fab = Fabric.from_topology(topo)
    return fab, route(fab, engine)


def lids_of_endpoints(plan, fab) -> dict[int, int]:
    """Endpoint index (plan.endpoints) -> its LID in `fab`."""
    ca = {name: k for k, name in enumerate(fab.ca_names)}
    return {j: int(fab.lid_ca[ca[name]]) for j, name in enumerate(plan.endpoints)}


def switch_writes(cfg: SwitchConfig, plan, fab, routes, alternates: dict | None = None, ar=None,
                  pinned: bool = False) -> dict[int, list]:
    """Switch index (plan.switches) -> its register writes: SWITCH_LID, every LFT word up to
    the fabric's largest LID (bit 7 set on the entries `ar`, an sm.adaptive.ARPlan, marks
    adaptive), ALT_PORT (failover alternates: {(switch name, IBA port): IBA port}), AR_GROUP
    (the plan's groups, bit 7 with `pinned`), then every cabled port Armed, then Active (IBA
    §14.2.5.6)."""
    rm = build_regmap(cfg)
    idx = {name: s for s, name in enumerate(fab.sw_names)}
    cabled = {k: set() for k in range(len(plan.switches))}
    for a, b in plan.cables:
        for x in (a, b):
            if x[0] == "sw":
                cabled[x[1]].add(x[2])
    out = {}
    for k, name in enumerate(plan.switches):
        s = idx[name]
        w = [(rm["SWITCH_LID"].addr(0), int(fab.lid_sw[s]))]
        for word in range(fab.max_lid // 4 + 1):
            v = 0
            for b in range(4):
                lid = 4 * word + b
                e = int(routes.lft[s, lid]) if lid < fab.L else 0xFF
                if ar is not None and lid < fab.L and e != 0xFF and ar.adaptive[s, lid]:
                    e |= 0x80
                v |= (e & 0xFF) << (8 * b)
            w.append((rm["LFT"].addr(word), v))
        if alternates and cfg.failover:
            for (sw, port), alt in alternates.items():
                if sw == name:
                    w.append((rm["ALT_PORT"].addr(port - 1), alt))
        if ar is not None and cfg.adaptive:
            for p in range(1, cfg.ports + 1):
                g = int(ar.group[s, p]) if p < ar.group.shape[1] else 0
                w.append((rm["AR_GROUP"].addr(p - 1), (g | 0x80) if g and pinned else g))
        for st in (PortState.ARMED, PortState.ACTIVE):
            w += [(rm["PORT_STATE"].addr(p - 1), int(st)) for p in sorted(cabled[k])]
        out[k] = w
    return out


async def offline_bring_up(h, cfg: SwitchConfig, plan, fab, routes, *, alternates: dict | None = None,
                           ar=None, pinned: bool = False, settle: int = 400) -> dict[int, int]:
    """Reset the fabric, every cable up, the SM's own link down; program every switch as
    our SM would have (switch_writes); the endpoints' ports come up by themselves. Returns
    endpoint index -> LID."""
    n_ep = len(plan.endpoints)
    idle = {"rx__0__up": 0, "tx__0__ready": 1, "link_up": (1 << len(plan.cables)) - 1}
    idle |= {f"rx__0__{k}": 0 for k in ("valid", *LINK_FLIT)}
    idle |= {f"ep{j}__auto_active": 1 for j in range(n_ep)} | {f"ep{j}__gen__en": 0 for j in range(n_ep)}
    await h.set(rst=1, **idle)
    await h.step(3)
    await h.set(rst=0)
    await h.step(settle)                      # links trained: every cabled port in Init
    for k, writes in switch_writes(cfg, plan, fab, routes, alternates, ar, pinned).items():
        for addr, data in writes:
            resp = await h.axi_write(f"sw{k}__s_axil", addr, data)
            assert resp == 0, f"switch {plan.switches[k]}: write {addr:#x} answered {resp}"
    states = [f"ep{j}__state" for j in range(n_ep)]
    ok, _ = await h.until(states, "==", int(PortState.ACTIVE) * n_ep, 20_000, 100)
    assert ok, f"endpoints not Active: {await h.get_dict(states)}"
    return lids_of_endpoints(plan, fab)


def endpoints_by_leaf(plan) -> dict[int, list[int]]:
    """Switch index -> the endpoints cabled to it (its leaf's), for every switch with
    endpoints, in switch order (plan.switches)."""
    out: dict[int, list[int]] = {}
    for (s, _p), j in sorted(plan.endpoint_at().items()):
        out.setdefault(s, []).append(j)
    return {s: sorted(eps) for s, eps in out.items()}


def leaf_flows(plan) -> dict[int, list[int]]:
    """Each endpoint of a leaf sends to every endpoint of the next leaf (in switch order,
    the last to the first), so every packet crosses the spines."""
    groups = list(endpoints_by_leaf(plan).values())
    return {j: groups[(g + 1) % len(groups)] for g, eps in enumerate(groups) for j in eps}


async def start_traffic(h, plan, lid_of: dict[int, int], flows: dict[int, list[int]], count: int, *,
                        len_min: int = 1, len_mask: int = 31, gap=None, gaps=(0, 2, 8), rng: random.Random,
                        prior: int = 0) -> list[int]:
    """Set up and start the generators of `flows` (endpoint j sends prior + `count` packets
    in all, to the endpoints flows[j] in turn; their LIDs contiguous) and the checkers of
    their receivers (every receiver's sources within 4 consecutive LIDs); each generator's
    idle gap after a packet is `gap`, or drawn from `gaps` with `rng`. Returns per endpoint
    the packets it is owed in all."""
    expect = [0] * len(plan.endpoints)
    srcs: dict[int, list[int]] = {}
    cfg_in = {}
    for j, dst in flows.items():
        lids = sorted(lid_of[k] for k in dst)
        assert lids == list(range(lids[0], lids[0] + len(lids))), f"destinations of {j}: LIDs {lids} not contiguous"
        g = dict(slid=lid_of[j], dlid_base=lids[0], ndest=len(lids), sl=0, vl=0, qp=0x11, len_min=len_min,
                 len_mask=len_mask, count=prior + count, gap=rng.choice(gaps) if gap is None else gap)
        cfg_in |= {f"ep{j}__gen__{k}": v for k, v in g.items()}
        for k in dst:                       # the generator sends to its LIDs in turn, from the first
            m = lid_of[k] - lids[0]
            expect[k] += (prior + count + len(lids) - 1 - m) // len(lids)
            srcs.setdefault(k, []).append(lid_of[j])
    for k, ls in srcs.items():
        assert max(ls) - min(ls) < 4, f"endpoint {plan.endpoints[k]}: sources {ls} span more than 4 LIDs"
        cfg_in |= {f"ep{k}__chk__src_base": min(ls), f"ep{k}__chk__len_min": len_min,
                   f"ep{k}__chk__len_mask": len_mask}
    await h.set(cfg_in)
    await h.set({f"ep{j}__gen__en": 1 for j in flows})
    return expect


async def traffic(h, plan, lid_of: dict[int, int], flows: dict[int, list[int]], count: int, *, len_min: int = 1,
                  len_mask: int = 31, gap=None, seed: int = 1, prior: int = 0, max_cycles: int | None = None) -> dict:
    """Endpoint j sends `count` packets spread over the endpoints flows[j] (their LIDs
    contiguous; every receiver's sources within 4 consecutive LIDs). `prior`: packets each
    sender already sent in an earlier round of the same flows (counters and sequence numbers
    go on). Returns {"expect": [...], "sent": [...], "ep": [{counter: value}], "cycles",
    "seconds", "done"} (done: every receiver got what it was owed before `max_cycles`)."""
    rng = random.Random(seed + 1)
    n_ep = len(plan.endpoints)
    expect = await start_traffic(h, plan, lid_of, flows, count, len_min=len_min, len_mask=len_mask, gap=gap,
                                 rng=rng, prior=prior)
    t0 = time.perf_counter()
    c0 = await h.get("now")
    limit = max_cycles or 40_000 + 40 * count * (len_min + len_mask)
    rcv = [f"ep{j}__counters__rcv_pkts" for j in range(n_ep)]
    done = False
    while True:
        got = await h.get_dict(rcv)
        if all(got[f"ep{j}__counters__rcv_pkts"] >= expect[j] for j in range(n_ep)):
            done = True
            break
        if (await h.get("now")) - c0 >= limit:
            break
        await h.step(1000)
    cycles = (await h.get("now")) - c0
    seconds = time.perf_counter() - t0
    await h.step(200)
    names = [f"ep{j}__counters__{k}" for j in range(n_ep) for k in EP_COUNTERS]
    names += [f"ep{j}__sent_pkts" for j in range(n_ep)]
    v = await h.get_dict(names)
    return {"expect": expect, "flows": {str(j): d for j, d in flows.items()}, "count": count, "prior": prior,
            "sent": [v[f"ep{j}__sent_pkts"] for j in range(n_ep)],
            "ep": [{k: v[f"ep{j}__counters__{k}"] for k in EP_COUNTERS} for j in range(n_ep)],
            "cycles": cycles, "seconds": seconds, "done": done}


def check_traffic(plan, res: dict) -> list[str]:
    """What is wrong with a traffic round (empty: every packet sent was received good, once,
    in order, by the endpoint it was for; no error anywhere)."""
    bad = []
    flows = {int(j) for j in res["flows"]}
    total = res["prior"] + res["count"]
    for j, name in enumerate(plan.endpoints):
        c = res["ep"][j]
        sent = res["sent"][j]
        if sent != (total if j in flows else 0):
            bad.append(f"endpoint {name} sent {sent}, expected {total if j in flows else 0}")
        if not c["rcv_good"] == c["rcv_pkts"] == res["expect"][j]:
            bad.append(f"endpoint {name}: received {c['rcv_pkts']}, good {c['rcv_good']}, expected {res['expect'][j]}")
        errs = {k: c[k] for k in ("rcv_bad", "rcv_errors", "seq_gap", "seq_dup", "unknown_src") if c[k]}
        if errs:
            bad.append(f"endpoint {name}: {errs}")
    if not res["done"]:
        bad.append(f"the receivers did not get their packets in {res['cycles']} cycles")
    return bad


def alternates_of(fab, alts) -> dict:
    """sm.failover.Alternates -> {(switch name, IBA port): alternate IBA port}."""
    out = {}
    for s, name in enumerate(fab.sw_names):
        for p in range(1, alts.alt.shape[1]):
            a = int(alts.alt[s, p])
            if 1 <= a < 255:
                out[(name, p)] = a
    return out


async def _watch(h, names: list[str], hit, max_cycles: int) -> int | None:
    """Step a cycle at a time until hit(values) (a dict name -> value) is true; returns the
    cycles stepped when it was, or None if it was not within `max_cycles`."""
    for k in range(max_cycles):
        if hit(await h.get_dict(names)):
            return k
        await h.step(1)
    return None


async def failover_run(h, cfg: SwitchConfig, plan, fab, routes, alternates: dict, *, leaf: str = "L1",
                       count: int = 60, seed: int = 1, offset: int = 0, los: int | None = None) -> dict:
    """A cable from `leaf` to a spine is cut under traffic (hw/fabric/fabric.py built with
    `monitor`, and `los` unless `los` is None): every endpoint of `leaf` sends `count` packets
    to the endpoints of the next leaf; once a packet for a LID the leaf routes over that
    cable starts leaving on it, `offset` cycles more, the cable goes (link_up low; the PHYs
    see it `los` cycles later: the fabric's los_cycles).
    Measured: cycles from the cut to the first packet for such a LID leaving on the port's
    alternate (no SM involved), data packets that started on the dead port after the cut,
    packets sent, delivered good, lost; every delivered packet good, once, in order."""
    if los is not None:
        await h.set(los_cycles=los)
    lid_of = await offline_bring_up(h, cfg, plan, fab, routes, alternates=alternates)
    k_leaf = plan.switches.index(leaf)
    s_leaf = fab.sw_names.index(leaf)
    by_leaf = endpoints_by_leaf(plan)
    leaves = list(by_leaf)
    senders, receivers = by_leaf[k_leaf], by_leaf[leaves[(leaves.index(k_leaf) + 1) % len(leaves)]]
    cut = next(c for c, (a, b) in enumerate(plan.cables) if a[0] == b[0] == "sw" and a[1] == k_leaf)
    dead = plan.cables[cut][0][2]
    alt = alternates.get((leaf, dead))
    assert alt, f"{leaf} port {dead}: no alternate"
    rerouted = {lid for lid in range(1, fab.L) if int(routes.lft[s_leaf, lid]) == dead}
    rerouted &= {lid_of[j] for j in receivers}
    assert rerouted, "no flow crosses the cable"
    rng = random.Random(seed)
    await start_traffic(h, plan, lid_of, {j: receivers for j in senders}, count, gaps=(0, 2), rng=rng)
    await h.step(rng.randrange(50, 400))
    mon_dead, mon_alt = f"mon_sw{k_leaf}_p{dead}", f"mon_sw{k_leaf}_p{alt}"

    def starts(v, name):
        x = v[name]
        return x >> 16 and (x & 0xFFFF) in rerouted
    seen = await _watch(h, [mon_dead], lambda v: starts(v, mon_dead), 20_000)
    assert seen is not None, f"no packet for a rerouted LID left {leaf} port {dead} in 20,000 cycles"
    await h.step(1 + offset)
    up = await h.get("link_up")
    await h.set(link_up=up & ~(1 << cut))
    t_cut = await h.get("now")
    after = 0
    first = None
    for k in range(8_000):
        v = await h.get_dict([mon_dead, mon_alt])
        after += bool(v[mon_dead] >> 16)
        if starts(v, mon_alt):
            first = k
            break
        await h.step(1)
    assert first is not None, f"no packet for a rerouted LID left {leaf} on the alternate {alt} in 8,000 cycles"
    rcv = [f"ep{x}__counters__rcv_pkts" for x in receivers]
    ok, _ = await h.until(rcv, ">=", len(senders) * count - after - 1, 200_000, 500)
    await h.step(2000)
    names = [f"ep{j}__sent_pkts" for j in senders]
    names += [f"ep{x}__counters__{k}" for x in receivers for k in EP_COUNTERS]
    v = await h.get_dict(names)
    sent = sum(v[f"ep{j}__sent_pkts"] for j in senders)
    got = {k: sum(v[f"ep{x}__counters__{k}"] for x in receivers) for k in EP_COUNTERS if not k.startswith("lat")}
    rm = build_regmap(cfg)
    discards, = await h.axi_read(f"sw{k_leaf}__s_axil", rm["COUNTERS"].addr(
        counter_index(dead - 1, "PortXmitDiscards")))
    return {"xmit_discards_dead_port": discards, "seed": seed, "offset": offset, "los": los or 0,
                 "cut_cycle": t_cut, "cycles_to_alternate": first,
                 "starts_on_dead_port_after_cut": after, "sent": sent, "delivered": got["rcv_good"],
                 "lost": sent - got["rcv_good"], "dead_port": dead, "alternate": alt, "counters": got}


def check_failover(res: dict, count: int, senders: int, delay: int = 2) -> list[str]:
    """What is wrong with a failover run: not every packet sent, packets delivered bad,
    twice or out of order, or more lost than the cut can explain: the packets on the cable
    at the cut (a `delay`-cycle wire holds flits of at most `delay` packets, the shortest
    being more than `delay` flits long), those started into it after the cut (before the
    PHYs saw it), and those the leaf had begun to take out of its queues for the dead port
    when its port went down, which it discards and counts (PortXmitDiscards of the dead
    port)."""
    bad = []
    c = res["counters"]
    if res["sent"] != senders * count:
        bad.append(f"sent {res['sent']} of {senders * count}")
    if c["rcv_errors"] or c["seq_dup"] or c["unknown_src"]:
        bad.append(f"delivered corrupted, twice or out of order: {c}")
    if c["rcv_bad"] > res["lost"]:
        bad.append(f"{c['rcv_bad']} packets arrived bad, {res['lost']} lost")
    explained = res["starts_on_dead_port_after_cut"] + delay + res["xmit_discards_dead_port"]
    if not 0 <= res["lost"] <= explained:
        bad.append(f"{res['lost']} packets lost; only the {delay} on the cable, the "
                   f"{res['starts_on_dead_port_after_cut']} started on the dead port after the cut and the "
                   f"{res['xmit_discards_dead_port']} the leaf discarded for it may be")
    return bad


def permutation(n: int, seed: int) -> list[int]:
    """A permutation of range(n) with no fixed point (seed: random.Random's)."""
    rng = random.Random(seed)
    while True:
        p = list(range(n))
        rng.shuffle(p)
        if all(p[k] != k for k in range(n)):
            return p


async def bisection_round(h, plan, lid_of: dict[int, int], dst: dict[int, int], *, count: int, payload_words: int,
                          sent_before: list[int], got_before: list[dict], warm: int = 1500,
                          window: int = 3000) -> tuple[dict, list[int], list[dict]]:
    """One round of the effective-bisection benchmark (bench/ar.py): every endpoint j
    of `dst` sends `count` packets of `payload_words` words back to back to endpoint dst[j]
    (one source per receiver). After `warm` cycles, for `window` cycles, the packets all
    endpoints receive, and those they receive good and in order, are counted; every sender
    must still be sending at both ends of the window (the premise: the window measures the
    fabric under full offered load, not senders that ran dry). Then the round runs out:
    every packet received once, none corrupted or misdelivered. `sent_before`, `got_before`:
    the senders' and receivers' counters before the round (sequence numbers go on).
    Returns (the round's figures, sent, counters) for the next round."""
    n = len(plan.endpoints)
    cfg_in = {}
    for j, d in dst.items():
        cfg_in |= {f"ep{j}__gen__{k}": v for k, v in dict(
            slid=lid_of[j], dlid_base=lid_of[d], ndest=1, sl=0, vl=0, qp=0x11, len_min=payload_words, len_mask=0,
            count=sent_before[j] + count, gap=0).items()}
        cfg_in |= {f"ep{d}__chk__src_base": lid_of[j], f"ep{d}__chk__len_min": payload_words,
                   f"ep{d}__chk__len_mask": 0}
    await h.set(cfg_in)
    await h.set({f"ep{j}__gen__en": 1 for j in dst})
    sent_names = [f"ep{j}__sent_pkts" for j in range(n)]
    win = [f"ep{j}__counters__{k}" for j in range(n) for k in ("rcv_pkts", "rcv_good")] + sent_names

    def tot(v, k):
        return sum(v[f"ep{j}__counters__{k}"] for j in range(n))

    def busy(v):
        return sum(v[f"ep{j}__sent_pkts"] < sent_before[j] + count for j in dst)
    await h.step(warm)
    v1 = await h.get_dict(win)
    await h.step(window)
    v2 = await h.get_dict(win)
    rcv = [f"ep{j}__counters__rcv_pkts" for j in range(n)]
    want = sum(g["rcv_pkts"] for g in got_before) + n * count
    ok, _ = await h.until(rcv, ">=", want, 400 * 500, 500)
    await h.step(300)
    await h.set({f"ep{j}__gen__en": 0 for j in dst})
    names = [f"ep{j}__counters__{k}" for j in range(n) for k in EP_COUNTERS]
    v = await h.get_dict(names + sent_names)
    now = [{k: v[f"ep{j}__counters__{k}"] for k in EP_COUNTERS} for j in range(n)]
    delta = {k: sum(now[j][k] - got_before[j][k] for j in range(n)) for k in EP_COUNTERS if not k.startswith("lat")}
    row = {"rate": (tot(v2, "rcv_pkts") - tot(v1, "rcv_pkts")) / window,
           "rate_in_order": (tot(v2, "rcv_good") - tot(v1, "rcv_good")) / window,
           "busy_at_window_start": busy(v1), "busy_at_window_end": busy(v2), "senders": len(dst), "done": ok,
           **{k: delta[k] for k in ("rcv_pkts", "rcv_good", "rcv_errors", "rcv_bad", "icrc_err", "format_err",
                                    "pattern_err", "unknown_src", "seq_gap", "seq_lost", "seq_dup")}}
    return row, [v[x] for x in sent_names], now


def check_bisection_round(row: dict, n: int, count: int, keeps_order: bool) -> list[str]:
    """What is wrong with a bisection round: a sender idle in the window, a packet not
    received, corrupted or misdelivered, or (static and flow-pinned routing) out of order.
    Per-packet adaptive routing may reorder: the checker then counts the early packet a gap
    and the late one a duplicate (both rcv_errors), which the round reports, not fails."""
    bad = []
    if row["busy_at_window_start"] != row["senders"] or row["busy_at_window_end"] != row["senders"]:
        bad.append(f"senders busy {row['busy_at_window_start']} / {row['busy_at_window_end']} of {row['senders']} "
                   "at the window's start / end: the window does not measure full load")
    if not row["done"] or row["rcv_pkts"] != n * count:
        bad.append(f"{row['rcv_pkts']} packets received of {n * count}")
    if any(row[k] for k in ("rcv_bad", "icrc_err", "format_err", "pattern_err", "unknown_src")):
        bad.append(f"corrupted or misdelivered: {row}")
    if keeps_order and row["rcv_errors"]:
        bad.append(f"reordered: {row}")
    if row["rcv_good"] + row["rcv_errors"] != row["rcv_pkts"]:
        bad.append(f"books: good {row['rcv_good']} + errors {row['rcv_errors']} != received {row['rcv_pkts']}")
    return bad
