"""The whole switch (ib_switch) on Icarus and Verilator: RTL in lock-step with the composed
SwitchModel; tables programmed over AXI4-Lite; link peers granting credit; unicast and
multicast traffic on every port and VL with tx backpressure; an independent scoreboard
(ports from the LFT/MFT, VL from SL2VL, VCRC valid, ICRC and bytes intact, order per (in,
out, VL), bad tails leaving as EBP); every table-drop class counted; counters read back
over AXI4-Lite and compared with what was sent and seen; a port going down under multicast;
the uncontended rx sop -> tx sop latency."""
import os
import random

import cocotb
import pytest

from hw.common.config import CONFIGS
from hw.common.defs import PortState
from models.packet import LRH
from models.switch import SwitchModel, idle_inputs, switch_ports
from tb.common.lockstep import cocotb_lockstep
from tb.common.runner import SIMS, run_cocotb
from tb.common.switch_env import SwitchEnv
from tb.common.tb import TB, tb_config, tb_seed


async def _env(dut, ready_p=0.9):
    cfg = TB.peek_config()
    ins, outs, qual = switch_ports(cfg)
    tb = TB(dut, idle_inputs(cfg))
    await tb.reset()
    env = SwitchEnv(cfg, random.Random(17), ready_p=ready_p)
    return tb, cfg, env, outs, qual


# ---------------------------------------------------------------- in-band bring-up
# first in the module: the LFT and MFT are block RAMs, whose contents a reset does not clear
# (docs/registers.md); this test reads them back as a switch fresh from configuration has them
@cocotb.test(skip="SWITCH_CONFIG" in os.environ and tb_config().ports > 4)   # 8 ports: `make demo`
async def inband_bring_up(dut):
    """A switch out of reset (tables empty, ports Init), brought to forwarding with MADs only,
    from an SM's node on port 1, while the switch's own firmware (fw/) runs on its management
    port (AXI4-Stream, registers over AXI4-Lite) and the model runs in lock-step: directed-
    route discovery (NodeInfo, SwitchInfo, PortInfo of every port), LID, LFT, SL2VL, VLArb,
    ports Armed -> Active, a LID-routed SMP, data traffic on every port, PortCounters read
    and cleared by PMA GMPs on a data VL; every MAD decoded by Wireshark's dissector too."""
    from cocotb.triggers import FallingEdge

    from tb.common.bringup import InbandSM, bring_up, start_managed
    from tb.common.tshark_ref import tshark_fields

    cfg = TB.peek_config()
    n, nvl = cfg.ports, cfg.data_vls
    env, fw, _log, obs, stop = await start_managed(dut, cfg, random.Random(tb_seed()).randrange(1 << 30))
    rng = env.rng
    sm = InbandSM(dut, env, lid=1)
    sw_lid = 2
    hosts = {lid: 2 + (lid - 3) % (n - 1) for lid in range(3, 3 + 2 * (n - 1))}   # LID -> IBA port
    lft = {sm.lid: 1, sw_lid: 0, **hosts}
    sl2vl = {sl: sl % nvl for sl in range(16)}
    await bring_up(sm, cfg, lft=lft, mft={0: 0b111 << 1}, sl2vl=sl2vl, switch_lid=sw_lid,
                   say=dut._log.info)

    # data traffic between every pair of ports, by the tables the SM wrote
    env.expect_tables(lft, sl2vl, set(range(n)), sw_lid)
    env.mft = {0: 0b111 << 1}
    for _ in range(8 * n):
        dlid = rng.choice([sm.lid, 0xC000] + list(hosts))
        env.send(rng.randrange(n), dlid, rng.randrange(16), rng.choice([0, 16, 64, 200]))
    for _ in range(30000):
        await FallingEdge(dut.clk)
        if env.outstanding() == 0 and env.idle_for() > 50:
            break
    copies = env.check()
    assert copies == sum(len(x[2]) for x in env.sent) > 8 * n - 8, copies
    dut._log.info(f"forwarding: {copies} copies delivered, each where the SM's tables say")

    # PortCounters by PMA (GMPs on VL 0 to the switch's LID), then a Set to clear
    for p in range(1, n + 1):
        r = await sm.port_counters(p, sw_lid)
        want_rcv, want_xmt = env.rx_pkts[p - 1], len(env.got[p - 1]) + env.taken[p - 1]
        got_rcv, got_xmt = sm.pc(r, "IB_PC_RCV_PKTS_F"), sm.pc(r, "IB_PC_XMT_PKTS_F")
        assert got_rcv == want_rcv, f"port {p}: PortRcvPkts {got_rcv}, sent {want_rcv}"
        # on the SM's port, the answer itself leaves after the counter was read
        assert got_xmt == want_xmt - (p == 1), f"port {p}: PortXmitPkts {got_xmt}, saw {want_xmt}"
        assert sm.pc(r, "IB_PC_ERR_RCV_F") == 0 and sm.pc(r, "IB_PC_XMT_DISCARDS_F") == 0
    r = await sm.port_counters(2, sw_lid, clear=True)
    assert sm.pc(r, "IB_PC_XMT_PKTS_F") == 0 and sm.pc(r, "IB_PC_RCV_PKTS_F") == 0
    dut._log.info(f"PMA: PortCounters of ports 1..{n} match the traffic; a Set cleared port 2")
    for _ in range(50):
        await FallingEdge(dut.clk)
    stop[0] = True
    await obs.stop()
    assert fw.stats["responses_sent"] == len(sm.wire) // 2 and fw.stats["malformed"] == 0, fw.stats

    # every MAD on the SM's link through Wireshark's InfiniBand dissector (an outside
    # decoder): LRH VL and DLID, method and attribute of each
    rows = tshark_fields(sm.wire, ["infiniband.lrh.vl", "infiniband.lrh.dlid", "infiniband.mad.method",
                                   "infiniband.mad.attributeid"])
    assert len(rows) == len(sm.wire)
    for k, (row, pkt) in enumerate(zip(rows, sm.wire, strict=True)):
        v = lambda f, row=row: int(row[f"infiniband.{f}"][0], 0)          # noqa: E731
        h = LRH.unpack(pkt)
        assert (v("lrh.vl"), v("lrh.dlid")) == (h.vl, h.dlid), f"MAD {k}: tshark reads another LRH"
        assert v("mad.attributeid") == int.from_bytes(pkt[28 + 16:28 + 18], "big"), f"MAD {k}: attribute"
        assert v("mad.method") & 0x7F == pkt[28 + 3] & 0x7F, f"MAD {k}: method"
        assert pkt[28 + 3] >> 7 == k % 2, f"MAD {k}: request/answer out of turn"
    dut._log.info(f"tshark decoded all {len(rows)} MAD packets on the SM's link")


