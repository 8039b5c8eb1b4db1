"""A clock for a combinational block under cocotb: the testbenches run on `clk` and `rst`,
which Amaranth emits only for designs that use the sync domain. `Clocked(block)` has the
block's ports under the same names plus `tick` (a register toggling every cycle)."""
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

__all__ = ["Clocked"]


class Clocked(wiring.Component):
    def __init__(self, inner: wiring.Component):
        self.inner = inner
        super().__init__({**dict(inner.signature.members), "tick": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.block = self.inner
        outer = {p: v for p, _f, v in self.signature.flatten(self)}
        for path, flow, inner in self.inner.signature.flatten(self.inner):
            if flow.flow == wiring.Flow.Out:
                m.d.comb += outer[path].eq(inner)
            else:
                m.d.comb += inner.eq(outer[path])
        t = Signal()
        m.d.sync += t.eq(~t)
        m.d.comb += self.tick.eq(t)
        return m
