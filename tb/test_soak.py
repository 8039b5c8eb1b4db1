"""The fault-injection soak (hw/top/soak.py; docs/reliability.md): the switch with a
hardware endpoint on every port and a fault injector on every wire, under random faults
(flipped bits, bad lengths, EBP, lost flow-control packets, rogue senders over credit,
cable cuts, ports set Down by management). No Python in the inner loop: the test sleeps
while the hardware runs, then reads every counter and holds the books
(tb/common/soak_books.py):

  - every packet sent was delivered good exactly once, or discarded and counted;
  - no packet was delivered corrupted, twice or out of order;
  - no endpoint waited longer than STALL_BOUND cycles for a good packet while traffic ran
    (the switch never wedged);
  - every fault kind was injected.

In `make sim` a short soak (SOAK_PACKETS, default 3,000 packets on Verilator with a fault
every 2^5 cycles on average, 600 on Icarus with one every 2^4: SOAK_RATE_LOG2); `make soak` (tools/soak.py) runs 10^7
packets on Verilator and prints the books.
"""
import json
import os
import time
from pathlib import Path

import cocotb
import pytest

from hw.common.config import CONFIGS, SwitchConfig
from hw.endpoint.traffic_check import CHECK_COUNTERS
from hw.link.link_rx import LINK_RX_COUNTERS
from hw.link.link_tx import LINK_TX_COUNTERS
from hw.mgmt.regmap import PORT_COUNTERS_LIST, build_regmap
from hw.top.soak import FAULT_KINDS, INJECT_COUNTERS, SoakPlan
from tb.common.runner import SIMS, run_cocotb
from tb.common.soak_books import check, table
from tb.common.tb import TB, tb_config

CFG = CONFIGS["small-rxreg"]          # lifetimes: heads for a dead port expire (HOQLife)
PLAN = SoakPlan()
SHORT = {"verilator": (3000, 5), "icarus": (600, 4)}     # packets, rate_log2
CHUNK = 20_000                          # cycles the test sleeps between looks


def stall_bound(cfg: SwitchConfig, plan: SoakPlan) -> int:
    """Cycles an endpoint may go without a good packet while traffic runs: a cut
    (flap_cycles), a head that waits out HOQLife twice (2 x 2^hoq_life units, each
    2^lifetime_unit_log2 cycles) behind it, the flow-control period twice (a port set Down
    waits for its peer's next FC packet), and 2,000 cycles of bring-up and slack."""
    hoq = 2 * (1 << plan.hoq_life) * (1 << cfg.lifetime_unit_log2) if cfg.lifetimes else 0
    return plan.flap_cycles + 2 * hoq + 2 * cfg.fc_period + 2000


def _v(dut, name):
    return int(getattr(dut, name).value)


