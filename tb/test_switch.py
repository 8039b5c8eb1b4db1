"""The whole switch (ib_switch) on Icarus and Verilator: RTL in lock-step with the composed
SwitchModel (observe mode: the model sees every input whoever drives it); the testbench of
verif.env.switch_tb: a link peer per port (idle and backpressure generators as test
parameters), tables programmed by cocotbext-axi's AxiLiteMaster with pauses on every
channel, the management processor's streams on AxiStreamSink/Source; unicast and
multicast traffic on every port and VL; an independent scoreboard (ports from the LFT/MFT,
VL from SL2VL, VCRC valid, ICRC and bytes intact, order per (in, out, VL), bad tails leaving
as EBP); every table-drop class counted; counters read back and compared with what was sent
and seen; a port going down under multicast; VLArb weights and tables; counters at their
32-bit corners (a backdoor preset); the uncontended rx sop -> tx
sop latency; the in-band bring-up by an SM's MADs with the firmware on the management port."""
import os

import cocotb
import pytest
from cocotbext.axi import AxiProt, AxiResp

from contracts.config import (
    CONFIGS,
    LATENCY_BUDGET_NS,
    TARGET_CLOCK_MHZ,
    core_latency_cycles,
    latency_budget_cycles,
)
from contracts.defs import PortState
from contracts.streams import AXIL_ADDR_BITS
from models.packet import LRH
from verif.env.switch_tb import VERILATOR_ARGS, SwitchTB
from verif.runner import SIMS, run_cocotb
from verif.tb import tb_config


