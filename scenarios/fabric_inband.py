"""The RTL fabric (hw/fabric/fabric.py) under cocotb, brought up in-band by our subnet manager
(sm/inband.py) from the CA behind leaf 0's port 1, while every switch runs its firmware (fw/)
on its management port: the procedures tb/test_fabric.py's tests and `make fabric-demo`
are made of, and the demo's own cocotb test.

  bring_up     reset; firmware on every switch; the SM discovers, assigns LIDs, routes with
               `engine` (a name or a function fab -> Routes) and brings every port Active;
               checks the SM found what the net file says and every LFT read back
  traffic      endpoints send sequence-numbered packets; every packet received good, by the
               endpoint it was for, in order; no error anywhere
  check_lfts   every switch's LFT over AXI4-Lite against what the SM computed
  fabric_demo  the demo's run (params: packets, out): bring-up, a heavier load, every
               switch port's counters and every endpoint's into a JSON file
  run_fabric   build the fabric's Verilog and run a cocotb test of `test_module` on it
"""
import json
import random
import time
from pathlib import Path

import cocotb

from contracts.config import SwitchConfig
from contracts.counters import PORT_COUNTERS_LIST, counter_index
from contracts.streams import LINK_FLIT
from scenarios.fabric import FAB_CFG, SW_GUID0, fabric_plan, leaf_flows
from verif.tb import TB, tb_config, tb_params, tb_seed

__all__ = ["bring_up", "traffic", "check_lfts", "switch_links", "run_fabric"]


def _idle(dut, plan):
    d = {"rx__0__up": 1, "tx__0__ready": 1, "link_up": (1 << len(plan.cables)) - 1}
    for k in ("valid", *LINK_FLIT):
        d[f"rx__0__{k}"] = 0
    return d


async def bring_up(dut, engine, say=None, ctx: dict | None = None, adaptive: bool = True,
                    ar_mode: str = "packet"):
    """Reset; firmware on every switch; the SM brings the fabric up with `engine` (a name or
    a function fab -> Routes). Returns (plan, fws, fab, routes, lid_of endpoint); `ctx`, if
    given, gets the SM, its port and the firmware's polling control. `adaptive`: the SM
    gives switches built with adaptive routing their groups (docs/reliability.md), per packet
    or flow-pinned (`ar_mode`)."""
    from sm.inband import InbandSM
    from verif.env.fabric_tb import SMPort, start_firmware
    cfg = tb_config()
    plan = fabric_plan()
    tb = TB(dut, _idle(dut, plan))
    await tb.reset()
    rng = random.Random(tb_seed())
    for j in range(len(plan.endpoints)):             # their own ports up by themselves, generators off
        getattr(dut, f"ep{j}__auto_active").value = 1
        getattr(dut, f"ep{j}__gen__en").value = 0
    fwlog = []
    polling = {"every": 0}
    fws = start_firmware(dut, cfg, plan, log=fwlog, polling=polling)
    port = SMPort(dut, cfg, rng).start()
    sm = InbandSM(port, crc_msb_first=cfg.crc_msb_first, timeout=1000, adaptive=adaptive, ar_mode=ar_mode,
                  say=lambda x: (dut._log.info(x), say and say(x)))
    at = plan.endpoint_at()                           # (switch index, port) -> endpoint index
    lid_of = {}

    def on_ca(sw_guid, p, lid):
        lid_of[at[(sw_guid - SW_GUID0, p)]] = lid

    t0 = time.perf_counter()
    try:
        _d, fab, routes = await sm.bring_up(engine, on_ca=on_ca)
    except Exception:
        dut._log.error(f"SM answers: {sm.log[-8:]}; SMPs sent {sm.mads}; firmware saw: "
                       + "; ".join(f"{k} {len(b)}B port {p}{' bad' if bad else ''}" for k, b, p, bad in fwlog[-12:]))
        raise
    port.stop()
    msg = (f"bring-up: {sm.mads} MADs, {fab.S} switches, {len(lid_of)} endpoints given LIDs, "
           f"{time.perf_counter() - t0:.0f} s")
    dut._log.info(msg)
    if say:
        say(msg)
    assert fab.S == len(plan.switches) and len(lid_of) == len(plan.endpoints), (fab.S, len(lid_of))
    assert sorted(fab.sw_names) == sorted(plan.switches), f"NodeDescriptions: {fab.sw_names}"
    assert len([c for c in plan.cables if c[0][0] == "sw" and c[1][0] == "sw"]) == len(
        list(switch_links(fab))), "the SM found other switch cables than the net file has"
    await check_lfts(plan, fws, fab, routes)
    if ctx is not None:
        ctx.update(sm=sm, port=port, polling=polling, fwlog=fwlog)
    return plan, fws, fab, routes, lid_of