@cocotb.test()
async def soak(dut):
    from cocotb.triggers import FallingEdge, Timer
    from cocotbext.axi import AxiLiteBus, AxiLiteMaster
    cfg = tb_config()
    plan = SoakPlan(**json.loads(os.environ["SOAK_PLAN"]))
    n = cfg.ports
    target = int(os.environ["SOAK_PACKETS"])
    rate = int(os.environ.get("SOAK_RATE_LOG2", "7"))
    kinds = os.environ.get("SOAK_KINDS", "")
    kind_mask = 0xFF if not kinds else sum(1 << k for k, name in enumerate(FAULT_KINDS) if name in kinds.split(","))
    tb = TB(dut, {"run": 0, "fault_en": 0, "rate_log2": rate, "kind_mask": kind_mask, "hold": 0})
    axi = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    await tb.reset()

    async def cycles(k):
        # a Timer: nothing in Python wakes on the clock meanwhile
        await Timer(k * tb.period_ns, unit="ns")
        await FallingEdge(dut.clk)

    t0 = time.perf_counter()
    for _ in range(200):
        await cycles(50)
        if _v(dut, "cfg_done"):
            break
    assert _v(dut, "cfg_done"), "the soak's management master did not finish its set-up writes"
    dut.run.value = 1
    dut.fault_en.value = 1

    def sent():
        return sum(_v(dut, f"ep__{p}__sent_pkts") for p in range(n))

    def settled():
        return (sum(_v(dut, f"ep__{p}__chk__rcv_pkts") for p in range(n)),
                sum(_v(dut, f"ep__{p}__crx__rcv_pkts") for p in range(n)), sent())

    last, still = None, 0
    while sent() < target:
        await cycles(min(CHUNK, max(200, (target - sent()) * 2)))
        now = sent()
        still = still + 1 if now == last else 0
        assert still < 5, f"the generators sent nothing for {5 * CHUNK} cycles ({now} packets sent): wedged"
        last = now
    # faults stop, the generators stop at a packet boundary, the SM brings every port back,
    # then the switch drains (HOQLife discards what cannot leave)
    dut.fault_en.value = 0
    dut.run.value = 0
    quiet, prev = 0, None
    for _ in range(2000):
        await cycles(200)
        cur = settled()
        states = [_v(dut, f"ep__{p}__state") for p in range(n)]
        quiet = quiet + 1 if cur == prev and all(s == 4 for s in states) else 0
        prev = cur
        if quiet >= 5:
            break
    assert quiet >= 5, f"the soak did not settle after the faults stopped (endpoint states {states})"
    dut.hold.value = 1
    for _ in range(100):
        await FallingEdge(dut.clk)
        if _v(dut, "sm_idle"):
            break
    assert _v(dut, "sm_idle"), "the management master did not stop"
    rm = build_regmap(cfg)
    sw = []
    for p in range(n):
        vals = {}
        for k, name in enumerate(PORT_COUNTERS_LIST):
            vals[name] = await axi.read_dword(rm["COUNTERS"].addr(p * 16 + k))
        vals["state"] = await axi.read_dword(rm["PORT_STATE"].addr(p))
        if cfg.lifetimes:                        # PortXmitDiscards for the lifetimes, by reason
            vals["SwLifetimeDiscards"] = await axi.read_dword(rm["LIFE_DISCARDS"].addr(2 * p))
            vals["SwHOQLifetimeDiscards"] = await axi.read_dword(rm["LIFE_DISCARDS"].addr(2 * p + 1))
        sw.append(vals)
    raw = {
        "ports": n, "cycles": _v(dut, "now"), "max_stall": _v(dut, "max_stall"), "sm_downs": _v(dut, "sm_downs"),
        "sm_errors": _v(dut, "sm_errors"), "seconds": time.perf_counter() - t0, "rate_log2": rate,
        "ep": [{"sent_pkts": _v(dut, f"ep__{p}__sent_pkts"),
                "chk": {k: _v(dut, f"ep__{p}__chk__{k}") for k in CHECK_COUNTERS},
                "crx": {k: _v(dut, f"ep__{p}__crx__{k}") for k in LINK_RX_COUNTERS},
                "ctx": {k: _v(dut, f"ep__{p}__ctx__{k}") for k in LINK_TX_COUNTERS}} for p in range(n)],
        "up": [{k: _v(dut, f"up__{p}__{k}") for k in INJECT_COUNTERS} for p in range(n)],
        "dn": [{k: _v(dut, f"dn__{p}__{k}") for k in INJECT_COUNTERS} for p in range(n)],
        "sw": sw,
    }
    out = os.environ.get("SOAK_JSON")
    if out:
        Path(out).write_text(json.dumps(raw, indent=1))
    dut._log.info("\n" + table(raw))
    bad = check(raw, max_stall=stall_bound(cfg, plan))
    assert not bad, "; ".join(bad)
    assert all(s["state"] == 4 for s in sw), f"switch ports not Active at the end: {[s['state'] for s in sw]}"
    seen = {k: sum(x[k] for x in raw["up"] + raw["dn"]) for k in ("corrupt", "pktlen", "ebp", "fc_dropped",
                                                                    "rogue", "flaps")}
    seen["downs"] = raw["sm_downs"]
    missing = [k for k, v in seen.items() if not v] if kind_mask == 0xFF else []
    assert not missing, f"fault kinds never injected: {missing} (raise the rate or the packets)"


def _top(cfg, plan=PLAN):
    from hw.top.soak import Soak
    return Soak(cfg, plan)


def run_soak(sim: str, packets: int, *, rate_log2: int = 7, plan: SoakPlan = PLAN, cfg: SwitchConfig = CFG,
             json_out: Path | None = None, cxx_opt: str | None = None, threads: int = 1) -> dict:
    """Build the soak top for `sim` and run `packets` packets through it (tools/soak.py).
    `cxx_opt`: a Verilator build at that C++ optimisation level, in a build directory of its
    own (the regression's is -O0: quick to build, slow to run)."""
    from dataclasses import asdict
    env = {"SOAK_PACKETS": str(packets), "SOAK_RATE_LOG2": str(rate_log2), "SOAK_PLAN": json.dumps(asdict(plan))}
    if json_out is not None:
        env["SOAK_JSON"] = str(json_out)
    kw = {"cxx_opt": cxx_opt, "tag": f"ib_soak-{cfg.name}{cxx_opt}"} if cxx_opt else {}
    if threads > 1:
        kw = {**kw, "verilator_args": ["--threads", str(threads)], "tag": f"ib_soak-{cfg.name}{cxx_opt}-t{threads}"}
    return run_cocotb(top=lambda c: _top(c, plan), name="ib_soak", test_module="tb.test_soak", sim=sim, cfg=cfg,
                      extra_env=env, public_depth=1 if sim == "verilator" else None, rerun_with_waves=False, **kw)


@pytest.mark.parametrize("sim", SIMS)
def test_soak(sim):
    packets, rate = SHORT[sim]
    run_soak(sim, int(os.environ.get("SOAK_PACKETS", packets)), rate_log2=int(os.environ.get("SOAK_RATE_LOG2", rate)))
