"""Port groups: the failover alternate and the adaptive-routing group of each output
(docs/reliability.md), decided from the ports' states and the management registers. It
was written inline in the switch top; the top now only wires it.

Failover (cfg.failover): output o is *redirected* while it is not Active and its alternate
(register ALT_PORT[o], an IBA port number 1..N; anything else: none) is Active; its
packets then leave on the alternate, whose Verilog index is `alt[o]` (ALT_PORT - 1, at the
width of a port index, whatever the register holds: it only matters while redirected).

Adaptive routing (cfg.adaptive): the outputs with one AR group number (register
AR_GROUP[o], not 0) can take each other's adaptive packets. A packet for output o may be
accepted by the route lookup although o is not Active (`usable[o]`) when o is redirected
or an Active output shares its group. A flow-pinned group (AR_GROUP bit 7 set) chooses the
port at the route lookup: `ar_mask[o]` is the set of Active outputs of o's group when the
group is flow-pinned, else 0 (hw/switch/route.py).

Ports (N outputs):
  active          In   bit o: port o is Active
  alt_port[o]     In   ALT_PORT of output o (8 bits, IBA numbering)
  ar_group[o]     In   (cfg.adaptive) AR_GROUP of output o (0: none; bit 7: flow-pinned)
  redirect        Out  bit o: output o is redirected to alt[o]
  alt[o]          Out  the alternate's Verilog index
  usable          Out  bit o: a packet for o may be routed though o is not Active
  ar_mask[o]      Out  (cfg.adaptive) the flow-pinned group's Active outputs, or 0
Combinational: a port's state or a register write acts in the same cycle, as it did inline.
"""
from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring

from contracts import switch as specs
from contracts.config import SwitchConfig
from hw.common.ports import signature

__all__ = ["PortGroups"]


class PortGroups(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        if not cfg.failover:
            raise ValueError(f"PortGroups: config {cfg.name!r} has no failover (nothing to decide)")
        self.cfg = cfg
        super().__init__(signature(specs.port_groups(cfg)))

    def elaborate(self, platform):
        m = Module()
        n = self.cfg.ports
        active = self.active
        for o in range(n):
            ap = self.alt_port[o]
            m.d.comb += [self.alt[o].eq((ap - 1)[:max(1, (n - 1).bit_length())]),
                         self.redirect[o].eq(~active[o] & (ap >= 1) & (ap <= n) & active.bit_select(self.alt[o], 1))]
        if not self.cfg.adaptive:
            m.d.comb += self.usable.eq(self.redirect)
            return m
        grp = self.ar_group
        for o in range(n):
            g = grp[o]
            peers = Signal(name=f"peers{o}")         # an Active output shares o's group
            m.d.comb += [
                peers.eq(Cat((g != 0) & (grp[x] == g) & active[x] for x in range(n) if x != o).any()),
                self.usable[o].eq(self.redirect[o] | (~active[o] & peers)),
                self.ar_mask[o].eq(Mux(g[7], Cat((grp[x] == g) & active[x] for x in range(n)), 0)),
            ]
        return m