# ---------------------------------------------------------------- in-band bring-up
# first in the module: the switch is fresh out of reset (tables empty, ports Init)
@cocotb.test(skip="SWITCH_CONFIG" in os.environ and tb_config().ports > 4)   # 8 ports: `make demo`
async def inband_bring_up(dut):
    """A switch out of reset (tables empty, ports Init), brought to forwarding with MADs only,
    from an SM's node on port 1, while the switch's own firmware (fw/) runs on its management
    port (AXI4-Stream, registers over AXI4-Lite) and the model runs in lock-step: directed-
    route discovery (NodeInfo, SwitchInfo, PortInfo of every port), LID, LFT, SL2VL, VLArb,
    ports Armed -> Active, a LID-routed SMP, data traffic on every port, PortCounters read
    and cleared by PMA GMPs on a data VL; every MAD decoded by Wireshark's dissector too."""
    from verif.env.bringup import InbandSM, bring_up
    from verif.outside.tshark_ref import tshark_fields

    tb = await SwitchTB(dut, firmware=True, idle="random", backpressure="random").start()
    cfg, env, fw = tb.cfg, tb.env, tb.fw
    n, nvl = cfg.ports, cfg.data_vls
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
    await tb.drain(quiet=50, timeout=30000)
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
    await tb.cycles(50)
    await tb.finish()
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
    through as EBP, SMPs through and for the switch; counters read back over AXI4-Lite. The
    link peers leave random gaps and hold tx ready low at random."""
    await _mixed_traffic(dut, "random", "random")


# the 8-port switch (Verilator only) runs the random timing only, to keep `make sim` inside
# CI's time; the small one all three
@cocotb.skipif("SWITCH_CONFIG" in os.environ and tb_config().ports > 4, reason="8 ports: random timing only")
@cocotb.test()
@cocotb.parametrize((("idle", "backpressure"), [("bursty", "bursty"), (None, None)]))
async def mixed_traffic_timing(dut, idle, backpressure):
    """mixed_traffic with the link peers' other timings (verif.ib.link_peer generators):
    bursts of gaps and of backpressure, and none at all (back-to-back flits, always ready)."""
    await _mixed_traffic(dut, idle, backpressure)


async def _mixed_traffic(dut, idle, backpressure):
    tb = await SwitchTB(dut, idle=idle, backpressure=backpressure).start()
    cfg, env = tb.cfg, tb.env
    rng, n = env.rng, cfg.ports
    # extended LIDs (docs/fabric.md): the same DLIDs in every page, routed to other ports;
    # LIDs are page << 16 | DLID, the switch's LID in the last page
    last = ((1 << cfg.ext_lid_bits) - 1) << 16
    pages = range(0, last + 1, 1 << 16)
    routes = {pg | d: (d * 7 + (pg >> 16)) % n for d in range(1, 33) for pg in pages}
    routes[40] = 255                                    # LFT drop
    env.program(routes, {sl: sl % cfg.data_vls for sl in range(16)})
    env.program_mft(0, (1 << n) - 1)                    # every port (but the input)
    env.program_mft(1, 0b0110)
    env.program_mft(2, 0b0001)                          # from port 0: nothing left -> dropped
    switch_lid = last | 50
    env.program_switch_lid(switch_lid)
    await tb.programmed()
    relay = {}

    def drop(p, dlid, vl=None):
        env.send(p, dlid, 0, 8, vl=vl)
        relay[p] = relay.get(p, 0) + 1

    for _phase in range(2):
        for _ in range(12):
            dlid = rng.choice([0xC000, 0xC001] + [rng.choice(pages) | rng.randrange(1, 33)] * 4)
            env.send(rng.randrange(n), dlid, rng.randrange(16), rng.choice([0, 16, 64, 200]))
        drop(0, 40)                             # LFT 255
        drop(1, 100)                            # beyond the routed range: LFT default 255
        drop(2, 0)                              # DLID 0 is reserved
        drop(3, 0xFFFF)                         # permissive DLID on a data VL: for nobody
        drop(0, 0xC002)                         # multicast mask only the input port
        drop(1, 0xC000 + cfg.mft_entries)      # MLID beyond the MFT
        if last:                                # extended LIDs: invalid pages
            drop(2, last | 0xC000)              # an MLID out of page 0
            drop(3, last | 0xFFFF)              # the permissive DLID out of page 0
            drop(0, last)                       # DLID 0 in another page
            drop(1, last | cfg.lft_entries)     # beyond the page's LFT entries
        env.send(2, 5, 1, 200, bad="ebp")       # bad tails: forwarded in cut-through as EBP
        env.send(3, 6, 2, 200, bad="vcrc")
        if not _phase:                          # ... from every input, to every output
            for p in range(n):
                to = (p + 1) % n
                dlid = next(d for d in range(1, 33) if routes[d] == to)
                env.send(p, dlid, p, 64, bad="ebp" if p % 2 else "vcrc")
        # subnet management packets (VL15): LID-routed through the switch, for the switch
        # itself (permissive LID, SWITCH_LID: to the management processor), and ones the LFT
        # cannot route
        for p in range(n):                      # from every input, of every size class
            env.send(p, rng.randrange(1, 33), 0, rng.choice([0, 40, 64, 100, 150, 256]), vl=15)
        env.send(1, 0xFFFF, 0, 256, vl=15)
        env.send(2, switch_lid, 0, 16, vl=15)
        drop(0, 40, vl=15)                      # LFT 255
        if last:
            drop(1, last | 0xFFFF, vl=15)       # the permissive DLID out of page 0: for nobody
            drop(3, 50, vl=15)                  # the switch's DLID in page 0: not its LID
        drop(3, 0, vl=15)                       # DLID 0
        drop(2, 0xC000, vl=15)                  # multicast DLID: SMPs are LID-routed
        await tb.cycles(450)                    # the phase flows before the next one is queued
    await tb.drain()
    await tb.read_counters()
    await tb.finish()
    copies = env.check()
    assert copies == sum(len(s[2]) for s in env.sent) and copies > 25
    assert any(len(s[2]) > 1 for s in env.sent), "no multicast packet was sent"
    assert sum(1 for s in env.sent if 15 in s[2].values()) >= 6, "VL15 packets were not forwarded"
    assert sum(env.vl15_for_switch) == 4
    got = sorted(env.sb.lid(LRH.unpack(b)) for b, _p, _bad in env.mgmt_rx)
    assert got == sorted([switch_lid] * 2 + [0xFFFF] * 2), \
        "the SMPs for the switch did not all reach the management processor"
    env.check_counters(relay)


@cocotb.test()
async def malformed_every_port(dut):
    """Every receive error class of the link layer (verif.ib.stimulus.MALFORMED_KINDS: bad
    VCRC, PktLen short and long, LVer, below the minimum, above the MTU, truncated, bad
    LPCRC, EBP, stray flits, a broken link packet, a runaway packet, runts) arrives on every
    port, each followed by a good packet, and a packet on a VL the switch does not have: the
    good ones are delivered; the bad ones are
    dropped, or cut once forwarding began (their DLIDs route nowhere, so what reached the
    relay is dropped there); every counter, read over AXI, is the model's (lock-step)."""
    from contracts.defs import RxError
    from models.packet import to_flits
    from verif.ib.stimulus import MALFORMED_KINDS, Item, good_packet, make_item
    tb = await SwitchTB(dut).start()
    env, cfg = tb.env, tb.cfg
    n, rng = cfg.ports, env.rng
    routes = {d: d % n for d in range(1, 17)}
    env.program(routes, {sl: sl % cfg.data_vls for sl in range(16)})
    await tb.programmed()
    def unrouted(kind):
        item = make_item(kind, cfg, rng)
        while not item.link and len(item.data) >= 8 and LRH.unpack(item.data).dlid in routes:
            item = make_item(kind, cfg, rng)
        return item

    for p in range(n):
        for kind in MALFORMED_KINDS:
            env.send_malformed(p, unrouted(kind))
            if kind == "truncated":             # only a sop ends it (a link packet's here), and the packet
                env.send_malformed(p, unrouted("link_format"))              # of that sop is lost
                env.send_malformed(p, unrouted("truncated"))                # ... a one-flit data packet's
                env.send_malformed(p, unrouted("runt_pktlen"))
            env.send(p, rng.choice(list(routes)), rng.randrange(16), rng.choice([16, 64, 200]))
        # and a well-formed packet on a VL this switch does not have (refused by LinkRx)
        body = good_packet(cfg, rng, lnh=2, payload_len=64, vl=rng.randrange(cfg.data_vls, 15))
        while LRH.unpack(body).dlid in routes:
            body = good_packet(cfg, rng, lnh=2, payload_len=64, vl=rng.randrange(cfg.data_vls, 15))
        env.send_malformed(p, Item("vl_invalid", to_flits(body, cfg.data_width), RxError.NONE, False, body))
        env.send(p, rng.choice(list(routes)), rng.randrange(16), 16)
    await tb.drain()
    await tb.read_counters()
    await tb.finish()
    copies = env.check()
    errors = [env.counter(p, "PortRcvErrors") for p in range(n)]
    assert len(set(errors)) == 1 and errors[0] >= len(MALFORMED_KINDS) - 2, errors   # the same on every port
    dut._log.info(f"{len(MALFORMED_KINDS)} malformed kinds on each of {n} ports: {copies} good packets "
                  f"delivered; PortRcvErrors {errors}")