async def check_lfts(plan, fws, fab, routes):
    """Every LFT as the SM computed it, read back from the hardware over AXI4-Lite."""
    for k in range(fab.S):
        hw_k = plan.switches.index(fab.sw_names[k])
        for w in range(fab.max_lid // 4 + 1):
            got = await fws[hw_k].regs.read("LFT", w)
            if tb_config().adaptive:             # bit 7 of an entry but 255: adaptive, not the port
                got = sum((e if (e := got >> (8 * b) & 0xFF) == 0xFF else e & 0x7F) << (8 * b) for b in range(4))
            want = sum(int(routes.lft[k, 4 * w + b]) << (8 * b) if 4 * w + b < fab.L else 0xFF << (8 * b)
                       for b in range(4))
            assert got == want, f"switch {plan.switches[hw_k]} LFT word {w}: {got:#x}, the SM wrote {want:#x}"


async def traffic(dut, plan, fws, lid_of, flows: dict[int, list[int]], count: int, len_min: int = 1,
                   len_mask: int = 31, gap=None, say=None, prior: int = 0):
    """Endpoint j sends `count` packets spread over the endpoints flows[j] (their LIDs
    contiguous); every receiver's sources within 4 consecutive LIDs. Checks: every packet
    received good, by the endpoint it was for, in order; no error anywhere. `prior`: the
    packets each sender already sent in an earlier round of the same flows (the counters
    and sequence numbers go on from there)."""
    from cocotb.triggers import ClockCycles
    rng = random.Random(tb_seed() + 1)
    n_ep = len(plan.endpoints)
    expect = [0] * n_ep
    srcs: dict[int, list[int]] = {}
    for j, dst in flows.items():
        lids = sorted(lid_of[k] for k in dst)
        assert lids == list(range(lids[0], lids[0] + len(lids))), f"destinations of {j}: LIDs {lids} not contiguous"
        for k, v in dict(slid=lid_of[j], dlid_base=lids[0], ndest=len(lids), sl=0, vl=0, qp=0x11,
                         len_min=len_min, len_mask=len_mask, count=prior + count,
                         gap=rng.choice([0, 2, 8]) if gap is None else gap).items():
            getattr(dut, f"ep{j}__gen__{k}").value = v
        for k in dst:
            expect[k] += (prior + count) // len(dst)
            srcs.setdefault(k, []).append(lid_of[j])
    for k, ls in srcs.items():
        assert max(ls) - min(ls) < 4, f"endpoint {plan.endpoints[k]}: sources {ls} span more than 4 LIDs"
        for n, v in dict(src_base=min(ls), len_min=len_min, len_mask=len_mask).items():
            getattr(dut, f"ep{k}__chk__{n}").value = v
    for j in flows:
        getattr(dut, f"ep{j}__gen__en").value = 1
    t1 = time.perf_counter()
    cycles = 0
    while cycles < 40000 + 40 * count * (len_min + len_mask):
        await ClockCycles(dut.clk, 1000)
        cycles += 1000
        if all(int(getattr(dut, f"ep{j}__counters__rcv_pkts").value) >= expect[j] for j in range(n_ep)):
            break
    wall = time.perf_counter() - t1
    await ClockCycles(dut.clk, 200)
    msg = f"traffic: {sum(expect)} packets in {cycles} cycles, {cycles / wall:.0f} fabric cycles/s"
    dut._log.info(msg)
    if say:
        say(msg)
    for j in range(n_ep):
        c = {k: int(getattr(dut, f"ep{j}__counters__{k}").value) for k in (
            "rcv_pkts", "rcv_good", "rcv_bad", "rcv_errors", "icrc_err", "format_err", "pattern_err", "unknown_src",
            "seq_gap", "seq_dup")}
        sent = int(getattr(dut, f"ep{j}__sent_pkts").value)
        assert sent == (prior + count if j in flows else 0), f"endpoint {plan.endpoints[j]} sent {sent}"
        assert c["rcv_good"] == c["rcv_pkts"] == expect[j], f"endpoint {plan.endpoints[j]}: {c}, expected {expect[j]}"
        assert not any(c[k] for k in ("rcv_bad", "rcv_errors", "seq_gap", "seq_dup")), c
    assert all(fw.stats["malformed"] == 0 for fw in fws)


def switch_links(fab):
    for s in range(fab.S):
        for p in fab.switch_ports(s):
            t, q = int(fab.nbr[s, p]), int(fab.nbr_port[s, p])
            if (s, p) < (t, q):
                yield s, p, t, q


@cocotb.test()
async def fabric_demo(dut):
    """`make fabric-demo` (demos/fabric.py runs it by name):
    bring-up by our SM, a heavier load (every endpoint of leaf g to the CAs of leaf g + 1,
    back-to-back 64-256-byte payloads), then every switch port's counters (AXI4-Lite) and
    every endpoint's checker counters into a JSON file."""
    logs = []
    plan, fws, fab, routes, lid_of = await bring_up(dut, "ftree", say=logs.append)
    flows = leaf_flows(plan)
    prm = tb_params()
    count = prm.get("packets", 240)
    before = {(k, p): [await fws[k].regs.read("COUNTERS", counter_index(p - 1, c)) for c in PORT_COUNTERS_LIST]
              for k in range(len(plan.switches)) for p in range(1, FAB_CFG.ports + 1)}
    t0 = int(dut.now.value)                           # the window: traffic only, not the counter reads
    t_wall = time.perf_counter()
    await traffic(dut, plan, fws, lid_of, flows, count=count, len_min=16, len_mask=47, gap=0, say=logs.append)
    wall = time.perf_counter() - t_wall
    cycles = int(dut.now.value) - t0
    ports = {}
    for k in range(len(plan.switches)):
        for p in range(1, FAB_CFG.ports + 1):
            now = [await fws[k].regs.read("COUNTERS", counter_index(p - 1, c)) for c in PORT_COUNTERS_LIST]
            ports[f"{plan.switches[k]}:{p}"] = {n: (a - b) & 0xFFFFFFFF for n, a, b in
                                                zip(PORT_COUNTERS_LIST, now, before[(k, p)], strict=True)}
    eps = {}
    for j, name in enumerate(plan.endpoints):
        eps[name] = {k: int(getattr(dut, f"ep{j}__counters__{k}").value) for k in (
            "rcv_pkts", "rcv_good", "lat_min", "lat_max", "lat_sum")}
        eps[name]["sent"] = int(getattr(dut, f"ep{j}__sent_pkts").value)
        eps[name]["lid"] = lid_of[j]
    Path(prm["out"]).write_text(json.dumps({
        "log": logs, "cycles": cycles, "wall_s": wall, "bytes_per_flit": FAB_CFG.bytes_per_flit,
        "ports": ports, "endpoints": eps, "sm_ca": plan.sm_ca, "sm_attach": plan.sm_attach,
        "lids": {fab.sw_names[s]: int(fab.lid_sw[s]) for s in range(fab.S)}}))


def run_fabric(test_module: str, testcase, params: dict | None = None, cfg: SwitchConfig = FAB_CFG, **kw):
    """Build `ib_fabric` for `cfg` and fabric_plan() (Verilator only: hierarchical, C++ at
    FABRIC_CXX_OPT, only the top's signals visible) and run `testcase` of `test_module`
    (`kw`: more of run_cocotb's options, e.g. quiet and say)."""
    from verif.env.fabric_tb import FABRIC_CXX_OPT, fabric_sources, verilator_fabric_args
    from verif.runner import ROOT, run_cocotb
    out = ROOT / "build" / "sim" / f"ib_fabric-{cfg.name}-src"
    srcs = fabric_sources(cfg, fabric_plan(), out)
    return run_cocotb(top=None, name="ib_fabric", test_module=test_module, sim="verilator", cfg=cfg, sources=srcs,
                      tag=f"ib_fabric-{cfg.name}", rerun_with_waves=False, public_depth=1,
                      verilator_args=verilator_fabric_args(out), cxx_opt=FABRIC_CXX_OPT, testcase=testcase,
                      params=params, **kw)
