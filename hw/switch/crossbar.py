"""Crossbar: the inputs' read registers to the outputs' egress (docs/switch-core.md,
"Crossbar").

Each input's read register (`r[i]`, the VOQ reader's output) holds at most one flit, tagged
with the output it is for (`port`) and its output VL; a flit marked `void` (a packet read
into the void) goes nowhere and is taken at once. Output o shows the one flit tagged for it
(`out[o]`) and the input's flit is taken when o takes it (`r[i].ready`). There is no
arbitration here: the allocator gives each output to one input at a time, and an input
starts issuing a packet only while no other input's flit for the same output still waits
there untaken: `first_ok[i]` is low while the output that input i's next flit is for
(`issue_port[i]`) holds a flit it does not take. So at most one flit waits per output.

Ports (N inputs, N outputs):
  r[i]          In   valid, data, sop, eop, bytes, bad, void, port, vl; ready Out
  issue_port[i] In   the output input i's next flit is for
  first_ok[i]   Out  input i may issue the first flit of a packet
  out[o]        Out  valid, data, sop, eop, bytes, bad, vl; ready In
Combinational.
"""
from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import wiring

from contracts import switch as specs
from contracts.config import SwitchConfig
from contracts.streams import FLIT
from hw.common.logic import or_all
from hw.common.ports import signature

__all__ = ["Crossbar"]

_FLIT = FLIT


class Crossbar(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        super().__init__(signature(specs.crossbar(cfg)))

    def elaborate(self, platform):
        m = Module()
        n = self.cfg.ports
        r, out = self.r, self.out
        for o in range(n):
            here = [Signal(name=f"here{i}_{o}") for i in range(n)]      # input i's flit is for output o
            for i in range(n):
                m.d.comb += here[i].eq(r[i].valid & ~r[i].void & (r[i].port == o))
            m.d.comb += out[o].valid.eq(Cat(here).any())
            for k in _FLIT + ("vl",):
                m.d.comb += getattr(out[o], k).eq(or_all(Mux(here[i], getattr(r[i], k), 0) for i in range(n)))
        waiting = Signal(n)                      # an output with a flit it does not take
        m.d.comb += waiting.eq(Cat(out[o].valid & ~out[o].ready for o in range(n)))
        for i in range(n):
            m.d.comb += [r[i].ready.eq(r[i].void | Array(x.ready for x in out)[r[i].port]),
                         self.first_ok[i].eq(~waiting.bit_select(self.issue_port[i], 1))]
        return m