@cocotb.test()
async def mixed_traffic(dut):
    """Unicast on every port and VL, multicast, packets the tables drop, bad packets cut
    through as EBP; random tx backpressure; counters read back over AXI4-Lite."""
    tb, cfg, env, outs, qual = await _env(dut)
    rng = env.rng
    n = cfg.ports
    routes = {d: (d * 7) % n for d in range(1, 33)}
    routes[40] = 255                                    # LFT drop
    env.program(routes, {sl: sl % cfg.data_vls for sl in range(16)})
    env.program_mft(0, (1 << n) - 1)                    # every port (but the input)
    env.program_mft(1, 0b0110)
    env.program_mft(2, 0b0001)                          # from port 0: nothing left -> dropped
    env.program_switch_lid(50)
    model = SwitchModel(cfg)
    relay = {}

    def drop(p, dlid, vl=None):
        env.send(p, dlid, 0, 8, vl=vl)
        relay[p] = relay.get(p, 0) + 1

    def stim():
        phases = []
        for c in range(3400):
            # traffic once the tables and port states are programmed (AXI queue empty)
            if not env.axi and (not phases or c == phases[0] + 700) and len(phases) < 2:
                phases.append(c)
                for _ in range(12):
                    dlid = rng.choice([0xC000, 0xC001] + [rng.randrange(1, 33)] * 4)
                    env.send(rng.randrange(n), dlid, rng.randrange(16), rng.choice([0, 16, 64, 200]))
                drop(0, 40)                             # LFT 255
                drop(1, 100)                            # beyond the routed range: LFT default 255
                drop(2, 0)                              # DLID 0 is reserved
                drop(3, 0xFFFF)                         # permissive DLID: for the switch (no SMA here)
                drop(0, 0xC002)                         # multicast mask only the input port
                drop(1, 0xC000 + cfg.mft_entries)      # MLID beyond the MFT
                env.send(2, 5, 1, 200, bad="ebp")       # bad tails: forwarded in cut-through as EBP
                env.send(3, 6, 2, 200, bad="vcrc")
                # subnet management packets (VL15): LID-routed through the switch, for the
                # switch itself (permissive LID, SWITCH_LID), and ones the LFT cannot route
                for _ in range(3):
                    env.send(rng.randrange(n), rng.randrange(1, 33), 0, rng.choice([0, 64, 256]), vl=15)
                env.send(1, 0xFFFF, 0, 256, vl=15)
                env.send(2, 50, 0, 16, vl=15)
                drop(0, 40, vl=15)                      # LFT 255
                drop(3, 0, vl=15)                       # DLID 0
                drop(2, 0xC000, vl=15)                  # multicast DLID: SMPs are LID-routed
            if c == 3400 - 20 * n - 100:
                env.read_counters()
            yield env.inputs()

    await cocotb_lockstep(dut, model, stim(), outs, qual, on_cycle=env.observe, vcd=tb.vcd, start_now=True)
    copies = env.check()
    assert copies == sum(len(s[2]) for s in env.sent) and copies > 25
    assert any(len(s[2]) > 1 for s in env.sent), "no multicast packet was sent"
    assert sum(1 for s in env.sent if 15 in s[2].values()) >= 6, "VL15 packets were not forwarded"
    assert sum(env.vl15_for_switch) == 4
    env.check_counters(relay)


