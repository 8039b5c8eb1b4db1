"""`ib_switch`: the N-port switch datapath (docs/switch-core.md; port names: docs/interfaces.md).

The top only connects components (each with its own model and lock-step test):

  per port p     LinkRx (parser, credits, VL15; accepted data packets on `acc`),
                 PortStateMachine, Ingress (route lookup, write into the VOQ, credit back
                 for refused packets), VOQBuffer, VLArbiter, Egress, LinkTx, PortCounters
  per switch     ISlipAllocator, RequestBuilder (VLArb readiness, requests, reader
                 starts, multicast discard reads), PortGroups (cfg.failover: redirected
                 outputs, adaptive-routing groups), Crossbar (read registers -> egress),
                 MgmtPort (IBA port 0: VL15 relay, receive queue, the processor's send
                 path, the switch between egress and LinkTx), SwitchMgmt (AXI4-Lite
                 registers and tables)

Port numbers: tables hold IBA port numbers (LFT entry 0 / MFT bit 0 the management port,
1..N the physical ports); Verilog port p is IBA port p + 1 (docs/interfaces.md).

Table reads: the LFT and MFT are block RAMs read synchronously. Input p's lookup is
addressed with the DLID of the flit entering its receive parser (`rx[p].data`), so that the
entry arrives a cycle later together with the header on `acc` (a sop on `acc` is always
the rx sop of the cycle before). SL2VL is registers, read in the same cycle: read port p
serves input p's route lookup, port N + p its multicast copies. LFT read port N is the
management port's.

Ports: clk, rst; rx__<p>__*, tx__<p>__* (link side); s_axil_* (registers); m_axis_mgmt_*,
s_axis_mgmt_* (the management processor's packets).

With `SwitchConfig.rx_register` the top is a register stage on every rx member in front of
this switch (`core`), whose own rx ports then carry the registered flits.
"""
from amaranth.hdl import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from contracts.config import SwitchConfig
from contracts.defs import PortState
from hw.common.stream import link_rx_signature, link_tx_signature
from hw.link.link_rx import LinkRx
from hw.link.link_tx import LinkTx
from hw.link.port_state import PortStateMachine
from hw.mgmt.mgmt import SwitchMgmt, axil_members
from hw.switch.allocator import ISlipAllocator
from hw.switch.congestion import CongestionMarker
from hw.switch.counters import PortCounters
from hw.switch.crossbar import Crossbar
from hw.switch.egress import Egress
from hw.switch.ingress import Ingress
from hw.switch.lifetime import LifetimeClock
from hw.switch.mgmt_port import MGMT_PORT_COUNTERS, MgmtPort, mgmt_port_members
from hw.switch.port_groups import PortGroups
from hw.switch.requests import RequestBuilder
from hw.switch.vlarb import VLArbiter
from hw.switch.voq import VOQBuffer

__all__ = ["IBSwitch"]

_QUEUE_STATUS = ("nonempty", "deep", "head_blocks", "mc_valid", "mc_mask", "mc_sl", "mc_blocks", "busy", "done",
                 "ending", "done_bad")


def _members(m, top, block, members):
    """Expose `block`'s members as the top's (same names and flows)."""
    for name, member in members.items():
        ours, theirs = getattr(top, name), getattr(block, name)
        m.d.comb += ours.eq(theirs) if member.flow == wiring.Flow.Out else theirs.eq(ours)


