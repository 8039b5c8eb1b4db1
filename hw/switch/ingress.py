"""Ingress of one input port: the route lookup and the write into the VOQ buffer
(docs/switch-core.md, "Ingress").

A packet arrives on `acc` (LinkRx's accepted data-VL stream: flits, with the packet's LRH,
input VL and charged blocks from its sop flit on). At its sop the route lookup
(hw/switch/route.py, inside) decides, from the LRH and the table entries for its DLID:

  routed (drop = NONE)  every flit of the packet is written into the VOQ buffer (`w`), the
                        sop flit with its output (unicast) or port mask (multicast), output
                        VL, SL, input VL and blocks
  refused               no flit is written; the packet's blocks go back to its input VL's
                        credit at once (`release`, in the sop cycle) and, unless the packet
                        is for the management port, `dropped` pulses at its eop flit (a
                        relay error, IBA §16.1.3.5 PortRcvSwitchRelayErrors), if that flit
                        is not `bad`: a packet that ended bad is counted once, by the
                        receiver's error counters

`tap` shows the management port the same accepted stream, with `here` = the route's `mgmt`
at a sop (a copy of the packet is for the management port: LFT entry 0, MFT bit 0).
`release[v]` also carries the blocks the VOQ buffer frees (`rel`), added to a refused
packet's when both come in one cycle.

Table reads: `lft_port` and `mft_mask` are the LFT entry and MFT mask of the DLID of the
packet at `acc`'s sop, in its sop cycle. The tables are block RAMs read synchronously, so
they are addressed a cycle early: `la` is the flit entering the receive parser (a sop on
`acc` is always the rx sop of the cycle before), and `lft_dlid` / `mft_mlid` are the LID
its LRH is routed by (hw/switch/route.py lid_of) and its DLID - 0xC000 (the MFT index, at
the table's address width), whatever the flit is: only a sop's matter. `sl2vl_index` ->
`sl2vl_word` is read in the same cycle.
`port_active`: bit p, Verilog port p is Active. `redirect` (cfg.failover): bit p, port p is
not Active but failover sends its packets to its Active alternate (docs/reliability.md): a
unicast packet routed to p is written for p as if p were Active.
"""
from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring

from contracts import switch as specs
from contracts.config import SwitchConfig
from contracts.defs import RouteDrop
from contracts.streams import FLIT
from hw.common.layouts import LRHLayout, header_at
from hw.common.ports import signature
from hw.switch.route import RouteLookup, lid_of

__all__ = ["Ingress"]

_FLIT = FLIT


class Ingress(wiring.Component):
    def __init__(self, cfg: SwitchConfig, in_port: int):
        self.cfg, self.in_port = cfg, in_port
        super().__init__(signature(specs.ingress(cfg, in_port)))

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        acc, w = self.acc, self.w
        la = header_at(self.la, cfg.data_width, LRHLayout)      # the table reads, a cycle early
        m.d.comb += [self.lft_dlid.eq(lid_of(cfg, la)), self.mft_mlid.eq(la.dlid - 0xC000)]
        m.submodules.route = r = RouteLookup(cfg, self.in_port)
        m.d.comb += [r.hdr.as_value().eq(acc.hdr), r.port_active.eq(self.port_active),
                     r.lft_port.eq(self.lft_port), r.mft_mask.eq(self.mft_mask),
                     self.sl2vl_index.eq(r.sl2vl_index), r.sl2vl_word.eq(self.sl2vl_word)]
        if cfg.failover:
            m.d.comb += r.redirect.eq(self.redirect)
        if cfg.adaptive:
            m.d.comb += [r.ar_mask[o].eq(self.ar_mask[o]) for o in range(cfg.ports)]

        refuse = Signal()                  # the packet starting now is refused by the route
        skip = Signal()                    # the rest of a refused packet is still arriving
        m.d.comb += refuse.eq(acc.valid & acc.sop & (r.drop != RouteDrop.NONE))
        with m.If(acc.valid & acc.sop):
            m.d.sync += skip.eq(refuse & ~acc.eop)
        with m.Elif(acc.valid & acc.eop):
            m.d.sync += skip.eq(0)

        m.d.comb += [w.valid.eq(acc.valid & ~refuse & ~(skip & ~acc.sop)),
                     w.dest.eq(r.dest), w.ovl.eq(r.ovl), w.blocks.eq(acc.blocks), w.ivl.eq(acc.vl),
                     w.mcast.eq(r.mcast), w.mask.eq(r.mask), w.sl.eq(r.hdr.sl)]
        if cfg.adaptive:
            m.d.comb += w.ar.eq(r.ar)
        m.d.comb += [getattr(w, k).eq(getattr(acc, k)) for k in _FLIT]

        tap = self.tap
        m.d.comb += [tap.valid.eq(acc.valid), tap.blocks.eq(acc.blocks), tap.here.eq(r.mgmt)]
        m.d.comb += [getattr(tap, k).eq(getattr(acc, k)) for k in _FLIT]

        # the relay error counts at the refused packet's end, and only if it ended good: one
        # that ends bad (VCRC, EBP, cut off) counts in the receiver's errors alone
        skip_mgmt = Signal()
        with m.If(acc.valid & acc.sop):
            m.d.sync += skip_mgmt.eq(r.mgmt)
        m.d.comb += self.dropped.eq(acc.valid & acc.eop & ~acc.bad
                                    & Mux(acc.sop, refuse & ~r.mgmt, skip & ~skip_mgmt))
        for v in range(cfg.data_vls):
            m.d.comb += self.release[v].eq(Mux(self.rel.valid & (self.rel.ivl == v), self.rel.blocks, 0)
                                           + Mux(refuse & (acc.vl == v), acc.blocks, 0))
        return m
