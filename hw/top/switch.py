"""`ib_switch`: the N-port switch datapath (docs/switch-core.md; port names: docs/interfaces.md).

Per port: LinkRx (parser, credits, VL15; data packets leave on `acc`), route lookup, VOQ
input buffer; per output: VL arbitration, egress rewrite, LinkTx; one iSLIP allocator; the
management block on AXI4-Lite.

Port numbers: tables hold IBA port numbers (LFT entry 0 / MFT bit 0 the management port,
1..N the physical ports); Verilog port p is IBA port p + 1 (docs/interfaces.md).

The management port (IBA port 0; hw/switch/mgmt_port.py, docs/management.md): the VL15
relay (SMPs LID-routed through the switch, or into the management receive queue when for
the switch: permissive DLID, SWITCH_LID, LFT entry 0), the copies of data packets for the
switch (LFT entry 0, MFT bit 0: each input's accepted stream is tapped, the VOQ drops them),
the processor's send path (directed by tdest or by the LFT) and the per-output switch
between egress and the processor in front of each LinkTx's data sources. It has LFT lookup
port N.

Multicast (docs/switch-core.md): a packet for an MLID waits in its input's multicast queue
with the MFT port mask (minus the input and inactive ports). Its copies go out one after
another, lowest port first: the copy for port o asks output o on VL SL2VL(in, o, SL) (one
more SL2VL read port per input) like a unicast packet, and is preferred over the unicast
queue of the same (o, VL) at that input. A copy whose port went down or whose SL2VL entry is
not a data VL is read out into the void (a discard read) and counted as a relay error.

Bad packets: one whose tail (checked bad, or EBP) arrived before its read starts is read
into the void while holding its output (dropped; the receiver counted it in
PortRcvErrors, or PortRcvRemotePhysicalErrors when it came marked EBP); one still arriving is
forwarded and its tail leaves marked bad (EBP).

Ports: clk, rst; rx__<p>__*, tx__<p>__* (link side); s_axil_* (registers); m_axis_mgmt_*,
s_axis_mgmt_* (the management processor's packets).
"""
from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.common.config import SwitchConfig
from hw.common.defs import RX_ERROR_COUNTERS, PortState, RouteDrop
from hw.common.layouts import LRHLayout, header_at
from hw.common.logic import or_all
from hw.common.stream import link_rx_signature, link_tx_signature
from hw.link.link_rx import LinkRx
from hw.link.link_tx import LinkTx
from hw.link.port_state import PortStateMachine
from hw.mgmt.mgmt import N_COUNTERS, SwitchMgmt, axil_members
from hw.mgmt.regmap import PORT_COUNTERS_LIST
from hw.switch.allocator import ISlipAllocator, first_set
from hw.switch.egress import Egress
from hw.switch.mgmt_port import MgmtPort, mgmt_port_members
from hw.switch.route import RouteLookup
from hw.switch.vlarb import VLArbiter
from hw.switch.voq import VOQBuffer

__all__ = ["IBSwitch"]


def sat_sum(a, b):
    """a + b of two 32-bit counters, saturating."""
    t = a + b
    return Mux(t > 0xFFFFFFFF, 0xFFFFFFFF, t)[:32]


