"""`ib_switch`: the N-port switch datapath (docs/switch-core.md, DESIGN §7 port names).

Per port: LinkRx (parser, credits, VL15; data packets leave on `acc`), route lookup, VOQ
input buffer; per output: VL arbitration, egress rewrite, LinkTx; one iSLIP allocator; the
management block on AXI4-Lite. This first version forwards unicast packets; multicast
packets (route `mcast`) are dropped and counted as relay errors until replication lands.
VL15 packets are consumed by the switch (no subnet management agent yet).

Ports: clk, rst; rx__<p>__*, tx__<p>__* (link side); s_axil_* (management).
"""
from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.common.config import SwitchConfig
from hw.common.defs import RX_ERROR_COUNTERS, PortState, RouteDrop
from hw.common.stream import link_rx_signature, link_tx_signature
from hw.link.link_rx import LinkRx
from hw.link.link_tx import LinkTx
from hw.link.port_state import PortStateMachine
from hw.mgmt.mgmt import N_COUNTERS, SwitchMgmt, axil_members
from hw.mgmt.regmap import PORT_COUNTERS_LIST
from hw.switch.allocator import ISlipAllocator
from hw.switch.egress import Egress
from hw.switch.route import RouteLookup
from hw.switch.vlarb import VLArbiter
from hw.switch.voq import VOQBuffer

__all__ = ["IBSwitch"]


