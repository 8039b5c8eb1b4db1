"""A fabric of our switches in RTL (hw/fabric/fabric.py), brought up in-band by our subnet
manager (sm/inband.py) and passing traffic between hardware endpoints. Verilator only (a
fabric of 12 eight-port switches and 31 endpoints is too slow for Icarus).

  - every switch runs its firmware (fw/) on its management port;
  - the SM, on the CA behind leaf 0's port 1, discovers the fabric by directed-route SMPs
    (NodeInfo, NodeDescription, SwitchInfo, PortInfo, three on the wire at a time; the
    endpoints have no agent, so they are the nodes that never answer), assigns LIDs,
    routes (ftree), programs every switch's LID and LFT by SubnSet and brings every
    cabled port Armed, then Active;
  - the endpoints are given their LIDs (they have no agent to take them in-band) and send
    sequence-numbered packets from each leaf to every CA of the next leaf, so all traffic
    crosses the spines; their checkers judge every packet (ICRC, format, payload pattern,
    per-source order).

A second test does the same with OpenSM's routing: Debian's OpenSM routes the same net file
on ibsim (sm.opensm), and our SM programs OpenSM's LIDs and LFTs into the RTL fabric.

Checked: the SM found what the net file says (switches by their NodeDescription, cables,
CAs); every packet sent was received good, by the endpoint it was for, in order; no
receive or checker error anywhere; every switch's LFT, read back over AXI4-Lite, equals
what the SM computed (or OpenSM did).
"""
import os
import random
import time
from pathlib import Path

import cocotb
import pytest

from fabric.topology import fat_tree_2
from hw.common.config import SwitchConfig
from hw.fabric.fabric import FabricPlan
from tb.common.fabric_run import leaf_flows
from tb.common.tb import TB, tb_config, tb_seed

# rx_register: a Verilated fabric runs 1.7x the cycles/s with the switches' link inputs
# registered (docs/fabric.md, "The RTL fabric's simulation speed"); failover: the SM gives
# the switches their alternate ports (docs/reliability.md)
FAB_CFG = SwitchConfig(name="fab8", ports=8, data_width=64, data_vls=2, mtu=256, buffer_blocks_per_vl=16,
                       fc_period=256, lft_entries=64, rx_register=True, failover=True)
SW_GUID0 = 0x0002C90300000001


def _plan(k: int = 8):
    return FabricPlan.from_topology(fat_tree_2(k), sm_ca="H0")


def _idle(dut, plan):
    d = {"rx__0__up": 1, "tx__0__ready": 1, "link_up": (1 << len(plan.cables)) - 1}
    for k in ("valid", "data", "sop", "eop", "bytes", "link", "bad"):
        d[f"rx__0__{k}"] = 0
    return d


async def _bring_up(dut, engine, say=None, ctx: dict | None = None, adaptive: bool = True,
                    ar_mode: str = "packet"):
    """Reset; firmware on every switch; the SM brings the fabric up with `engine` (a name or
    a function fab -> Routes). Returns (plan, fws, fab, routes, lid_of endpoint); `ctx`, if
    given, gets the SM, its port and the firmware's polling control. `adaptive`: the SM
    gives switches built with adaptive routing their groups (docs/reliability.md), per packet
    or flow-pinned (`ar_mode`)."""
    from sm.inband import InbandSM
    from tb.common.fabric_tb import SMPort, start_firmware
    cfg = tb_config()
    plan = _plan()
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
        list(_switch_links(fab))), "the SM found other switch cables than the net file has"
    await _check_lfts(plan, fws, fab, routes)
    if ctx is not None:
        ctx.update(sm=sm, port=port, polling=polling, fwlog=fwlog)
    return plan, fws, fab, routes, lid_of


async def _check_lfts(plan, fws, fab, routes):
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


