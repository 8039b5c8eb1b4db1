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

import cocotb
import pytest

from fabric.topology import fat_tree_2
from scenarios.fabric import leaf_flows
from scenarios.fabric_inband import bring_up, check_lfts, run_fabric, traffic
from verif.tb import tb_params


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
    plan, fws, fab, routes, lid_of = await bring_up(dut, "ftree", ctx=ctx)
    flows = leaf_flows(plan)                      # every leaf's endpoints to the next leaf's
    await traffic(dut, plan, fws, lid_of, flows, count=24)
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
    await check_lfts(plan, fws, st["fab"], st["routes"])
    await traffic(dut, plan, fws, lid_of, flows, count=24, prior=24)


@cocotb.test()
async def opensm_routes_the_rtl_fabric(dut):
    """OpenSM (Debian's, on ibsim, same net file) routed this fabric: our SM discovers it
    in-band and programs OpenSM's LIDs and LFTs (IBA port numbering both sides); a
    permutation (H(4i+m) -> H(4(i+1)+m)) then crosses the spines with nothing lost."""
    from fabric.topology import read_netfile
    from sm.dumps import read_opensm_guid2lid, read_opensm_lfts
    from sm.opensm import opensm_routes
    prm = tb_params()
    d = prm["osm_dump"]
    topo = read_netfile(prm["osm_net"])
    lids, lfts = read_opensm_guid2lid(f"{d}/opensm-subnet.lst"), read_opensm_lfts(f"{d}/opensm-lfts.dump")
    plan, fws, fab, routes, lid_of = await bring_up(
        dut, lambda fab: opensm_routes(fab, topo, lids, lfts, "opensm-" + prm["osm_engine"]))
    for j, name in enumerate(plan.endpoints):
        assert lid_of[j] == lids[name], f"{name}: LID {lid_of[j]}, OpenSM gave {lids[name]}"
    idx = {name: j for j, name in enumerate(plan.endpoints)}
    flows = {}
    for j, name in enumerate(plan.endpoints):
        h = int(name[1:])
        to = f"H{(h + 4) % 32}"
        if to in idx:
            flows[j] = [idx[to]]
    await traffic(dut, plan, fws, lid_of, flows, count=16)


@pytest.mark.long
@pytest.mark.parametrize("sim", ["verilator"])
def test_fabric(sim, tmp_path):
    from sm.opensm import run_opensm
    net = tmp_path / "ft2-8.net"
    fat_tree_2(8).write(net)
    osm = run_opensm(net, "ftree", tmp_path / "osm")
    assert osm.engine_used == "ftree", f"OpenSM fell back to {osm.engine_used}"
    run_fabric("tb.test_fabric", ["inband_bring_up_and_traffic", "opensm_routes_the_rtl_fabric"],
               {"osm_dump": str(osm.dump_dir), "osm_net": str(net), "osm_engine": osm.engine_used})