class IBSwitch(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        n = cfg.ports
        super().__init__({
            "rx": In(link_rx_signature(cfg)).array(n),
            "tx": Out(link_tx_signature(cfg)).array(n),
            **axil_members(),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        n, nvl = cfg.ports, cfg.data_vls
        flit = ("data", "sop", "eop", "bytes", "bad")

        m.submodules.mgmt = mg = SwitchMgmt(cfg, lookups=n)
        for name, member in axil_members().items():
            ours, theirs = getattr(self, name), getattr(mg, name)
            if member.flow == wiring.Flow.Out:
                m.d.comb += ours.eq(theirs)
            else:
                m.d.comb += theirs.eq(ours)

        lrx, ltx, psm, rt, voq, va, eg = [], [], [], [], [], [], []
        for p in range(n):
            for lst, mod, nm in ((lrx, LinkRx(cfg, buffered=False), "lrx"), (ltx, LinkTx(cfg), "ltx"),
                                 (psm, PortStateMachine(), "psm"), (rt, RouteLookup(cfg, p), "route"),
                                 (voq, VOQBuffer(cfg), "voq"), (va, VLArbiter(nvl, cfg.vlarb_entries, 8), "vlarb"),
                                 (eg, Egress(cfg), "egress")):
                m.submodules[f"{nm}{p}"] = mod
                lst.append(mod)
        m.submodules.alloc = al = ISlipAllocator(n, cfg.islip_iterations)

        active = Signal(n)
        m.d.comb += active.eq(Cat(psm[p].state == PortState.ACTIVE for p in range(n)))

        relay_err = [Signal(32, name=f"relay_err{p}") for p in range(n)]
        for p in range(n):
            # ---- link layer and port state
            wiring.connect(m, wiring.flipped(self.rx[p]), lrx[p].rx)
            wiring.connect(m, wiring.flipped(self.tx[p]), ltx[p].tx)
            m.d.comb += [psm[p].up.eq(self.rx[p].up), psm[p].req.eq(mg.port_req[p].req),
                         psm[p].want.eq(mg.port_req[p].state), mg.port_state[p].eq(psm[p].state),
                         lrx[p].state.eq(psm[p].state), ltx[p].state.eq(psm[p].state),
                         lrx[p].vl15.ready.eq(1)]
            wiring.connect(m, lrx[p].fc_rx, ltx[p].fc_rx)
            for v in range(nvl):
                m.d.comb += ltx[p].local_fccl[v].eq(lrx[p].fccl[v])

            # ---- route lookup on the accepted stream, write into the VOQ buffer
            acc, r, q = lrx[p].acc, rt[p], voq[p]
            m.d.comb += [r.hdr.as_value().eq(acc.hdr), r.port_active.eq(active),
                         mg.lft_rd[p].dlid.eq(r.lft_dlid), r.lft_port.eq(mg.lft_rd[p].port),
                         mg.sl2vl_rd[p].index.eq(r.sl2vl_index), r.sl2vl_word.eq(mg.sl2vl_rd[p].word),
                         mg.mft_rd[p].mlid.eq(r.mft_index), r.mft_mask.eq(mg.mft_rd[p].mask)]
            skip = Signal(name=f"skip{p}")
            drop_now = Signal(name=f"drop_now{p}")
            m.d.comb += drop_now.eq(acc.valid & acc.sop & ((r.drop != RouteDrop.NONE) | r.mcast))
            with m.If(acc.valid & acc.sop):
                m.d.sync += skip.eq(drop_now & ~acc.eop)
            with m.Elif(acc.valid & acc.eop):
                m.d.sync += skip.eq(0)
            write = acc.valid & ~drop_now & ~(skip & ~acc.sop)
            m.d.comb += [q.w.valid.eq(write), q.w.dest.eq(r.dest), q.w.ovl.eq(r.ovl), q.w.blocks.eq(acc.blocks),
                         q.w.ivl.eq(acc.vl)]
            m.d.comb += [getattr(q.w, k).eq(getattr(acc, k)) for k in flit]
            with m.If(drop_now & (relay_err[p] != 0xFFFFFFFF)):
                m.d.sync += relay_err[p].eq(relay_err[p] + 1)
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

        m_vl = [Signal(4, name=f"m_vl{o}") for o in range(n)]
        for o in range(n):
            a = va[o]
            m.d.comb += [a.ready15.eq(0), a.limit.eq(mg.limit_high[o])]
            for j in range(cfg.vlarb_entries):
                m.d.comb += [a.high[j].as_value().eq(mg.vlarb_high[o][j].as_value()),
                             a.low[j].as_value().eq(mg.vlarb_low[o][j].as_value())]
            for v in range(nvl):
                any_i = Cat(voq[i].nonempty[o][v] & fits(o, v, voq[i].head_blocks[o][v]) for i in range(n)).any()
                m.d.comb += a.ready[v].eq(any_i & active[o])
            sel = a.sel_vl[:max(1, (nvl - 1).bit_length())] if nvl > 1 else 0
            for i in range(n):
                hb = Array(voq[i].head_blocks[o])[sel] if nvl > 1 else voq[i].head_blocks[o][0]
                ne = voq[i].nonempty[o].bit_select(sel, 1) if nvl > 1 else voq[i].nonempty[o][0]
                m.d.comb += al.req[i][o].eq(a.sel_valid & ne & fits(o, sel, hb) & active[o])
            # a match made now: the arbiter consumes the packet's blocks, the VL is latched
            new_i = al.new_in[o]
            hb_new = Array(Array(voq[i].head_blocks[o]) for i in range(n))[new_i][sel] if nvl > 1 else \
                Array(voq[i].head_blocks[o][0] for i in range(n))[new_i]
            m.d.comb += [a.sent.eq(al.new_valid[o]), a.blocks.eq(hb_new)]
            with m.If(al.new_valid[o]):
                m.d.sync += m_vl[o].eq(a.sel_vl)

        # ---- crossbar: a registered match starts the input's reader; flits to the egress
        cur_in = [Signal(range(n), name=f"cur_in{o}") for o in range(n)]
        cur_out = [Signal(range(n), name=f"cur_out{i}") for i in range(n)]
        sel_in = [Signal(range(n), name=f"sel_in{o}") for o in range(n)]
        sel_out = [Signal(range(n), name=f"sel_out{i}") for i in range(n)]
        for o in range(n):
            m.d.comb += sel_in[o].eq(Mux(al.match_valid[o], al.match_in[o], cur_in[o]))
            with m.If(al.match_valid[o]):
                m.d.sync += cur_in[o].eq(al.match_in[o])
        for i in range(n):
            start = Cat(al.match_valid[o] & (al.match_in[o] == i) for o in range(n))
            port = Signal(range(n), name=f"start_port{i}")
            for o in range(n):
                with m.If(start[o]):
                    m.d.comb += port.eq(o)
            m.d.comb += [voq[i].rd_start.eq(start.any()), voq[i].rd_port.eq(port),
                         voq[i].rd_vl.eq(Array(m_vl)[port]),
                         sel_out[i].eq(Mux(start.any(), port, cur_out[i])), al.done[i].eq(voq[i].done)]
            with m.If(start.any()):
                m.d.sync += cur_out[i].eq(port)
        for o in range(n):
            owns = al.match_valid[o] | al.out_busy[o]
            m.d.comb += [eg[o].i.valid.eq(owns & Array(q.r.valid for q in voq)[sel_in[o]]), eg[o].i.vl.eq(m_vl[o])]
            for k in flit:
                m.d.comb += getattr(eg[o].i, k).eq(Array(getattr(q.r, k) for q in voq)[sel_in[o]])
        for i in range(n):
            owned = Cat(al.match_valid[o] & (al.match_in[o] == i) for o in range(n)).any() | al.in_busy[i]
            m.d.comb += voq[i].r.ready.eq(owned & Array(e.i.ready for e in eg)[sel_out[i]])

        # ---- egress -> LinkTx source of the packet's VL
        for o in range(n):
            e, t = eg[o].o, ltx[o]
            for v in range(nvl):
                s = t.src[v]
                m.d.comb += [s.valid.eq(e.valid & (e.vl == v))] + [getattr(s, k).eq(getattr(e, k)) for k in flit]
            vsel = e.vl[:max(1, (nvl - 1).bit_length())]
            ready = Array(t.src[v].ready for v in range(nvl))[vsel] if nvl > 1 else t.src[0].ready
            m.d.comb += [t.src15.valid.eq(0), e.ready.eq(ready)]

        # ---- counters over management (index = hw.mgmt.regmap.PORT_COUNTERS_LIST)
        for p in range(n):
            crx, ctx = lrx[p].counters, ltx[p].counters
            vals = {
                "PortXmitData": ctx.xmit_words, "PortRcvData": crx.rcv_words, "PortXmitPkts": ctx.xmit_pkts,
                "PortRcvPkts": crx.rcv_pkts, "PortXmitWait": ctx.xmit_wait,
                "PortRcvErrors": sum(getattr(crx, c) for c in RX_ERROR_COUNTERS)[:32],
                "PortXmitDiscards": ctx.xmit_discards, "ExcessiveBufferOverrunErrors": crx.overrun,
                "VL15Dropped": crx.vl15_dropped, "LinkDownedCounter": psm[p].link_downed,
                "PortRcvSwitchRelayErrors": relay_err[p],
            }
            for k in range(N_COUNTERS):
                name = PORT_COUNTERS_LIST[k] if k < len(PORT_COUNTERS_LIST) else None
                m.d.comb += mg.counters[p][k].eq(vals[name] if name else 0)
        return m
