"""The soak's procedure (hw/top/soak.py; docs/reliability.md), written once on a harness
(tb/common/harness.py): the cocotb test (tb/test_soak.py, both simulators) and the native
Verilator run (`make soak`, tools/soak.py) are this same code.

  1. reset; the soak's hardware SM plays its set-up writes (`cfg_done`);
  2. traffic and faults on until the generators have sent `packets` (a wedge: nothing sent
     for WEDGE cycles);
  3. faults off, generators off at a packet boundary; the switch drains until every
     endpoint is Active and nothing has moved for `quiet` cycles: longer than a HOQLife
     period and a SwitchLifetime, so that every packet still in the switch has left or
     been discarded and counted before the books are read;
  4. the SM holds; every counter is read (the switch's over AXI4-Lite) into `raw`
     (tb/common/soak_books.py).
"""
from __future__ import annotations

import time

from hw.common.config import SwitchConfig
from hw.endpoint.traffic_check import CHECK_COUNTERS
from hw.link.link_rx import LINK_RX_COUNTERS
from hw.link.link_tx import LINK_TX_COUNTERS
from hw.mgmt.regmap import PORT_COUNTERS_LIST, build_regmap
from hw.top.soak import FAULT_KINDS, INJECT_COUNTERS, SoakPlan

__all__ = ["soak_procedure", "verdict", "kind_mask", "stall_bound", "drain_cycles", "WEDGE"]

WEDGE = 100_000          # cycles with no packet sent while the generators run: wedged


def kind_mask(kinds: str | None) -> int:
    """Bit k: the scheduler's draw k may fire (all with none given); `kinds`: names of
    FAULT_KINDS, comma-separated."""
    if not kinds:
        return 0xFF
    names = kinds.split(",")
    unknown = [k for k in names if k not in FAULT_KINDS]
    if unknown:
        raise ValueError(f"soak kinds: unknown {unknown}; known: {sorted(set(FAULT_KINDS))}")
    return sum(1 << k for k, name in enumerate(FAULT_KINDS) if name in names)


def stall_bound(cfg: SwitchConfig, plan: SoakPlan) -> int:
    """Cycles an endpoint may go without a good packet while traffic runs: a cut
    (flap_cycles), a head that waits out HOQLife twice (2 x 2^hoq_life units, each
    2^lifetime_unit_log2 cycles) behind it, the flow-control period twice (a port set Down
    waits for its peer's next FC packet), and 2,000 cycles of bring-up and slack."""
    hoq = 2 * (1 << plan.hoq_life) * (1 << cfg.lifetime_unit_log2) if cfg.lifetimes else 0
    return plan.flap_cycles + 2 * hoq + 2 * cfg.fc_period + 2000


def drain_cycles(cfg: SwitchConfig, plan: SoakPlan) -> int:
    """How long the counters must stay still before the books are read: a packet at the
    head of a queue for a port that cannot send waits out its HOQLife (2^hoq_life units)
    and is then discarded, the next one behind it starts its own wait, so a quiet spell
    shorter than one HOQLife period proves nothing. Two periods, the flow-control period
    twice (a port coming back waits for its peer's FC packet) and 1,000 cycles."""
    unit = 1 << cfg.lifetime_unit_log2
    hoq = (1 << plan.hoq_life) * unit if cfg.lifetimes else 0
    return 2 * hoq + 2 * cfg.fc_period + 1000


