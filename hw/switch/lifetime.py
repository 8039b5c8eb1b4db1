"""The lifetime clocks (docs/reliability.md), counted from reset.

HOQLife: one tick per output port at the end of each period of 2^HOQLife lifetime units
(IBA §18.2.5.4: 4.096 us x 2^HOQLife; here 2^cfg.lifetime_unit_log2 cycles a unit); no tick
for HOQLife 20..31 (infinite). The request builder counts a queue head's age in its output's
ticks.

SwitchLifetime (SwitchInfo:LifeTimeValue, IBA §18.2.5.4): one tick at the end of each
quarter of its period of 2^LifeTimeValue units (values below cfg.min_switch_life act as it);
none for 20..31. The input buffers stamp each packet with the count of these ticks.

  hoq_life[o]  In   HOQLife of output o (register HOQ_LIFE)
  tick         Out  bit o: output o's period ends this cycle
  never        Out  bit o: output o's HOQLife is 20..31 (no lifetime: no VL may stay stalled)
  sw_life      In   LifeTimeValue (register SWITCH_LIFE)
  sw_tick      Out  a quarter of the switch lifetime ends this cycle
"""
from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import wiring

from contracts import switch as specs
from contracts.config import SwitchConfig
from hw.common.ports import signature

__all__ = ["LifetimeClock", "INFINITE"]

INFINITE = 20                # HOQLife / LifeTimeValue values from 20 up: never


class LifetimeClock(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        super().__init__(signature(specs.lifetime_clock(cfg)))

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
        # the switch lifetime's quarter period: 2^(LifeTimeValue + u - 2) cycles
        lo = self.cfg.min_switch_life
        s = self.sw_life
        eff = Signal(5)
        m.d.comb += eff.eq(Mux(s < lo, lo, s))
        shift = Signal(range(32 + u))            # (never negative: see SwitchConfig.min_switch_life)
        qmask = Signal(width)
        m.d.comb += [shift.eq(eff + u - 2), qmask.eq((Const(1, width + 1) << shift)[:width] - 1)]
        m.d.comb += self.sw_tick.eq((s < INFINITE) & ((now & qmask) == qmask))
        return m
