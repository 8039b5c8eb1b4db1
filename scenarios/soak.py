"""The fault-injection soak (hw/top/soak.py; docs/reliability.md): the named scenario (config
`CFG`, plan `PLAN`, the regression's short runs `SHORT`), its procedure written once on a
harness (verif/harness.py), and the two ways to run it: `run_soak` under cocotb (the
`soak` test below, tb/test_soak.py on both simulators) and `build_soak` + `run_one` on the
native Verilator binary (`make soak`, bench/soak.py; tests/test_native.py). The same code
either way:

  1. reset; the soak's hardware SM plays its set-up writes (`cfg_done`);
  2. traffic and faults on until the generators have sent `packets` (a wedge: nothing sent
     for WEDGE cycles);
  3. faults off, generators off at a packet boundary; the switch drains until every
     endpoint is Active and nothing has moved for `quiet` cycles: longer than a HOQLife
     period and a SwitchLifetime, so that every packet still in the switch has left or
     been discarded and counted before the books are read;
  4. the SM holds; every counter is read (the switch's over AXI4-Lite) into `raw`
     (scenarios/soak_books.py).
"""
from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import cocotb

from contracts.config import CONFIGS, SwitchConfig
from contracts.counters import CHECK_COUNTERS, LINK_RX_COUNTERS, LINK_TX_COUNTERS, PORT_COUNTERS_LIST, counter_index
from contracts.regmap import build_regmap
from hw.top.soak import FAULT_KINDS, INJECT_COUNTERS, SoakPlan

__all__ = ["CFG", "PLAN", "SHORT", "soak_procedure", "verdict", "kind_mask", "stall_bound", "drain_cycles", "WEDGE",
           "run_soak", "build_soak", "run_one"]

CFG = CONFIGS["small-rxreg"]          # lifetimes: heads for a dead port expire (HOQLife)
PLAN = SoakPlan()
# the regression's short soak per simulator: (packets, a fault every 2^rate_log2 cycles, plan).
# On Icarus (a tenth of Verilator's speed) with HOQLife 2^6 units instead of 2^8: the drain
# before the books are read waits two HOQLife periods (drain_cycles), 3,600 cycles then
# instead of 9,700, three quarters of the run
SHORT = {"verilator": (3000, 5, PLAN), "icarus": (600, 4, replace(PLAN, hoq_life=6))}

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
        addrs = [rm["COUNTERS"].addr(counter_index(p, c)) for c in PORT_COUNTERS_LIST]
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
    from scenarios.soak_books import check
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


# ---------------------------------------------------------------- under cocotb
@cocotb.test()
async def soak(dut):
    """The procedure on the cocotb DUT; the books must balance (verdict). Parameters (one
    JSON, verif.tb.tb_params): plan, packets, rate_log2, kinds, json_out."""
    from scenarios.soak_books import table
    from verif.harness import CocotbHarness
    from verif.tb import TB, tb_config, tb_params
    cfg, prm = tb_config(), tb_params()
    plan = SoakPlan(**prm["plan"])
    TB(dut)                                   # the clock
    kinds = kind_mask(prm.get("kinds", ""))
    raw = await soak_procedure(CocotbHarness(dut), cfg, plan, prm["packets"], prm["rate_log2"], kinds)
    if prm.get("json_out"):
        Path(prm["json_out"]).write_text(json.dumps(raw, indent=1))
    dut._log.info("\n" + table(raw))
    problems = verdict(raw, cfg, plan, kinds)
    assert not problems, "; ".join(problems)


def run_soak(sim: str, packets: int, *, rate_log2: int = 7, plan: SoakPlan = PLAN, cfg: SwitchConfig = CFG,
             kinds: str = "", json_out: Path | None = None, cxx_opt: str | None = None, threads: int = 1) -> dict:
    """Build the soak top for `sim` and run `packets` packets through it under cocotb.
    `cxx_opt`: a Verilator build at that C++ optimisation level, in a build directory of its
    own (the regression's is -O0: quick to build, slow to run)."""
    from hw.top.soak import Soak
    from verif.runner import run_cocotb
    params = {"plan": asdict(plan), "packets": packets, "rate_log2": rate_log2, "kinds": kinds,
              "json_out": str(json_out) if json_out else ""}
    kw = {"cxx_opt": cxx_opt, "tag": f"ib_soak-{cfg.name}{cxx_opt}"} if cxx_opt else {}
    if threads > 1:
        kw = {**kw, "verilator_args": ["--threads", str(threads)], "tag": f"ib_soak-{cfg.name}{cxx_opt}-t{threads}"}
    return run_cocotb(top=lambda c: Soak(c, plan), name="ib_soak", test_module="scenarios.soak", sim=sim, cfg=cfg,
                      params=params, public_depth=1 if sim == "verilator" else None, rerun_with_waves=False, **kw)


# ---------------------------------------------------------------- native (no Python per cycle)
def build_soak(plan: SoakPlan = PLAN, threads: int = 1, debug: bool = False, say=print, cxx_opt: str = "-O2",
               out: Path | None = None) -> Path:
    """The native ib_soak binary for `plan` (config CFG) under `out` (build/soak by default);
    `debug`: with every signal readable (verif.native's `peek`); `cxx_opt`: the C++ level
    (-O2 for `make soak`; the regression's short run builds at -O0, quicker to compile than
    to run)."""
    from hw.fabric.fabric import module_ports
    from hw.top.soak import Soak
    from verif.native import build
    from verif.runner import ROOT, generate_verilog
    out = out or ROOT / "build" / "soak"
    d = out / f"native-t{threads}{'-debug' if debug else ''}{'' if cxx_opt == '-O2' else cxx_opt}"
    top = Soak(CFG, plan)
    src = generate_verilog(top, "ib_soak", d / "ib_soak.v")
    return build("ib_soak", [src], d, cxx_opt=cxx_opt, threads=threads, debug=debug, ports=module_ports(top),
                 say=say)


def run_one(exe: str, plan: SoakPlan, packets: int, rate_log2: int, kinds: int) -> dict:
    """One seed on the native binary `exe` (in a process of its own); returns raw + verdict."""
    from verif.harness import NativeHarness
    from verif.native import NativeSim
    t0 = time.perf_counter()
    with NativeSim(Path(exe)) as s:
        raw = asyncio.run(soak_procedure(NativeHarness(s), CFG, plan, packets, rate_log2, kinds))
    raw["wall_seconds"] = round(time.perf_counter() - t0, 1)
    raw["problems"] = verdict(raw, CFG, plan, kinds)
    return raw