async def soak_procedure(h, cfg: SwitchConfig, plan: SoakPlan, packets: int, rate_log2: int,
                         kinds: int = 0xFF, say=None) -> dict:
    """Run the soak on harness `h` (the top already built for `cfg`, `plan`); returns `raw`.
    Raises AssertionError on a wedge or a management master that did not finish."""
    n = cfg.ports
    ep = [f"ep__{p}__" for p in range(n)]
    await h.set(rst=1, run=0, fault_en=0, rate_log2=rate_log2, kind_mask=kinds, hold=0, seed=plan.seed)
    await h.step(3)
    await h.set(rst=0)
    t0 = time.perf_counter()
    ok, _ = await h.until("cfg_done", "==", 1, 10_000, 50)
    assert ok, "the soak's management master did not finish its set-up writes"
    await h.set(run=1, fault_en=1)
    sent_names = [e + "sent_pkts" for e in ep]
    last = -1
    while True:
        ok, _ = await h.until(sent_names, ">=", packets, WEDGE, 2_000)
        if ok:
            break
        now = sum((await h.get_dict(sent_names)).values())
        assert now != last, f"the generators sent nothing for {WEDGE} cycles ({now} packets sent): wedged"
        last = now
    # faults stop, the generators stop at a packet boundary, the SM brings every port back,
    # then the switch drains (HOQLife and SwitchLifetime discard what cannot leave)
    await h.set(fault_en=0, run=0)
    watch = [e + k for e in ep for k in ("chk__rcv_pkts", "crx__rcv_pkts", "sent_pkts", "state")]
    watch += [f"{d}__{p}__{k}" for d in ("up", "dn") for p in range(n) for k in INJECT_COUNTERS]
    quiet_for = drain_cycles(cfg, plan)
    look = 500
    quiet, prev = 0, None
    for _ in range(2_000_000 // look):
        await h.step(look)
        cur = await h.get_dict(watch)
        active = all(cur[e + "state"] == 4 for e in ep)
        quiet = quiet + look if cur == prev and active else 0
        prev = cur
        if quiet >= quiet_for:
            break
    assert quiet >= quiet_for, (f"the soak did not settle after the faults stopped (endpoint states "
                                f"{[cur[e + 'state'] for e in ep]})")
    await h.set(hold=1)
    ok, _ = await h.until("sm_idle", "==", 1, 100)
    assert ok, "the management master did not stop"
    rm = build_regmap(cfg)
    sw = []
    for p in range(n):
        addrs = [rm["COUNTERS"].addr(p * 16 + k) for k in range(len(PORT_COUNTERS_LIST))]
        names = list(PORT_COUNTERS_LIST)
        addrs.append(rm["PORT_STATE"].addr(p))
        names.append("state")
        if cfg.lifetimes:                        # PortXmitDiscards for the lifetimes, by reason
            addrs += [rm["LIFE_DISCARDS"].addr(2 * p), rm["LIFE_DISCARDS"].addr(2 * p + 1)]
            names += ["SwLifetimeDiscards", "SwHOQLifetimeDiscards"]
        sw.append(dict(zip(names, await h.axi_read("s_axil", *addrs), strict=True)))
    scalars = await h.get_dict(["now", "max_stall", "sm_downs", "sm_errors"])
    names = []
    for e in ep:
        names += [e + "sent_pkts"] + [f"{e}chk__{k}" for k in CHECK_COUNTERS]
        names += [f"{e}crx__{k}" for k in LINK_RX_COUNTERS] + [f"{e}ctx__{k}" for k in LINK_TX_COUNTERS]
    names += [f"{d}__{p}__{k}" for d in ("up", "dn") for p in range(n) for k in INJECT_COUNTERS]
    v = await h.get_dict(names)
    raw = {
        "ports": n, "cycles": scalars["now"], "max_stall": scalars["max_stall"], "sm_downs": scalars["sm_downs"],
        "sm_errors": scalars["sm_errors"], "seconds": time.perf_counter() - t0, "rate_log2": rate_log2,
        "seed": plan.seed, "drain_cycles": quiet_for,
        "ep": [{"sent_pkts": v[e + "sent_pkts"],
                "chk": {k: v[f"{e}chk__{k}"] for k in CHECK_COUNTERS},
                "crx": {k: v[f"{e}crx__{k}"] for k in LINK_RX_COUNTERS},
                "ctx": {k: v[f"{e}ctx__{k}"] for k in LINK_TX_COUNTERS}} for e in ep],
        "up": [{k: v[f"up__{p}__{k}"] for k in INJECT_COUNTERS} for p in range(n)],
        "dn": [{k: v[f"dn__{p}__{k}"] for k in INJECT_COUNTERS} for p in range(n)],
        "sw": sw,
    }
    if say:
        say(f"soak: {raw['cycles']:,} cycles in {raw['seconds']:.0f} s")
    return raw


def verdict(raw: dict, cfg: SwitchConfig, plan: SoakPlan, kinds: int = 0xFF) -> list[str]:
    """Everything wrong with a soak's result (empty: it passed): the books
    (soak_books.check), every switch port Active at the end, and, with every kind enabled,
    every fault kind injected at least once."""
    from tb.common.soak_books import check
    bad = check(raw, max_stall=stall_bound(cfg, plan))
    states = [s["state"] for s in raw["sw"]]
    if any(s != 4 for s in states):
        bad.append(f"switch ports not Active at the end: {states}")
    seen = {k: sum(x[k] for x in raw["up"] + raw["dn"]) for k in ("corrupt", "pktlen", "ebp", "fc_dropped",
                                                                    "rogue", "flaps")}
    seen["downs"] = raw["sm_downs"]
    missing = [k for k, v in seen.items() if not v] if kinds == 0xFF else []
    if missing:
        bad.append(f"fault kinds never injected: {missing} (raise the rate or the packets)")
    return bad