class IBSwitch(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        n = cfg.ports
        super().__init__({
            "rx": In(link_rx_signature(cfg)).array(n),
            "tx": Out(link_tx_signature(cfg)).array(n),
            **axil_members(),
            **mgmt_port_members(cfg),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        n, nvl = cfg.ports, cfg.data_vls
        flit = ("data", "sop", "eop", "bytes", "bad")

        # LFT lookups: one per input and one for the VL15 relay
        m.submodules.mgmt = mg = SwitchMgmt(cfg, lookups=n + 1, sl2vl_lookups=2 * n)
        for name, member in axil_members().items():
            ours, theirs = getattr(self, name), getattr(mg, name)
            if member.flow == wiring.Flow.Out:
                m.d.comb += ours.eq(theirs)
            else:
                m.d.comb += theirs.eq(ours)

        lrx, ltx, psm, rt, voq, va, eg = [], [], [], [], [], [], []
        for p in range(n):
            for lst, mod, nm in ((lrx, LinkRx(cfg, buffered=False), "lrx"),
                                 (ltx, LinkTx(cfg), "ltx"),
                                 (psm, PortStateMachine(), "psm"), (rt, RouteLookup(cfg, p), "route"),
                                 (voq, VOQBuffer(cfg), "voq"), (va, VLArbiter(nvl, cfg.vlarb_entries, 8), "vlarb"),
                                 (eg, Egress(cfg), "egress")):
                m.submodules[f"{nm}{p}"] = mod
                lst.append(mod)
        m.submodules.alloc = al = ISlipAllocator(n, cfg.islip_iterations, cfg.islip_fair_every)

        active = Signal(n)
        m.d.comb += active.eq(Cat(psm[p].state == PortState.ACTIVE for p in range(n)))

        relay_err = [Signal(32, name=f"relay_err{p}") for p in range(n)]

        # ---- multicast copy candidates: per input, the lowest port still owed a copy of the
        # multicast head, its VL there (SL2VL), and whether it can go (port Active, data VL)
        mc_port = [Signal(range(n), name=f"mc_port{i}") for i in range(n)]
        mc_vl = [Signal(4, name=f"mc_vl{i}") for i in range(n)]
        mc_ok = [Signal(name=f"mc_ok{i}") for i in range(n)]
        mc_bad = [Signal(name=f"mc_bad{i}") for i in range(n)]
        discarding = [Signal(name=f"discarding{i}") for i in range(n)]
        disc_go = [Signal(name=f"disc_go{i}") for i in range(n)]
        hold = [Signal(name=f"hold{i}") for i in range(n)]            # input may not request now
        for i in range(n):
            q, lk = voq[i], mg.sl2vl_rd[n + i]
            m.d.comb += [
                mc_port[i].eq(first_set(q.mc_mask, n)),
                lk.index.eq(((i * n + mc_port[i]) << 1) | q.mc_sl[3]),
                mc_vl[i].eq(lk.word.word_select(q.mc_sl[:3], 4)),
                mc_ok[i].eq(q.mc_valid & active.bit_select(mc_port[i], 1) & (mc_vl[i] < nvl)),
                mc_bad[i].eq(q.mc_valid & ~mc_ok[i]),
                hold[i].eq(mc_bad[i] | discarding[i]),
            ]
        # ---- the management port (hw/switch/mgmt_port.py): VL15 relay, receive queue, the
        # processor's send path and the per-output switch between egress and processor
        m.submodules.mgmt_port = mp = MgmtPort(cfg)
        for name, member in mgmt_port_members(cfg).items():
            ours, theirs = getattr(self, name), getattr(mp, name)
            m.d.comb += ours.eq(theirs) if member.flow == wiring.Flow.Out else theirs.eq(ours)
        m.d.comb += [mp.switch_lid.eq(mg.switch_lid), mg.lft_rd[n].dlid.eq(mp.lft_dlid),
                     mp.lft_port.eq(mg.lft_rd[n].port), mg.mft_rd[n].mlid.eq(0),
                     mg.mgmt_tx_errors.eq(mp.tx_errors)]
        for p in range(n):
            wiring.connect(m, lrx[p].vl15, mp.v15[p])
            m.d.comb += mp.state[p].eq(psm[p].state)
            for v in range(nvl):
                m.d.comb += [mp.fccl[p][v].eq(ltx[p].fccl[v]), mp.fctbs[p][v].eq(ltx[p].fctbs[v])]
                wiring.connect(m, mp.src[p][v], ltx[p].src[v])
            wiring.connect(m, mp.src15[p], ltx[p].src15)

        for p in range(n):
            # ---- link layer and port state
            wiring.connect(m, wiring.flipped(self.rx[p]), lrx[p].rx)
            wiring.connect(m, wiring.flipped(self.tx[p]), ltx[p].tx)
            m.d.comb += [psm[p].up.eq(self.rx[p].up), psm[p].req.eq(mg.port_req[p].req),
                         psm[p].data_rx.eq(lrx[p].data_rx),
                         psm[p].want.eq(mg.port_req[p].state), mg.port_state[p].eq(psm[p].state),
                         lrx[p].state.eq(psm[p].state), ltx[p].state.eq(psm[p].state)]
            wiring.connect(m, lrx[p].fc_rx, ltx[p].fc_rx)
            for v in range(nvl):
                m.d.comb += ltx[p].local_fccl[v].eq(lrx[p].fccl[v])

            # ---- route lookup on the accepted stream, write into the VOQ buffer
            acc, r, q = lrx[p].acc, rt[p], voq[p]
            # LFT and MFT are read synchronously: addressed with the DLID of the flit entering
            # the parser, their entries arrive with the header one cycle later on `acc` (the
            # parser's output is registered; a sop on `acc` is always the rx sop of the cycle
            # before). RouteLookup's own table addresses (lft_dlid, mft_index) carry the same
            # DLID a cycle late and are not used. SL2VL is read in the same cycle.
            la_dlid = header_at(self.rx[p].data, cfg.data_width, LRHLayout).dlid
            m.d.comb += [r.hdr.as_value().eq(acc.hdr), r.port_active.eq(active),
                         mg.lft_rd[p].dlid.eq(la_dlid), r.lft_port.eq(mg.lft_rd[p].port),
                         mg.sl2vl_rd[p].index.eq(r.sl2vl_index), r.sl2vl_word.eq(mg.sl2vl_rd[p].word),
                         mg.mft_rd[p].mlid.eq(la_dlid - 0xC000), r.mft_mask.eq(mg.mft_rd[p].mask)]
            skip = Signal(name=f"skip{p}")
            drop_now = Signal(name=f"drop_now{p}")
            m.d.comb += drop_now.eq(acc.valid & acc.sop & (r.drop != RouteDrop.NONE))
            with m.If(acc.valid & acc.sop):
                m.d.sync += skip.eq(drop_now & ~acc.eop)
            with m.Elif(acc.valid & acc.eop):
                m.d.sync += skip.eq(0)
            write = acc.valid & ~drop_now & ~(skip & ~acc.sop)
            tap = mp.dat[p]
            m.d.comb += [tap.valid.eq(acc.valid), tap.blocks.eq(acc.blocks), tap.here.eq(r.mgmt)]
            m.d.comb += [getattr(tap, k).eq(getattr(acc, k)) for k in flit]
            m.d.comb += [q.w.valid.eq(write), q.w.dest.eq(r.dest), q.w.ovl.eq(r.ovl), q.w.blocks.eq(acc.blocks),
                         q.w.ivl.eq(acc.vl), q.w.mcast.eq(r.mcast), q.w.mask.eq(r.mask), q.w.sl.eq(r.hdr.sl)]
            m.d.comb += [getattr(q.w, k).eq(getattr(acc, k)) for k in flit]
            relay_inc = (drop_now & ~r.mgmt).as_unsigned() + disc_go[p]
            relay_nxt = relay_err[p] + relay_inc
            m.d.sync += relay_err[p].eq(Mux(relay_nxt > 0xFFFFFFFF, 0xFFFFFFFF, relay_nxt))
            # credits back: blocks the VOQ freed, and a packet dropped by the route lookup
            for v in range(nvl):
                m.d.comb += lrx[p].release[v].eq(
                    Mux(q.rel.valid & (q.rel.ivl == v), q.rel.blocks, 0)
                    + Mux(drop_now & (acc.vl == v), acc.blocks, 0))

        # ---- allocation: VLArb per output picks the VL, iSLIP matches inputs to outputs
        def fits(o, v, blocks):
            if isinstance(v, int):
                room = (ltx[o].fccl[v] - ltx[o].fctbs[v] - blocks)[:12]
            else:
                room = (Array(ltx[o].fccl)[v] - Array(ltx[o].fctbs)[v] - blocks)[:12]
            return room <= 2048                                  # IBA §7.9.4

        free_in = Signal(n)                      # inputs the allocator may match this cycle
        m.d.comb += free_in.eq(Cat(~al.in_busy[i] | al.done[i] for i in range(n)))
        m_vl = [Signal(4, name=f"m_vl{o}") for o in range(n)]
        m_mc = [Signal(name=f"m_mc{o}") for o in range(n)]                 # the match is a multicast copy
        use_mc = [[Signal(name=f"use_mc{i}_{o}") for o in range(n)] for i in range(n)]
        blocks_io = [[Signal(voq[0].nbits, name=f"blocks{i}_{o}") for o in range(n)] for i in range(n)]
        for o in range(n):
            a = va[o]
            m.d.comb += [a.ready15.eq(0), a.limit.eq(mg.limit_high[o])]
            for j in range(cfg.vlarb_entries):
                m.d.comb += [a.high[j].as_value().eq(mg.vlarb_high[o][j].as_value()),
                             a.low[j].as_value().eq(mg.vlarb_low[o][j].as_value())]
            # per (input, VL): its unicast head / its multicast copy could go now (whole packet fits)
            ok_uc = [Signal(nvl, name=f"ok_uc{i}_{o}") for i in range(n)]
            ok_mc = [Signal(nvl, name=f"ok_mc{i}_{o}") for i in range(n)]
            for i in range(n):
                for v in range(nvl):
                    m.d.comb += [
                        ok_uc[i][v].eq(voq[i].nonempty[o][v] & fits(o, v, voq[i].head_blocks[o][v])),
                        ok_mc[i][v].eq(mc_ok[i] & (mc_port[i] == o) & (mc_vl[i] == v) & fits(o, v, voq[i].mc_blocks)),
                    ]
            for v in range(nvl):
                # only inputs free to start now count: a VL whose packets all wait at busy
                # inputs must not win VLArb and leave the output idle
                any_i = Cat(~hold[i] & free_in[i] & (ok_uc[i][v] | ok_mc[i][v]) for i in range(n)).any()
                m.d.comb += a.ready[v].eq(any_i & active[o])
            sel = a.sel_vl[:max(1, (nvl - 1).bit_length())] if nvl > 1 else 0
            for i in range(n):
                hb = Array(voq[i].head_blocks[o])[sel] if nvl > 1 else voq[i].head_blocks[o][0]
                uc_now = ok_uc[i].bit_select(sel, 1) if nvl > 1 else ok_uc[i][0]
                mc_now = ok_mc[i].bit_select(sel, 1) if nvl > 1 else ok_mc[i][0]
                deep_now = voq[i].deep[o].bit_select(sel, 1) if nvl > 1 else voq[i].deep[o][0]
                m.d.comb += [
                    use_mc[i][o].eq(mc_now),
                    blocks_io[i][o].eq(Mux(use_mc[i][o], voq[i].mc_blocks, hb)),
                    al.req[i][o].eq(a.sel_valid & (uc_now | use_mc[i][o]) & active[o] & ~hold[i]),
                    al.deep[i][o].eq(uc_now & ~use_mc[i][o] & deep_now),
                ]
            # a match made now: the arbiter consumes the packet's blocks, the VL is latched
            new_i = al.new_in[o]
            m.d.comb += [a.sent.eq(al.new_valid[o]), a.blocks.eq(Array(blocks_io[i][o] for i in range(n))[new_i])]
            with m.If(al.new_valid[o]):
                m.d.sync += [m_vl[o].eq(a.sel_vl), m_mc[o].eq(Array(use_mc[i][o] for i in range(n))[new_i])]

        # ---- crossbar: a registered match starts the input's reader. Each flit on an input's
        # read register carries the output it is for (`r.port`); an output takes the one flit
        # tagged for it: an input starts issuing a packet only while no other input's flit for
        # the same output still waits there (first_ok), so at most one flit waits per output.
        starts = [Signal(n, name=f"start{i}") for i in range(n)]        # bit o: output o starts input i
        for i in range(n):
            start = starts[i]
            m.d.comb += start.eq(Cat(al.match_valid[o] & (al.match_in[o] == i) for o in range(n)))
            port = Signal(range(n), name=f"start_port{i}")
            for o in range(n):
                with m.If(start[o]):
                    m.d.comb += port.eq(o)
            # a discard read of a multicast copy that cannot go, when the input is idle: decided
            # now, started at the next edge (the decision depends on the SL2VL lookup of the
            # copy's port; the reader's start must not). Meanwhile the input is held
            # (`discarding`) and its multicast head cannot change (nothing reads it).
            disc_start = Signal(name=f"disc_start{i}")
            m.d.comb += disc_go[i].eq(mc_bad[i] & ~discarding[i] & ~voq[i].busy & ~al.in_busy[i] & ~start.any())
            m.d.sync += disc_start.eq(disc_go[i])
            with m.If(disc_go[i]):
                m.d.sync += discarding[i].eq(1)
            with m.Elif(voq[i].done):
                m.d.sync += discarding[i].eq(0)
            m.d.comb += [voq[i].rd_start.eq(start.any() | disc_start), voq[i].rd_void.eq(disc_start),
                         voq[i].rd_port.eq(Mux(start.any(), port, mc_port[i])),
                         voq[i].rd_vl.eq(Array(m_vl)[port]), voq[i].rd_mc.eq(Mux(start.any(), Array(m_mc)[port], 1)),
                         al.done[i].eq(voq[i].done & ~discarding[i] & ~disc_go[i])]
        for o in range(n):
            here = [Signal(name=f"xbar{i}_{o}") for i in range(n)]      # input i's flit is for output o
            for i in range(n):
                q = voq[i].r
                m.d.comb += here[i].eq(q.valid & ~q.void & (q.port == o))
            m.d.comb += eg[o].i.valid.eq(Cat(here).any())
            for k in flit + ("vl",):
                m.d.comb += getattr(eg[o].i, k).eq(
                    or_all(Mux(here[i], getattr(voq[i].r, k), 0) for i in range(n)))
        blocked = Signal(n)                      # an output with a flit waiting that it does not take
        m.d.comb += blocked.eq(Cat(eg[o].i.valid & ~eg[o].i.ready for o in range(n)))
        for i in range(n):
            q = voq[i]
            m.d.comb += [q.r.ready.eq(q.r.void | Array(e.i.ready for e in eg)[q.r.port]),
                         q.first_ok.eq(~blocked.bit_select(q.issue_port, 1))]

        # ---- egress -> the management port's per-output switch -> LinkTx
        for o in range(n):
            wiring.connect(m, eg[o].o, mp.eg[o])

        # ---- counters over management (index = hw.mgmt.regmap.PORT_COUNTERS_LIST)
        for p in range(n):
            crx, ctx = lrx[p].counters, ltx[p].counters
            vals = {
                "PortXmitData": ctx.xmit_words, "PortRcvData": crx.rcv_words, "PortXmitPkts": ctx.xmit_pkts,
                "PortRcvPkts": crx.rcv_pkts, "PortXmitWait": ctx.xmit_wait,
                "PortRcvErrors": sum(getattr(crx, c) for c in RX_ERROR_COUNTERS)[:32],
                "PortXmitDiscards": ctx.xmit_discards, "ExcessiveBufferOverrunErrors": crx.overrun,
                "VL15Dropped": sat_sum(crx.vl15_dropped, mp.v15_dropped[p]),
                "LinkDownedCounter": psm[p].link_downed,
                "PortRcvSwitchRelayErrors": sat_sum(relay_err[p], mp.relay_err[p]),
                "VL15ForSwitch": mp.for_switch[p], "PortRcvRemotePhysicalErrors": crx.ebp,
                "MgmtRcvPkts": mp.rcv[p], "MgmtXmitPkts": mp.xmit[p], "MgmtXmitDiscards": mp.xmit_discards[p],
            }
            for k in range(N_COUNTERS):
                name = PORT_COUNTERS_LIST[k] if k < len(PORT_COUNTERS_LIST) else None
                m.d.comb += mg.counters[p][k].eq(vals[name] if name else 0)
        return m