@cocotb.test()
async def multicast_port_down(dut):
    """A port goes down while multicast copies for it wait: they are read out into the void
    and counted; later unicast packets to it are dropped at the route (DEST_DOWN)."""
    tb, cfg, env, outs, qual = await _env(dut, ready_p=1.0)
    env.program({5: 1, 6: 3}, {0: 0})
    env.program_mft(0, 0b1110)                           # ports 1, 2, 3
    model = SwitchModel(cfg)
    t0 = None

    def stim():
        nonlocal t0
        for c in range(2200):
            if t0 is None and not env.axi:
                t0 = c
                env.tx_hold.add(2)                       # port 2's PHY stalls: copies queue behind it
                env.active.discard(3)                    # the copies for port 3 will not go
                env.send(0, 0xC000, 0, 200)
                env.send(0, 0xC000, 0, 64)
                env.send(0, 5, 0, 16)                    # unicast from the same input still flows
            if t0 is not None and c == t0 + 250:
                env.write("PORT_STATE", 3, int(PortState.DOWN))
            if t0 is not None and c == t0 + 400:
                env.tx_hold.clear()
                env.send(1, 6, 0, 16)                    # to port 3, now down: dropped
            if c == 2200 - 20 * cfg.ports - 100:
                env.read_counters()
            yield env.inputs()

    await cocotb_lockstep(dut, model, stim(), outs, qual, on_cycle=env.observe, vcd=tb.vcd, start_now=True)
    assert env.check() == 5                              # two copies each to ports 1 and 2, one unicast
    env.check_counters({0: 2, 1: 1})