class IBSwitch(wiring.Component):
    def __init__(self, cfg: SwitchConfig, *, _core: bool = False):
        self.cfg = cfg
        self._core = _core              # the switch behind the rx registers (cfg.rx_register)
        n = cfg.ports
        super().__init__({
            "rx": In(link_rx_signature(cfg)).array(n),
            "tx": Out(link_tx_signature(cfg)).array(n),
            **axil_members(),
            **mgmt_port_members(cfg),
        })

    def elaborate(self, platform):
        if self.cfg.rx_register and not self._core:
            return self._registered_rx()
        m = Module()
        cfg = self.cfg
        n, nvl = cfg.ports, cfg.data_vls

        m.submodules.mgmt = mg = SwitchMgmt(cfg, lookups=n + 1, sl2vl_lookups=2 * n)
        m.submodules.mgmt_port = mp = MgmtPort(cfg)
        m.submodules.alloc = al = ISlipAllocator(n, cfg.islip_iterations, cfg.islip_fair_every)
        m.submodules.requests = rq = RequestBuilder(cfg)
        m.submodules.xbar = xb = Crossbar(cfg)
        _members(m, self, mg, axil_members())
        _members(m, self, mp, mgmt_port_members(cfg))

        lrx, ltx, psm, ing, voq, va, eg, pc = [], [], [], [], [], [], [], []
        for p in range(n):
            for lst, mod, nm in ((lrx, LinkRx(cfg, buffered=False), "lrx"), (ltx, LinkTx(cfg), "ltx"),
                                 (psm, PortStateMachine(), "psm"), (ing, Ingress(cfg, p), "ingress"),
                                 (voq, VOQBuffer(cfg), "voq"), (va, VLArbiter(nvl, cfg.vlarb_entries, 8), "vlarb"),
                                 (eg, Egress(cfg), "egress"), (pc, PortCounters(), "counters")):
                m.submodules[f"{nm}{p}"] = mod
                lst.append(mod)

        active = Cat(psm[p].state == PortState.ACTIVE for p in range(n))
        if cfg.lifetimes:
            # HOQLife (docs/reliability.md): each output's lifetime clock; SwitchLifetime: the
            # quarter ticks the input buffers stamp packets with
            m.submodules.lifetime = life = LifetimeClock(cfg)
            m.d.comb += [life.sw_life.eq(mg.switch_life)] + [voq[p].sw_tick.eq(life.sw_tick) for p in range(n)]
            m.d.comb += [life.hoq_life[o].eq(mg.hoq_life[o]) for o in range(n)] + [rq.hoq_tick.eq(life.tick)]
            m.d.comb += [rq.vl_stall[o].eq(mg.vl_stall[o]) for o in range(n)] + [rq.hoq_never.eq(life.never)]
        if cfg.failover:
            # failover and adaptive-routing groups (docs/reliability.md): which outputs are
            # redirected to their alternate, may be routed to while down, and a flow-pinned
            # group's Active ports for the route lookup
            m.submodules.groups = pg = PortGroups(cfg)
            m.d.comb += [pg.active.eq(active), rq.redirect.eq(pg.redirect)]
            m.d.comb += [pg.alt_port[o].eq(mg.alt_port[o]) for o in range(n)]
            m.d.comb += [rq.alt[o].eq(pg.alt[o]) for o in range(n)]
            if cfg.adaptive:
                m.d.comb += [pg.ar_group[o].eq(mg.ar_group[o]) for o in range(n)]
                m.d.comb += [rq.ar_group[o].eq(mg.ar_group[o]) for o in range(n)]

        if cfg.cc:
            # congestion marking (docs/reliability.md): queue (o, v) over all inputs, FECN at the egress
            m.submodules.cc = ccm = CongestionMarker(cfg)
            for p in range(n):
                w, rd, x = ing[p].w, rq.rd[p], xb.out[p]
                m.d.comb += [ccm.enq[p].valid.eq(w.valid), ccm.enq[p].sop.eq(w.sop), ccm.enq[p].mcast.eq(w.mcast),
                             ccm.enq[p].port.eq(w.dest), ccm.enq[p].vl.eq(w.ovl), ccm.enq[p].blocks.eq(w.blocks),
                             ccm.deq[p].start.eq(rd.start), ccm.deq[p].mc.eq(rd.mc), ccm.deq[p].port.eq(rd.port),
                             ccm.deq[p].vl.eq(rd.vl), ccm.deq[p].blocks.eq(voq[p].rd_blocks),
                             ccm.eg[p].valid.eq(x.valid), ccm.eg[p].sop.eq(x.sop), ccm.eg[p].data.eq(x.data),
                             ccm.eg[p].vl.eq(x.vl), ccm.eg[p].ready.eq(eg[p].i.ready),
                             eg[p].fecn.eq(ccm.mark[p]), ccm.cc[p].eq(mg.cc_port[p]),
                             mg.cc_marked[p].eq(ccm.marked[p])]

        # ---- management port, tables
        m.d.comb += [mp.switch_lid.eq(mg.switch_lid), mg.lft_rd[n].dlid.eq(mp.lft_dlid),
                     mp.lft_port.eq(mg.lft_rd[n].port), mg.mft_rd[n].mlid.eq(0),
                     mg.mgmt_tx_errors.eq(mp.tx_errors)]

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

            # ---- ingress: route lookup (its tables addressed from the flit entering the
            # parser) and VOQ write; credit back
            wiring.connect(m, lrx[p].acc, ing[p].acc)
            if cfg.failover:
                m.d.comb += [ing[p].redirect.eq(pg.usable), voq[p].rd_dest.eq(rq.rd[p].dest)]
                if cfg.adaptive:
                    m.d.comb += [ing[p].ar_mask[o].eq(pg.ar_mask[o]) for o in range(n)]
            m.d.comb += [ing[p].port_active.eq(active), ing[p].la.eq(self.rx[p].data),
                         mg.lft_rd[p].dlid.eq(ing[p].lft_dlid), ing[p].lft_port.eq(mg.lft_rd[p].port),
                         mg.mft_rd[p].mlid.eq(ing[p].mft_mlid), ing[p].mft_mask.eq(mg.mft_rd[p].mask),
                         mg.sl2vl_rd[p].index.eq(ing[p].sl2vl_index), ing[p].sl2vl_word.eq(mg.sl2vl_rd[p].word)]
            wiring.connect(m, ing[p].w, voq[p].w)
            wiring.connect(m, voq[p].rel, ing[p].rel)
            for v in range(nvl):
                m.d.comb += lrx[p].release[v].eq(ing[p].release[v])
            wiring.connect(m, ing[p].tap, mp.dat[p])

            # ---- requests and reader starts
            for k in _QUEUE_STATUS + (("head_ar",) if cfg.adaptive else ()) + (("head_old",) if cfg.lifetimes else ()):
                src, dst = getattr(voq[p], k), getattr(rq.q[p], k)
                if k in ("nonempty", "deep", "head_ar", "head_old"):
                    m.d.comb += [dst[o].eq(src[o]) for o in range(n)]
                elif k == "head_blocks":
                    m.d.comb += [dst[o][v].eq(src[o][v]) for o in range(n) for v in range(nvl)]
                else:
                    m.d.comb += dst.eq(src)
            m.d.comb += [mg.sl2vl_rd[n + p].index.eq(rq.mc_sl2vl_index[p]),
                         rq.mc_sl2vl_word[p].eq(mg.sl2vl_rd[n + p].word)]
            m.d.comb += [voq[p].rd_start.eq(rq.rd[p].start), voq[p].rd_port.eq(rq.rd[p].port),
                         voq[p].rd_vl.eq(rq.rd[p].vl), voq[p].rd_mc.eq(rq.rd[p].mc),
                         voq[p].rd_void.eq(rq.rd[p].void)]

            # ---- allocation: VLArb per output, the iSLIP allocator
            a = va[p]
            m.d.comb += [a.ready15.eq(0), a.limit.eq(mg.limit_high[p]), a.ready.eq(rq.va[p].ready),
                         rq.va[p].sel_valid.eq(a.sel_valid), rq.va[p].sel_vl.eq(a.sel_vl),
                         a.sent.eq(rq.va[p].sent), a.blocks.eq(rq.va[p].blocks)]
            for j in range(cfg.vlarb_entries):
                m.d.comb += [a.high[j].as_value().eq(mg.vlarb_high[p][j].as_value()),
                             a.low[j].as_value().eq(mg.vlarb_low[p][j].as_value())]
            for v in range(nvl):
                m.d.comb += [rq.fccl[p][v].eq(ltx[p].fccl[v]), rq.fctbs[p][v].eq(ltx[p].fctbs[v])]
            m.d.comb += [al.req[p].eq(rq.alloc.req[p]), al.deep[p].eq(rq.alloc.deep[p]),
                         al.done[p].eq(rq.alloc.done[p]),
                         rq.alloc.new_valid[p].eq(al.new_valid[p]), rq.alloc.new_in[p].eq(al.new_in[p]),
                         rq.alloc.match_valid[p].eq(al.match_valid[p]), rq.alloc.match_in[p].eq(al.match_in[p])]

            # ---- crossbar, egress, the management port's switch in front of LinkTx
            wiring.connect(m, voq[p].r, xb.r[p])
            m.d.comb += [xb.issue_port[p].eq(voq[p].issue_port), voq[p].first_ok.eq(xb.first_ok[p])]
            wiring.connect(m, xb.out[p], eg[p].i)
            wiring.connect(m, eg[p].o, mp.eg[p])
            wiring.connect(m, lrx[p].vl15, mp.v15[p])
            m.d.comb += mp.state[p].eq(psm[p].state)
            for v in range(nvl):
                m.d.comb += [mp.fccl[p][v].eq(ltx[p].fccl[v]), mp.fctbs[p][v].eq(ltx[p].fctbs[v])]
                wiring.connect(m, mp.src[p][v], ltx[p].src[v])
            wiring.connect(m, mp.src15[p], ltx[p].src15)

            # ---- counters (index = contracts.regmap.PORT_COUNTERS_LIST)
            wiring.connect(m, lrx[p].counters, pc[p].rx)
            wiring.connect(m, ltx[p].counters, pc[p].tx)
            m.d.comb += [getattr(pc[p].mgmt, c).eq(getattr(mp, c)[p]) for c in MGMT_PORT_COUNTERS]
            m.d.comb += [pc[p].link_downed.eq(psm[p].link_downed), pc[p].route_drop.eq(ing[p].dropped),
                         pc[p].discard.eq(rq.discard[p]),
                         pc[p].hoq_discard.eq(rq.hoq_discard[p] if cfg.lifetimes else 0),
                         pc[p].life_discard.eq(rq.life_discard[p] if cfg.lifetimes else 0)]
            if cfg.lifetimes:
                m.d.comb += [mg.life_discards[2 * p + k].eq(pc[p].details[k]) for k in range(2)]
            m.d.comb += [mg.counters[p][k].eq(pc[p].counters[k]) for k in range(len(pc[p].counters))]
        m.d.comb += rq.active.eq(active)
        m.d.comb += rq.alloc.in_busy.eq(al.in_busy)
        return m

    def _registered_rx(self):
        """SwitchConfig.rx_register: the switch (`core`) behind a register stage on every rx
        member, reset to an idle link that is down; every other port passes straight through.
        As a wrapper rather than registers inside the top: Verilator then keeps much less of
        the core in its input-combinational region, and a fabric of these runs 1.7x as fast
        (measured: docs/fabric.md, "The RTL fabric's simulation speed")."""
        m = Module()
        m.submodules.core = core = IBSwitch(self.cfg, _core=True)
        mine = {path: v for path, _, v in self.signature.flatten(self)}
        for path, member, v in core.signature.flatten(core):
            if path[0] == "rx":
                m.d.sync += v.eq(mine[path])
            elif member.flow == wiring.In:
                m.d.comb += v.eq(mine[path])
            else:
                m.d.comb += mine[path].eq(v)
        return m

