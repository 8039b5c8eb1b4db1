"""A hardware HCA endpoint for one switch port (docs/endpoint.md): the link layer of the
switch (LinkRx without data buffers, LinkTx, the port state machine) with the traffic
generator on its transmit side and the traffic checker on its receive side.

  * transmit: the generator's packets go to LinkTx's source for VL `vl`; LinkTx sends them
    only as the switch's advertised credit allows (IBA §7.9.4) and sends the FC packets
    that advertise this endpoint's own receive credit;
  * receive: LinkRx checks every packet (the receive parser, IBA §7.7-7.9) and the checker
    takes the accepted ones. The checker consumes a flit every cycle, so the blocks of a
    packet are released (credit returned) in the cycle its sop is accepted: the endpoint
    advertises its whole buffer at all times (`rx_blocks_per_vl` = buffer_blocks_per_vl);
    VL15 packets are drained and counted by LinkRx only;
  * port state: `auto_active` stands in for the subnet manager's PortInfo writes: the
    endpoint moves itself Init -> Armed -> Active once the link is up; otherwise `mgmt`
    requests states as the switch's management does.

Ports:
  rx     In   from the switch port's transmit side (+ `up`)
  tx     Out  to the switch port's receive side (ready: the switch takes a flit per cycle)
  gen    In   the generator's configuration (hw/endpoint/traffic_gen.py), `now` shared
  chk    In   the checker's configuration (src_base, len_min, len_mask)
  auto_active, mgmt (req, state) In; state Out
  sent_pkts, gen_done, counters (the checker's), link_rx/link_tx counters Out
"""
from amaranth.hdl import Module
from amaranth.lib import wiring

from contracts import endpoint as specs
from contracts.config import SwitchConfig
from contracts.counters import CHECK_COUNTERS
from contracts.defs import PortState
from contracts.streams import FLIT
from hw.common.ports import signature
from hw.endpoint.traffic_check import TrafficCheck
from hw.endpoint.traffic_gen import TrafficGen
from hw.link.link_rx import LinkRx
from hw.link.link_tx import LinkTx, drive_source
from hw.link.port_state import PortStateMachine

__all__ = ["Endpoint"]

_FLIT = ("valid", *FLIT)


class Endpoint(wiring.Component):
    def __init__(self, cfg: SwitchConfig, max_dests: int = 4, max_srcs: int = 4, check_icrc: bool = True):
        self.cfg, self.max_dests, self.max_srcs, self.check_icrc = cfg, max_dests, max_srcs, check_icrc
        super().__init__(signature(specs.endpoint(cfg, max_dests, max_srcs, check_icrc)))

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        nvl = cfg.data_vls
        m.submodules.lrx = lrx = LinkRx(cfg, buffered=False)
        m.submodules.ltx = ltx = LinkTx(cfg)
        m.submodules.psm = psm = PortStateMachine()
        m.submodules.tgen = gen = TrafficGen(cfg, self.max_dests)
        m.submodules.tchk = chk = TrafficCheck(cfg, self.max_srcs, self.check_icrc)
        wiring.connect(m, wiring.flipped(self.rx), lrx.rx)
        wiring.connect(m, wiring.flipped(self.tx), ltx.tx)

        # ---- port state: the SM's writes, or the endpoint's own bring-up
        st = psm.state
        auto_req = self.auto_active & ((st == PortState.INIT) | (st == PortState.ARMED))
        m.d.comb += [psm.up.eq(self.rx.up), psm.req.eq(self.mgmt.req | auto_req),
                     psm.want.eq(self.mgmt.state), psm.data_rx.eq(lrx.data_rx),
                     self.state.eq(st), lrx.state.eq(st), ltx.state.eq(st)]
        with m.If(auto_req & ~self.mgmt.req):
            m.d.comb += psm.want.eq(st + 1)
        wiring.connect(m, lrx.fc_rx, ltx.fc_rx)
        for v in range(nvl):
            m.d.comb += ltx.local_fccl[v].eq(lrx.fccl[v])

        # ---- transmit: the generator into the source of its VL
        for name in gen.signature.members:
            if name in self.gen.signature.members:
                m.d.comb += getattr(gen, name).eq(getattr(self.gen, name))
        m.d.comb += gen.now.eq(self.now)
        for v in range(nvl):
            s = ltx.src[v]
            drive_source(m, cfg, s, gen.o, valid=gen.o.valid & (gen.vl == v))
            with m.If(gen.vl == v):
                m.d.comb += gen.o.ready.eq(s.ready)
        m.d.comb += [ltx.src15.valid.eq(0), self.sent_pkts.eq(gen.sent_pkts), self.gen_done.eq(gen.done)]

        # ---- receive: every accepted packet to the checker; its blocks come back at once
        acc = lrx.acc
        m.d.comb += [getattr(chk.i, k).eq(getattr(acc, k)) for k in _FLIT]
        m.d.comb += [chk.src_base.eq(self.chk.src_base), chk.len_min.eq(self.chk.len_min),
                     chk.len_mask.eq(self.chk.len_mask), chk.now.eq(self.now)]
        for v in range(nvl):
            m.d.comb += lrx.release[v].eq((acc.valid & acc.sop & (acc.vl == v)) * acc.blocks)
        m.d.comb += lrx.vl15.ready.eq(1)
        m.d.comb += [getattr(self.counters, k).eq(getattr(chk.counters, k)) for k in CHECK_COUNTERS]
        wiring.connect(m, wiring.flipped(self.crx), lrx.counters)
        wiring.connect(m, wiring.flipped(self.ctx), ltx.counters)
        return m
