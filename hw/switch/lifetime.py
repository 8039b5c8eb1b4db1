"""The lifetime clock (docs/reliability.md): one tick per output port at the end of each
period of 2^HOQLife lifetime units (IBA §18.2.5.4: 4.096 us x 2^HOQLife; here
2^cfg.lifetime_unit_log2 cycles a unit), counted from reset; no tick for HOQLife 20..31
(infinite). The request builder counts a queue head's age in its output's ticks.

  hoq_life[o]  In   HOQLife of output o (register HOQ_LIFE)
  tick         Out  bit o: output o's period ends this cycle
  never        Out  bit o: output o's HOQLife is 20..31 (no lifetime: no VL may stay stalled)
"""
from amaranth.hdl import Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.common.config import SwitchConfig

__all__ = ["LifetimeClock", "INFINITE"]

INFINITE = 20                # HOQLife values from 20 up: never


class LifetimeClock(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        super().__init__({"hoq_life": In(5).array(cfg.ports), "tick": Out(cfg.ports), "never": Out(cfg.ports)})

    def elaborate(self, platform):
        m = Module()
        u = self.cfg.lifetime_unit_log2
        width = u + INFINITE
        now = Signal(width)                      # cycles since reset, wrapping
        m.d.sync += now.eq(now + 1)
        for o in range(self.cfg.ports):
            h = self.hoq_life[o]
            mask = Signal(width, name=f"mask{o}")
            m.d.comb += mask.eq((Const(1, width + 1) << (h + u))[:width] - 1)
            m.d.comb += [self.tick[o].eq((h < INFINITE) & ((now & mask) == mask)), self.never[o].eq(h >= INFINITE)]
        return m