@cocotb.test(skip="SWITCH_CONFIG" in os.environ and tb_config().lifetimes)   # there heads expire instead
async def credit_exhausted_every_port(dut):
    """Lossless by construction (IBA §7.9): every peer stops giving credit after its first
    grant while every input sends to every output on every VL. The switch sends nothing on
    any VL beyond the credit granted (each peer checks every packet it gets), holds the rest
    without dropping any, and once the peers give credit again delivers every packet, in
    order per flow."""
    tb = await SwitchTB(dut).start()
    env, cfg = tb.env, tb.cfg
    n, nvl, rng = cfg.ports, cfg.data_vls, env.rng
    env.program({d: d % n for d in range(1, 17)}, {sl: sl % nvl for sl in range(16)})
    await tb.programmed()
    for pp in env.peers:
        pp.credit_frozen = True
    order = [(i, o, v) for i in range(n) for o in range(n) for v in range(nvl) for _ in range(3)]
    rng.shuffle(order)
    for i, o, v in order:
        env.send(i, o + n * rng.randrange(o == 0, 16 // n), v, rng.choice([64, 104, 200]))
    await tb.cycles(1500)
    for o in range(n):                                   # the premise: credit ran out everywhere
        for v in range(nvl):
            sent = sum(1 for _i, b, outs in env.sb.sent if o in outs and outs[o] == v)
            got = sum(1 for b in env.got[o] if LRH.unpack(b).vl == v)
            assert got < sent, f"output {o} VL {v}: all {sent} packets left: its credit never ran out"
    for pp in env.peers:
        pp.credit_frozen = False
    await tb.drain()
    await tb.read_counters()
    await tb.finish()
    copies = env.check()
    env.check_counters({})
    dut._log.info(f"credit exhausted on every port and VL; {copies} packets delivered once it came back")


@cocotb.test()
async def multicast_port_down(dut):
    """A port goes down while multicast copies for it wait: they are read out into the void
    and counted; later unicast packets to it are dropped at the route (DEST_DOWN). Then it
    comes back up and forwards again."""
    tb = await SwitchTB(dut).start()
    env = tb.env
    env.program({5: 1, 6: 3}, {0: 0})
    env.program_mft(0, 0b1110)                           # ports 1, 2, 3
    await tb.programmed()
    env.tx_hold.add(2)                                   # port 2's PHY stalls: copies queue behind it
    env.active.discard(3)                                # the copies for port 3 will not go
    env.send(0, 0xC000, 0, 200)
    env.send(0, 0xC000, 0, 64)
    env.send(0, 5, 0, 16)                                # unicast from the same input still flows
    await tb.cycles(250)
    env.write("PORT_STATE", 3, int(PortState.DOWN))
    await tb.cycles(150)
    env.tx_hold.clear()
    env.send(1, 6, 0, 16)                                # to port 3, now down: dropped
    await tb.drain()
    # the port comes back (Down -> Init by itself, the link being up; Armed and Active asked
    # for): its credit state restarts from zero, and it forwards again
    for st in (PortState.ARMED, PortState.ACTIVE):
        env.write("PORT_STATE", 3, int(st))
    await tb.programmed()
    await tb.cycles(100)
    env.active.add(3)
    for _ in range(6):
        env.send(1, 6, 0, 64)
        env.send(0, 6, 0, 16)
    await tb.drain()
    await tb.read_counters()
    await tb.finish()
    assert env.check() == 17                             # 2 copies to ports 1 and 2, 1 unicast, 12 to 3
    env.check_counters({0: 2, 1: 1})


@cocotb.test()
async def vlarb_weights_and_table_changes(dut):
    """Two inputs saturate output 0 on VL 0 and VL 1: the bytes each VL gets follow the
    low-priority VLArb weights, and follow them again after the weights are swapped at run
    time. Meanwhile an LFT entry is moved to another port between packets. Then all four
    inputs saturate it with VL1 in the high-priority table under a limit; then every input
    saturates every output, each with tables of several entries (an absent VL among them)."""
    tb = await SwitchTB(dut).start()
    env = tb.env
    env.program({1: 0, 2: 2, 3: 3}, {0: 0, 1: 1})
    env.program_vlarb_low(0, [(0, 4), (1, 12)])           # VL0 : VL1 = 1 : 3
    await tb.programmed()

    def share(t0, t1):
        b = {0: 0, 1: 0}
        for c, p, vl, n in env.log:
            if p == 0 and t0 <= c < t1:
                b[vl] += n
        return b[0] / max(1, b[0] + b[1])

    async def saturate(cycles):
        for _ in range(cycles):
            for inp, sl in ((1, 0), (2, 1)):             # keep both source queues full
                while len(env.pending[inp]) < 4:
                    env.send(inp, 1, sl, 200)
            await tb.cycles(1)

    async def saturate_all(cycles, p_high=0.75):         # mostly VL1 (high), some VL0 (low)
        for _ in range(cycles):
            for inp in range(env.n):
                while len(env.pending[inp]) < 4:
                    env.send(inp, 1, int(env.rng.random() < p_high), 200)
            await tb.cycles(1)

    # (shares over 800 cycles: ~27 packets of 200 bytes, a VLArb round is 4 of them, so a
    # window cut mid-round is off by at most one packet, 0.04)
    env.send(3, 2, 0, 16)                                # before the change: to port 2
    await saturate(150)
    t = env.cycle
    await saturate(800)
    shares = [share(t, env.cycle)]
    env.program_vlarb_low(0, [(0, 12), (1, 4)])           # swap the weights at run time
    env.route(2, 3)                                      # and move DLID 2 to port 3
    await tb.programmed()
    env.send(3, 2, 0, 16)                                # after the change: to port 3
    await saturate(150)
    t = env.cycle
    await saturate(800)
    shares.append(share(t, env.cycle))
    # then VL1 in the high-priority table with a LimitOfHighPriority of 4 KB, all four inputs
    # on output 0 (its own input too) on both VLs: VL1 is served first whenever it is ready
    # (IBA §7.6.9), so VL0 falls well below the 0.75 its low weight gave it (how far depends on
    # how often VL1 is ready: 1 KB of credit per VL and input), and is not starved
    # (an entry for a VL this switch does not have, VL 3, and one with weight 0, are skipped)
    env.program_vlarb(0, [(1, 16), (3, 40), (0, 0)], "VLARB_HIGH", limit=1)
    await tb.programmed()
    await saturate_all(150, p_high=1.0)                 # VL1 only: all four inputs contend on it
    t = env.cycle
    await saturate_all(400)
    shares.append(share(t, env.cycle))
    got2, got3 = list(env.got[2]), list(env.got[3])
    # every output: full tables (every entry of both), each table with an entry for a VL this
    # switch does not have, and the high one under a limit; every input saturates every
    # output: each output's arbiter walks every entry, skips the absent VL, and keeps an entry
    # while it has weight left
    env.route(4, 1)
    env.route(5, 2)
    e = tb.cfg.vlarb_entries
    low = [(0, 2), (1, 3), (3, 5), (0, 1), (1, 1), (0, 3), (1, 2), (1, 1)]
    high = [(1, 2), (0, 1), (1, 1), (3, 1), (0, 2), (1, 1), (0, 1), (1, 2)]

    async def saturate_every_output(cycles):
        for _ in range(cycles):
            for inp in range(env.n):
                while len(env.pending[inp]) < 4:
                    env.send(inp, env.rng.choice([1, 4, 5, 3]), env.rng.randrange(2), env.rng.choice([16, 104, 200]))
            await tb.cycles(1)

    for o in range(env.n):
        env.program_vlarb_low(o, [low[k % len(low)] for k in range(e)])
        env.program_vlarb(o, [high[k % len(high)] for k in range(e)], "VLARB_HIGH", limit=2)
    await tb.programmed()
    await saturate_every_output(200)
    # then weight-0 entries between weighted ones, and entry 2 of one output's tables at a
    # time rewritten every 16 cycles between weight 0 and 12: an entry whose weight is set to
    # 0 while it is being served keeps the output until its remaining weight is spent (a
    # weight-0 entry is otherwise never served)
    low = [(1, 0), (1, 0), (0, 12), (1, 2)]
    high = [(0, 0), (0, 0), (1, 12), (0, 1)]
    for o in range(env.n):
        env.program_vlarb_low(o, [low[k % len(low)] for k in range(e)])
        env.program_vlarb(o, [high[k % len(high)] for k in range(e)], "VLARB_HIGH", limit=1)
    await tb.programmed()
    for t in range(12):
        o = t % env.n
        for name, (vl, w) in (("VLARB_LOW", low[2]), ("VLARB_HIGH", high[2])):
            env.write(name, o * e + 2, env.rm[name].pack(vl=vl, weight=w if t // env.n % 2 else 0))
        await saturate_every_output(16)
    # an unmapped address at every address bit, on both channels: refused, nothing changes
    # (with every AxPROT value: the switch's registers have no protection levels, it is ignored)
    for bit in range(2, AXIL_ADDR_BITS):
        if env.rm.decode(1 << bit) is None:
            prot = AxiProt(bit % 8)
            assert (await tb.axi.read(1 << bit, 4, prot=prot)).resp == AxiResp.SLVERR
            assert (await tb.axi.write(1 << bit, b"\xff" * 4, prot=AxiProt(7 - bit % 8))).resp == AxiResp.SLVERR
    await tb.drain()
    await tb.finish()
    env.check()
    dut._log.info(f"VL0 share of output 0: {shares[0]:.3f} with weights 4:12, {shares[1]:.3f} with 12:4, "
                  f"{shares[2]:.3f} with VL1 high (limit 4 KB)")
    assert abs(shares[0] - 0.25) < 0.05 and abs(shares[1] - 0.75) < 0.05, shares
    assert 0.02 < shares[2] < 0.5, shares
    assert [LRH.unpack(b).dlid for b in got2] == [2] and [LRH.unpack(b).dlid for b in got3] == [2]


@cocotb.test()
async def management_counters_saturate(dut):
    """The management port's 32-bit counters (every port) at their corners: preset by a
    backdoor write in the RTL and the model alike (2^31 and 2^32 events are out of a
    simulation's reach) to 2^31 - 1, 2^32 - 16 and 2^32 - 2 in turn, then two of each event
    from every port: the processor's packets sent out of it (MgmtXmitPkts) and discarded for
    it (a VL the switch lacks: MgmtXmitDiscards), SMPs for the switch from it (VL15ForSwitch,
    MgmtRcvPkts) and a data packet for the switch (LFT entry 0: MgmtRcvPkts), SMPs it cannot
    relay (PortRcvSwitchRelayErrors); read over AXI: the carry
    into bit 31, exact counts just below the top, and a stop at 2^32 - 1."""
    from verif.ib.stimulus import good_packet
    tb = await SwitchTB(dut).start()
    env, n, nvl = tb.env, tb.cfg.ports, tb.cfg.data_vls
    env.program({d: d % n for d in range(1, 9)}, {sl: sl % nvl for sl in range(16)})
    env.program_switch_lid(0x40)
    env.route_entry(0x30, 255)                           # no route: an SMP to it is a relay error
    env.route_entry(0x20, 0)                             # LFT 0: data packets for the switch
    await tb.programmed()
    sat = 0xFFFFFFFF
    names = ["MgmtXmitPkts", "MgmtXmitDiscards", "VL15ForSwitch", "MgmtRcvPkts", "PortRcvSwitchRelayErrors",
             "VL15Dropped"]
    events = {"MgmtXmitPkts": 2, "MgmtXmitDiscards": 2, "VL15ForSwitch": 2, "MgmtRcvPkts": 3,
              "PortRcvSwitchRelayErrors": 2, "VL15Dropped": 0}
    for preset in (0x7FFFFFFF, 0xFFFFFFF0, 0xFFFFFFFE):
        await tb.cycles(1)
        await tb.preset_mgmt_port_counters(preset)
        for p in range(n):
            for _ in range(2):
                for vl in (0, nvl):                      # sent; a VL the switch lacks: discarded
                    pkt = bytearray(good_packet(tb.cfg, env.rng, lnh=2, payload_len=16, vl=vl))
                    env.mgmt_send(bytes(pkt), tdest=p + 1)
                env.send(p, 0x40, 0, 24, vl=15)          # for the switch
                env.send(p, 0x30, 0, 24, vl=15)          # LFT 255: not relayed
        await tb.until(lambda: not env.mgmt_packets and tb.src.idle() and not env.peers_busy
                       and env.idle_for() > 200, 20000, "the management traffic")
        for p in range(n):                               # a data packet for the switch from each
            env.send(p, 0x20, 0, 24)                     # port, one at a time (a data packet that
            await tb.until(lambda: not env.peers_busy, 2000, "the data packet")   # finds the queue's
            await tb.cycles(60)                          # write port busy is not copied)
        await tb.read_counters(names)
        for p in range(n):
            for c in names:
                want = min(preset + events[c], sat)
                assert env.counter(p, c) == want, (f"port {p} {c}: {env.counter(p, c):#x}, expected {want:#x} "
                                                   f"(preset {preset:#x})")
    await tb.finish()


@cocotb.test()
async def reset_mid_run(dut):
    """A reset in the middle of the run: after traffic on every port and VL (multicast, VL15,
    drops, bad tails) has moved every register off its reset value, rst for 3 cycles; the
    switch must then behave exactly as one out of power-up, a fresh model in lock-step from
    the first cycle (counters zero, ports Init, credit restarting with fresh link peers).
    The tables are memories, which a reset does not clear: they are written again with the
    same entries, as an SM does after a reset, before any packet; then the traffic again."""
    tb = await SwitchTB(dut, idle="random", backpressure="random").start()
    n, nvl = tb.cfg.ports, tb.cfg.data_vls

    def program_and_send(env):
        env.program({d: (3 * d) % n for d in range(1, 17)}, {sl: sl % nvl for sl in range(16)})
        env.program_mft(0, (1 << n) - 1)
        env.program_vlarb_low(0, [(0, 4), (1, 12)])
        relay = {}

        def send():
            for _ in range(8 * n):
                p, dlid = env.rng.randrange(n), env.rng.choice([0xC000, 40, *range(1, 17)])
                vl15 = env.rng.random() < 0.1
                env.send(p, dlid, env.rng.randrange(16), env.rng.choice([0, 16, 64, 200]), vl=15 if vl15 else None)
                if dlid == 40 or (vl15 and dlid == 0xC000):      # not routed (LFT 255); SMPs are LID-routed
                    relay[p] = relay.get(p, 0) + 1
        return send, relay

    send, relay = program_and_send(tb.env)
    await tb.programmed()
    send()
    await tb.drain()
    await tb.read_counters()
    before = await tb.restart()
    before.check()
    before.check_counters(relay)
    send, relay = program_and_send(tb.env)
    await tb.programmed()
    send()
    await tb.drain()
    await tb.read_counters()
    await tb.finish()
    copies = tb.env.check()
    tb.env.check_counters(relay)
    dut._log.info(f"reset mid-run: {copies} copies delivered after it, counters from zero")


@cocotb.test()
async def uncontended_latency(dut):
    """One packet through an idle switch: cycles from its sop on rx to its sop on tx."""
    tb = await SwitchTB(dut).start()
    env = tb.env
    env.program({5: 2}, {0: 0})
    await tb.programmed()
    await tb.cycles(100)                                 # an idle switch
    env.send(1, 5, 0, 16)
    await tb.drain()
    await tb.finish()
    assert env.check() == 1
    lat = env.latency[0][2]
    dut._log.info(f"uncontended latency rx sop -> tx sop: {lat} cycles")
    cfg = tb_config()
    want, budget = core_latency_cycles(cfg), latency_budget_cycles()
    assert lat == want, f"uncontended latency {lat} cycles, the pipeline's stages make {want} (contracts/config.py)"
    assert want <= budget, (f"the pipeline ({want} cycles) exceeds the budget: {budget} cycles = {LATENCY_BUDGET_NS} "
                            f"ns at {TARGET_CLOCK_MHZ} MHz (docs/latency.md)")


@cocotb.skipif("SWITCH_CONFIG" not in os.environ or not tb_config().failover, reason="no failover in this config")
@cocotb.test()
async def failover(dut):
    """Failover in the switch (docs/reliability.md), the scenario of scenarios.failover: the
    cable of output 2 is cut while a packet leaves on it and more are queued; the rest leave
    on its alternate 3 within 64 cycles; only the packet on the wire is lost."""
    from scenarios import failover as fo
    tb = await SwitchTB(dut).start()
    env = tb.env
    fo.program(env)
    await tb.programmed()
    await tb.cycles(100)
    first = fo.FirstOnAlternate(env)
    since = env.cycle

    def watch(_i, o):
        if first.cut_at is None and fo.cut_now(env, since):
            env.peers[fo.FAILED].up = False
            first.cut_at = env.cycle
        first.observe(o)
    tb.watchers.append(watch)
    fo.send(env, env.rng)
    await tb.until(lambda: not env.peers_busy and env.outstanding() <= 1 and env.idle_for() > 200, 20000,
                   "traffic after the cut")
    await tb.read_counters(["PortXmitDiscards"])
    await tb.finish()
    assert first.cut_at is not None, "the cable was never cut"
    got = fo.check(env, env.counter(fo.FAILED, "PortXmitDiscards"))
    dut._log.info(f"cable cut at cycle {first.cut_at}; first packet on the alternate {first.cycles} cycles "
                  f"later; {got['on_alternate']} packets took the alternate, {got['lost']} lost on the wire")
    assert first.cycles is not None and first.cycles <= 64, first.cycles


async def _run_schedule(tb, schedule, send, at: int) -> dict:
    """The phases of a scenario's schedule [(cycle, phase)]: send(phase) at each cycle (counted
    so that `at` is now); phase -> what its calls returned, in order."""
    phases: dict = {}
    for when, phase in schedule:
        await tb.cycles(when - at)
        at = when
        phases.setdefault(phase, []).extend(send(phase))
    return phases


@cocotb.skipif("SWITCH_CONFIG" not in os.environ or not tb_config().lifetimes, reason="no lifetimes in this config")
@cocotb.test()
async def hoq_lifetime(dut):
    """HOQLife (docs/reliability.md), the scenario of scenarios.lifetimes: output 2's peer
    stops giving credit; the packets for it that cannot leave are discarded at the head of
    their queues and counted in PortXmitDiscards; everything else is delivered."""
    from scenarios import lifetimes as lt
    tb = await SwitchTB(dut).start()
    env = tb.env
    lt.program(env)
    await tb.programmed()
    await tb.cycles(100)
    lt.send(env, env.rng)
    await tb.until(lambda: not env.peers_busy and env.idle_for() > 600, 20000, "traffic")
    await tb.read_counters(["PortXmitDiscards"])
    await tb.finish()
    got = lt.check(env, env.counter(lt.STUCK, "PortXmitDiscards"))
    dut._log.info(f"HOQLife {lt.HOQ_LIFE} on output {lt.STUCK}: {got}")


@cocotb.skipif("SWITCH_CONFIG" not in os.environ or not tb_config().lifetimes, reason="no lifetimes in this config")
@cocotb.test()
async def switch_lifetime(dut):
    """SwitchLifetime (docs/reliability.md), the scenario of scenarios.lifetimes.send_life:
    output 2's peer gives no credit; its packets are discarded once they have been in the
    switch longer than 2^SWITCH_LIFE units (HOQLife infinite), counted in PortXmitDiscards
    and LIFE_DISCARDS; once the peer gives credit again, everything is delivered."""
    from scenarios import lifetimes as lt
    tb = await SwitchTB(dut).start()
    env = tb.env
    lt.program_life(env)
    await tb.programmed()
    await tb.cycles(100)
    phases = await _run_schedule(tb, lt.LIFE_SCHEDULE, lambda ph: lt.send_life(env, env.rng, ph),
                                 at=lt.LIFE_SCHEDULE[0][0])
    await tb.until(lambda: not env.peers_busy and env.idle_for() > 600, 20000, "traffic")
    await tb.read_counters(["PortXmitDiscards"])
    for k in (2 * lt.STUCK, 2 * lt.STUCK + 1):
        env.reads[env.rm["LIFE_DISCARDS"].addr(k)] = await tb.regs.read("LIFE_DISCARDS", k)
    await tb.finish()
    got = lt.check_life(env, [phases[0], phases[2]])
    dut._log.info(f"SwitchLifetime {lt.SWITCH_LIFE}, output {lt.STUCK}'s peer without credit: {got}")


@cocotb.skipif("SWITCH_CONFIG" not in os.environ or not tb_config().lifetimes, reason="no lifetimes in this config")
@cocotb.test()
async def vl_stalled(dut):
    """VLStalled (docs/reliability.md), the scenario of scenarios.lifetimes.send_stall:
    VLStallCount HOQLife discards in a row stall VL 0 of output 2; while it is stalled its
    packets are discarded though the peer gives credit again, and VL 1's are delivered;
    after the stall VL 0 delivers again."""
    from scenarios import lifetimes as lt
    tb = await SwitchTB(dut).start()
    env = tb.env
    lt.program_stall(env)
    await tb.programmed()
    await tb.cycles(100)
    phases = await _run_schedule(tb, lt.STALL_SCHEDULE, lambda ph: lt.send_stall(env, env.rng, ph),
                                 at=lt.STALL_SCHEDULE[0][0])
    await tb.until(lambda: not env.peers_busy and env.idle_for() > 600, 20000, "traffic")
    await tb.read_counters(["PortXmitDiscards"])
    await tb.finish()
    got = lt.check_stall(env, [phases[0], phases[1], phases[2]], env.counter(lt.STUCK, "PortXmitDiscards"))
    dut._log.info(f"VLStallCount {lt.STALL_COUNT}, HOQLife {lt.HOQ_LIFE} on output {lt.STUCK}: {got}")


@cocotb.skipif("SWITCH_CONFIG" not in os.environ or not tb_config().lifetimes, reason="no lifetimes in this config")
@cocotb.test()
async def every_queue_expires(dut):
    """HOQLife and VLStalled on every queue at once (scenarios.lifetimes.send_all): every peer
    stops giving credit while every input sends to every output on every VL; heads expire
    and VLs stall on every output (a different VLStallCount on each); then the peers give
    credit again, every stall ends and every queue delivers."""
    from scenarios import lifetimes as lt
    tb = await SwitchTB(dut).start()
    env = tb.env
    lt.program_all(env)
    await tb.programmed()
    await tb.cycles(100)
    phases = await _run_schedule(tb, lt.ALL_SCHEDULE, lambda ph: lt.send_all(env, env.rng, ph), at=100)
    await tb.until(lambda: not env.peers_busy and env.idle_for() > 600, 30000, "traffic")
    await tb.read_counters(["PortXmitDiscards"])
    await tb.finish()
    got = lt.check_all(env, [phases[0], phases[2]], {p: env.counter(p, "PortXmitDiscards") for p in range(env.n)})
    dut._log.info(f"every queue expires (VLStallCounts {lt.ALL_STALL_COUNTS}): {got}")


async def _adaptive(dut, pinned: bool) -> dict:
    """scenarios.adaptive on the DUT: program the group (flow-pinned or not), send the
    burst, wait for it to drain, check the promises."""
    from scenarios import adaptive as ar
    tb = await SwitchTB(dut).start()
    env = tb.env
    ar.program(env, pinned=pinned)
    await tb.programmed()
    await tb.cycles(100)
    dep = ar.Departures(env)
    tb.watchers.append(lambda _i, o: dep.observe(o))
    ar.send(env, env.rng)
    await tb.until(lambda: not env.peers_busy and env.idle_for() > 300, 20000, "the burst")
    await tb.finish()
    return ar.check(env, dep, pinned=pinned)


@cocotb.skipif("SWITCH_CONFIG" not in os.environ or not tb_config().adaptive, reason="no adaptive routing")
@cocotb.test()
async def adaptive_routing(dut):
    """Adaptive routing (docs/reliability.md), the scenario of scenarios.adaptive: outputs 1
    and 2 form an AR group; a burst routed to output 1 leaves on both, faster than output 1
    alone could send it; nothing lost or duplicated; each queue leaves in order."""
    got = await _adaptive(dut, pinned=False)
    dut._log.info(f"adaptive routing, AR group (1, 2): {got}")


@cocotb.skipif("SWITCH_CONFIG" not in os.environ or not tb_config().adaptive, reason="no adaptive routing")
@cocotb.test()
async def adaptive_flow_pinned(dut):
    """Flow-pinned adaptive routing (docs/reliability.md), scenarios.adaptive with the group
    flow-pinned: the burst's flows (SLID, DLID) are spread over both ports of the group,
    each flow on one port and in order; nothing lost or duplicated."""
    got = await _adaptive(dut, pinned=True)
    dut._log.info(f"flow-pinned adaptive routing, AR group (1, 2): {got}")


@cocotb.skipif("SWITCH_CONFIG" not in os.environ or not tb_config().cc, reason="no congestion marking")
@cocotb.test()
async def congestion_marking(dut):
    """Congestion marking (IBA Annex A10, docs/reliability.md), the scenario of
    scenarios.congestion: a 3:1 burst fills output 0's queue and it marks every second
    eligible packet with FECN (VCRC regenerated, ICRC intact); a quiet output and one with
    marking off mark nothing; CC_MARKED counts the marks."""
    from scenarios import congestion as cc
    tb = await SwitchTB(dut).start()
    env = tb.env
    cc.program(env)
    await tb.programmed()
    await tb.cycles(100)
    sent = cc.send(env, env.rng)
    await tb.until(lambda: not env.peers_busy and env.idle_for() > 300, 20000, "the burst")
    marks = {p: await tb.regs.read("CC_MARKED", p) for p in range(tb.cfg.ports)}
    await tb.finish()
    got = cc.check(env, sent, marks)
    dut._log.info(f"congestion marking (threshold {cc.THRESHOLD}, marking_rate {cc.MARKING_RATE}): {got}")


def _top(cfg):
    from hw.top.switch import IBSwitch
    return IBSwitch(cfg)


# 4 ports/64 bits/2 VLs on both simulators; 8 ports/128 bits/4 VLs on Verilator only (on
# Icarus it took 12 minutes of the regression's time for the same tests at a larger size)
# (w128 leaves out the VLArb weights test: 4 minutes of the regression, and the VLArb
# logic is the same block as on `small`, where it runs on both simulators)
# (w128: `make sim-long`, outside the regression's 15 minutes; its blocks' lock-step tests
# run at W=128 in `make sim`)
@pytest.mark.parametrize("sim, cfg_name", [(s, "small") for s in SIMS]
                         + [pytest.param("verilator", "w128", marks=pytest.mark.long)])
def test_switch(sim, cfg_name):
    cases = None if cfg_name == "small" else ["mixed_traffic", "multicast_port_down",
                                              "uncontended_latency"]
    run_cocotb(top=_top, name="ib_switch", test_module="tb.test_switch", sim=sim, cfg=CONFIGS[cfg_name],
               testcase=cases, verilator_args=VERILATOR_ARGS)


# the extended-LID mode (docs/fabric.md): mixed traffic with LIDs in two pages and the
# malformed pages, on both simulators (Icarus in `make sim-long`: make sim's time; the same
# test runs on both at `small`, and the route lookup's pages on Verilator here)
@pytest.mark.parametrize("sim", [s if s == "verilator" else pytest.param(s, marks=pytest.mark.long) for s in SIMS])
def test_switch_ext(sim):
    run_cocotb(top=_top, name="ib_switch", test_module="tb.test_switch", sim=sim, cfg=CONFIGS["small-ext"],
               testcase="mixed_traffic", verilator_args=VERILATOR_ARGS)


# the link inputs registered at the boundary (SwitchConfig.rx_register, the fabric's
# switches: docs/fabric.md): the model sees them a cycle late too; with failover and
# HOQLife, VLStalled, adaptive routing and congestion marking (docs/reliability.md); both simulators
@pytest.mark.parametrize("sim", SIMS)
def test_switch_rxreg(sim):
    run_cocotb(top=_top, name="ib_switch", test_module="tb.test_switch", sim=sim, cfg=CONFIGS["small-rxreg"],
               testcase=["mixed_traffic", "uncontended_latency", "failover", "hoq_lifetime", "vl_stalled",
                         "every_queue_expires", "switch_lifetime", "adaptive_routing", "adaptive_flow_pinned",
                         "congestion_marking"], verilator_args=VERILATOR_ARGS)