async def _traffic(dut, plan, fws, lid_of, flows: dict[int, list[int]], count: int, len_min: int = 1,
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


@cocotb.test()
async def inband_bring_up_and_traffic(dut):
    """Our SM (ftree) brings the fabric up; each leaf's endpoints send to every CA of the
    next leaf, so all traffic crosses the spines. Then a cable between leaf L1 and a spine
    it receives over goes down: the switches' firmware sees the port change and traps, the
    SM represses the traps, re-sweeps (the switches named by the traps, then a light sweep
    of all), routes again and sends the LFT blocks that changed; the same flows again, with
    nothing lost."""
    from cocotb.triggers import ClockCycles

    from fw.agent import TRAP_RESEND
    ctx = {}
    plan, fws, fab, routes, lid_of = await _bring_up(dut, "ftree", ctx=ctx)
    flows = leaf_flows(plan)                      # every leaf's endpoints to the next leaf's
    await _traffic(dut, plan, fws, lid_of, flows, count=24)
    # a cable L1 - spine (ftree spreads L1's CAs over all its uplinks: each carries traffic)
    sm, port, polling = ctx["sm"], ctx["port"], ctx["polling"]
    l1 = plan.switches.index("L1")
    cut = next(c for c, (a, b) in enumerate(plan.cables)
               if a[0] == b[0] == "sw" and l1 in (a[1], b[1]))
    a, b = plan.cables[cut]
    names = {plan.switches[a[1]], plan.switches[b[1]]}
    polling["every"] = 512
    port.start()
    await ClockCycles(dut.clk, 4 * 512)                  # the firmware's first look at its ports
    dut.link_up.value = int(dut.link_up.value) & ~(1 << cut)
    dut._log.info(f"cable {cut} {plan.switches[a[1]]}:{a[2]} - {plan.switches[b[1]]}:{b[2]} down")
    t0 = sm.t.cycles
    traps = [await sm.next_trap(40 * 512)]
    assert traps[0] is not None, f"no trap; firmware: {[fw.stats['traps_sent'] for fw in fws]}"
    first = sm.t.cycles - t0
    while (t := await sm.next_trap((TRAP_RESEND + 2) * 512)) is not None:
        traps.append(t)
    out = await sm.resweep(sorted({t["lid_addr"] for t in traps}))
    swept = await sm.light_sweep()
    lost = out["lost"] + (swept["lost"] if swept else [])
    assert {(x[0], x[1]) for x in lost} <= {(plan.switches[a[1]], a[2]), (plan.switches[b[1]], b[2])} and lost, lost
    assert {fab.lid_name(t["lid_addr"]) for t in traps} <= names, [t["lid_addr"] for t in traps]
    assert await sm.light_sweep() is None                 # nothing left: every PortStateChange cleared
    polling["every"] = 0
    port.stop()
    dut._log.info(f"traps from {sorted(fab.lid_name(t['lid_addr']) for t in traps)}, the first "
                  f"{first} cycles after the cable went down; re-sweep {out['smps']} SMPs, "
                  f"{out['lft_blocks']} LFT block(s)")
    st = sm.state
    await _check_lfts(plan, fws, st["fab"], st["routes"])
    await _traffic(dut, plan, fws, lid_of, flows, count=24, prior=24)


@cocotb.test()
async def opensm_routes_the_rtl_fabric(dut):
    """OpenSM (Debian's, on ibsim, same net file) routed this fabric: our SM discovers it
    in-band and programs OpenSM's LIDs and LFTs (IBA port numbering both sides); a
    permutation (H(4i+m) -> H(4(i+1)+m)) then crosses the spines with nothing lost."""
    from fabric.topology import read_netfile
    from sm.dumps import read_opensm_guid2lid, read_opensm_lfts
    from sm.opensm import opensm_routes
    d = os.environ["OSM_DUMP"]
    topo = read_netfile(os.environ["OSM_NET"])
    lids, lfts = read_opensm_guid2lid(f"{d}/opensm-subnet.lst"), read_opensm_lfts(f"{d}/opensm-lfts.dump")
    plan, fws, fab, routes, lid_of = await _bring_up(
        dut, lambda fab: opensm_routes(fab, topo, lids, lfts, "opensm-" + os.environ.get("OSM_ENGINE", "?")))
    for j, name in enumerate(plan.endpoints):
        assert lid_of[j] == lids[name], f"{name}: LID {lid_of[j]}, OpenSM gave {lids[name]}"
    idx = {name: j for j, name in enumerate(plan.endpoints)}
    flows = {}
    for j, name in enumerate(plan.endpoints):
        h = int(name[1:])
        to = f"H{(h + 4) % 32}"
        if to in idx:
            flows[j] = [idx[to]]
    await _traffic(dut, plan, fws, lid_of, flows, count=16)


def _switch_links(fab):
    for s in range(fab.S):
        for p in fab.switch_ports(s):
            t, q = int(fab.nbr[s, p]), int(fab.nbr_port[s, p])
            if (s, p) < (t, q):
                yield s, p, t, q


@cocotb.test()
async def fabric_demo(dut):
    """`make fabric-demo` (sim/fabric_demo.py runs it by name; test_fabric does not):
    bring-up by our SM, a heavier load (every endpoint of leaf g to the CAs of leaf g + 1,
    back-to-back 64-256-byte payloads), then every switch port's counters (AXI4-Lite) and
    every endpoint's checker counters into a JSON file."""
    import json

    from hw.mgmt.regmap import PORT_COUNTERS_LIST
    logs = []
    plan, fws, fab, routes, lid_of = await _bring_up(dut, "ftree", say=logs.append)
    flows = leaf_flows(plan)
    count = int(os.environ.get("FABRIC_DEMO_PACKETS", "240"))
    before = {(k, p): [await fws[k].regs.read("COUNTERS", (p - 1) * 16 + i) for i in range(len(PORT_COUNTERS_LIST))]
              for k in range(len(plan.switches)) for p in range(1, FAB_CFG.ports + 1)}
    t0 = int(dut.now.value)                           # the window: traffic only, not the counter reads
    t_wall = time.perf_counter()
    await _traffic(dut, plan, fws, lid_of, flows, count=count, len_min=16, len_mask=47, gap=0, say=logs.append)
    wall = time.perf_counter() - t_wall
    cycles = int(dut.now.value) - t0
    ports = {}
    for k in range(len(plan.switches)):
        for p in range(1, FAB_CFG.ports + 1):
            now = [await fws[k].regs.read("COUNTERS", (p - 1) * 16 + i) for i in range(len(PORT_COUNTERS_LIST))]
            ports[f"{plan.switches[k]}:{p}"] = {n: (a - b) & 0xFFFFFFFF for n, a, b in
                                                zip(PORT_COUNTERS_LIST, now, before[(k, p)], strict=True)}
    eps = {}
    for j, name in enumerate(plan.endpoints):
        eps[name] = {k: int(getattr(dut, f"ep{j}__counters__{k}").value) for k in (
            "rcv_pkts", "rcv_good", "lat_min", "lat_max", "lat_sum")}
        eps[name]["sent"] = int(getattr(dut, f"ep{j}__sent_pkts").value)
        eps[name]["lid"] = lid_of[j]
    Path(os.environ["FABRIC_DEMO_OUT"]).write_text(json.dumps({
        "log": logs, "cycles": cycles, "wall_s": wall, "bytes_per_flit": FAB_CFG.bytes_per_flit,
        "ports": ports, "endpoints": eps, "sm_ca": plan.sm_ca, "sm_attach": plan.sm_attach,
        "lids": {fab.sw_names[s]: int(fab.lid_sw[s]) for s in range(fab.S)}}))


@pytest.mark.long
@pytest.mark.parametrize("sim", ["verilator"])
def test_fabric(sim, tmp_path):
    from sm.opensm import run_opensm
    from tb.common.fabric_tb import FABRIC_CXX_OPT, fabric_sources, verilator_fabric_args
    from tb.common.runner import ROOT, run_cocotb
    plan = _plan()
    net = tmp_path / "ft2-8.net"
    fat_tree_2(8).write(net)
    osm = run_opensm(net, "ftree", tmp_path / "osm")
    assert osm.engine_used == "ftree", f"OpenSM fell back to {osm.engine_used}"
    out = ROOT / "build" / "sim" / f"ib_fabric-{FAB_CFG.name}-src"
    srcs = fabric_sources(FAB_CFG, plan, out)
    run_cocotb(top=None, name="ib_fabric", test_module="tb.test_fabric", sim=sim, cfg=FAB_CFG, sources=srcs,
               tag=f"ib_fabric-{FAB_CFG.name}", rerun_with_waves=False, public_depth=1,
               verilator_args=verilator_fabric_args(out), cxx_opt=FABRIC_CXX_OPT,
               testcase=["inband_bring_up_and_traffic", "opensm_routes_the_rtl_fabric"],
               extra_env={"OSM_DUMP": str(osm.dump_dir), "OSM_NET": str(net), "OSM_ENGINE": osm.engine_used})
