"""Ingress of one input port: the route lookup and the write into the VOQ buffer
(docs/switch-core.md, "Route and VOQ write").

A packet arrives on `acc` (LinkRx's accepted data-VL stream: flits, with the packet's LRH,
input VL and charged blocks from its sop flit on). At its sop the route lookup
(hw/switch/route.py, inside) decides, from the LRH and the table entries for its DLID:

  routed (drop = NONE)  every flit of the packet is written into the VOQ buffer (`w`), the
                        sop flit with its output (unicast) or port mask (multicast), output
                        VL, SL, input VL and blocks
  refused               no flit is written; the packet's blocks go back to its input VL's
                        credit at once (`release`, as its first flit is refused) and, unless the packet
                        is for the management port, `dropped` pulses at its eop flit (a
                        relay error, IBA §16.1.3.5 PortRcvSwitchRelayErrors), if that flit
                        is not `bad`: a packet that ended bad is counted once, by the
                        receiver's error counters

`tap` shows the management port the same stream as `w` sees it (every flit, refused or not),
with `here` = the route's `mgmt`
at a sop (a copy of the packet is for the management port: LFT entry 0, MFT bit 0).
`release[v]` also carries the blocks the VOQ buffer frees (`rel`), added to a refused
packet's when both come in one cycle.

Stages (docs/switch-core.md, "Route and VOQ write"), cycle t being the one in which a
packet's first flit arrives on the link (`la`: the switch's link input, before the boundary
register of cfg.rx_register):

  address (t)      the LFT and MFT addressed from `la`'s DLID (`lft_dlid`, `mft_mlid`: block
                   RAMs with their output register, the entries come in t + 2); `la`'s LRH
                   and, with cfg.adaptive, its flow hash registered
  head    (t + 1)  the route lookup's head stage (hw/switch/route.py): DLID class, output VL
                   of every output from the input's SL2VL words (`sl2vl_row`), flow-pinned
                   ports from the AR groups (`ar_mask`), registered
  decide  (t + 2)  the route lookup's decision from those registers, the entries and the port
                   states (`port_active`, `redirect`), into the route register
  write   (t + 3)  the packet's flits, delayed to meet the route register (`acc` brings a
                   flit 1 cycle after the link, 2 with cfg.rx_register), are written into the
                   VOQ buffer (`w`) or refused; `release`, `dropped` and the `tap` from there

Every register is loaded every cycle, whatever the flit: only a first flit's decision is
used. `port_active`: bit p, Verilog port p is Active. `redirect` (cfg.failover): bit p, port p
is not Active but failover sends its packets to its Active alternate (docs/reliability.md): a
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
from hw.switch.route import RouteLookup, flow_hash, lid_of

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

        # ---------------------------------------------------------------- stage address (t)
        la = header_at(self.la, cfg.data_width, LRHLayout)
        m.d.comb += [self.lft_dlid.eq(lid_of(cfg, la)), self.mft_mlid.eq(la.dlid - 0xC000)]
        a_hdr = Signal(LRHLayout, name="a_hdr")
        m.d.sync += a_hdr.eq(la)
        # ---------------------------------------------------------------- stage head (t + 1)
        m.submodules.route = r = RouteLookup(cfg, self.in_port)
        m.d.comb += [r.hdr.eq(a_hdr), r.port_active.eq(self.port_active),
                     r.lft_port.eq(self.lft_port), r.mft_mask.eq(self.mft_mask)]
        m.d.comb += [r.sl2vl_row[j].eq(self.sl2vl_row[j]) for j in range(2 * cfg.ports)]
        if cfg.failover:
            m.d.comb += r.redirect.eq(self.redirect)
        if cfg.adaptive:
            a_hash = Signal(8, name="a_hash")
            m.d.sync += a_hash.eq(flow_hash(la))
            m.d.comb += [r.flow_hash.eq(a_hash)] + [r.ar_mask[o].eq(self.ar_mask[o]) for o in range(cfg.ports)]
        # ---------------------------------------------------------------- stage decide (t + 2)
        d_refuse = Signal(name="d_refuse")         # the route register: the decision for the
        d_mgmt = Signal(name="d_mgmt")             # packet whose flits reach stage write next
        d_route = {k: Signal.like(getattr(r, k), name=f"d_{k}") for k in ("dest", "ovl", "mcast", "mask")}
        if cfg.adaptive:
            d_route["ar"] = Signal(name="d_ar")
        m.d.sync += [d_refuse.eq(r.drop != RouteDrop.NONE), d_mgmt.eq(r.mgmt)]
        m.d.sync += [v.eq(getattr(r, k)) for k, v in d_route.items()]
        # ---------------------------------------------------------------- stage write (t + 3)
        # the accepted stream, delayed to meet the route register
        f = {k: getattr(acc, k) for k in ("valid", *_FLIT, "vl", "blocks")}
        f["sl"] = LRHLayout(acc.hdr).sl
        for i in range(specs.INGRESS_WRITE_CYCLE - specs.accepted_lag(cfg)):
            nxt = {k: Signal.like(v, name=f"w{i}_{k}") for k, v in f.items()}
            m.d.sync += [nxt[k].eq(v) for k, v in f.items()]
            f = nxt

        head = f["valid"] & f["sop"]
        refuse = Signal()                  # the packet starting now is refused by the route
        skip = Signal()                    # the rest of a refused packet is still arriving
        m.d.comb += refuse.eq(head & d_refuse)
        with m.If(head):
            m.d.sync += skip.eq(refuse & ~f["eop"])
        with m.Elif(f["valid"] & f["eop"]):
            m.d.sync += skip.eq(0)

        m.d.comb += [w.valid.eq(f["valid"] & ~refuse & ~(skip & ~f["sop"])),
                     w.dest.eq(d_route["dest"]), w.ovl.eq(d_route["ovl"]), w.blocks.eq(f["blocks"]),
                     w.ivl.eq(f["vl"]), w.mcast.eq(d_route["mcast"]), w.mask.eq(d_route["mask"]), w.sl.eq(f["sl"])]
        if cfg.adaptive:
            m.d.comb += w.ar.eq(d_route["ar"])
        m.d.comb += [getattr(w, k).eq(f[k]) for k in _FLIT]

        tap = self.tap
        m.d.comb += [tap.valid.eq(f["valid"]), tap.blocks.eq(f["blocks"]), tap.here.eq(d_mgmt)]
        m.d.comb += [getattr(tap, k).eq(f[k]) for k in _FLIT]

        # the relay error counts at the refused packet's end, and only if it ended good: one
        # that ends bad (VCRC, EBP, cut off) counts in the receiver's errors alone
        skip_mgmt = Signal()
        with m.If(head):
            m.d.sync += skip_mgmt.eq(d_mgmt)
        m.d.comb += self.dropped.eq(f["valid"] & f["eop"] & ~f["bad"]
                                    & Mux(f["sop"], refuse & ~d_mgmt, skip & ~skip_mgmt))
        for v in range(cfg.data_vls):
            m.d.comb += self.release[v].eq(Mux(self.rel.valid & (self.rel.ivl == v), self.rel.blocks, 0)
                                           + Mux(refuse & (f["vl"] == v), f["blocks"], 0))
        return m