@cocotb.test()
async def vlarb_weights_and_table_changes(dut):
    """Two inputs saturate output 0 on VL 0 and VL 1: the bytes each VL gets follow the
    low-priority VLArb weights, and follow them again after the weights are swapped at run
    time. Meanwhile an LFT entry is moved to another port between packets."""
    tb, cfg, env, outs, qual = await _env(dut, ready_p=1.0)
    env.rx_p = 1.0
    env.program({1: 0, 2: 2, 3: 3}, {0: 0, 1: 1})
    env.program_vlarb_low(0, [(0, 4), (1, 12)])           # VL0 : VL1 = 1 : 3
    marks = {}
    shares = []

    def share(t0, t1):
        b = {0: 0, 1: 0}
        for c, p, vl, n in env.log:
            if p == 0 and t0 <= c < t1:
                b[vl] += n
        return b[0] / max(1, b[0] + b[1])

    def stim():
        c = 0
        while c < 6000 and not ("w2" in marks and c > marks["w2"] + 1200 and env.outstanding() == 0
                                and not any(env.rxq[p] for p in range(cfg.ports))):
            if "on" not in marks and not env.axi:
                marks["on"] = c
                env.send(3, 2, 0, 16)                                # before the change: to port 2
            if "on" in marks:
                t = c - marks["on"]
                for inp, sl in ((1, 0), (2, 1)):              # keep both source queues full
                    while len(env.pending[inp]) < 4 and t < 3000:
                        env.send(inp, 1, sl, 200)
                if t == 300:
                    marks["w1"] = c
                if t == 1500:
                    shares.append(share(marks["w1"], c))
                    env.program_vlarb_low(0, [(0, 12), (1, 4)])   # swap the weights at run time
                    env.route(2, 3)                              # and move DLID 2 to port 3
                if t == 1500 + 40:
                    env.send(3, 2, 0, 16)                        # after the change: to port 3
                if t == 1800:
                    marks["w2"] = c
                if t == 3000:
                    shares.append(share(marks["w2"], c))
            c += 1
            yield env.inputs()

    await cocotb_lockstep(dut, SwitchModel(cfg), stim(), outs, qual, on_cycle=env.observe, vcd=tb.vcd,
                          start_now=True)
    env.check()
    dut._log.info(f"VL0 share of output 0: {shares[0]:.3f} with weights 4:12, {shares[1]:.3f} with 12:4")
    assert abs(shares[0] - 0.25) < 0.05 and abs(shares[1] - 0.75) < 0.05, shares
    assert [LRH.unpack(b).dlid for b in env.got[2]] == [2] and [LRH.unpack(b).dlid for b in env.got[3]] == [2]


@cocotb.test()
async def uncontended_latency(dut):
    """One packet through an idle switch: cycles from its sop on rx to its sop on tx."""
    tb, cfg, env, outs, qual = await _env(dut, ready_p=1.0)
    env.program({5: 2}, {0: 0})
    marks = {}

    def stim():
        sent = False
        for c in range(700):
            if c >= 300 and not env.axi and not sent:     # after programming, on an idle switch
                env.send(1, 5, 0, 16)
                sent = True
            inp = env.inputs()
            if inp["rx__1__valid"] and inp["rx__1__sop"] and not inp["rx__1__link"]:
                marks.setdefault("rx", c)
            yield inp

    def observe(i, o):
        env.observe(i, o)
        if o["tx__2__valid"] and o["tx__2__sop"] and not o["tx__2__link"]:
            marks.setdefault("tx", observe.c)
        observe.c += 1
    observe.c = 0
    await cocotb_lockstep(dut, SwitchModel(cfg), stim(), outs, qual, on_cycle=observe, vcd=tb.vcd, start_now=True)
    assert env.check() == 1
    lat = marks["tx"] - marks["rx"]
    dut._log.info(f"uncontended latency rx sop -> tx sop: {lat} cycles")
    assert 0 < lat <= 5, f"uncontended latency {lat} cycles, budget 5 (docs/switch-core.md)"


def _top(cfg):
    from hw.top.switch import IBSwitch
    return IBSwitch(cfg)


# 4 ports/64 bits/2 VLs on both simulators; 8 ports/128 bits/4 VLs on Verilator only (on
# Icarus it took 12 minutes of the regression's time for the same tests at a larger size)
@pytest.mark.parametrize("sim, cfg_name", [(s, "small") for s in SIMS] + [("verilator", "w128")])
def test_switch(sim, cfg_name):
    run_cocotb(top=_top, name="ib_switch", test_module="tb.test_switch", sim=sim, cfg=CONFIGS[cfg_name])
