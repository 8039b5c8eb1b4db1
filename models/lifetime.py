"""Golden model of the lifetime clocks (hw/switch/lifetime.py), from docs/reliability.md:
output o's lifetime period is 2^HOQLife units of 2^lifetime_unit_log2 cycles, the periods
counted from reset; a tick in the last cycle of each; HOQLife 20 and above never ticks
(`never`: that output has no lifetime). The switch lifetime's period is 2^LifeTimeValue
units (LifeTimeValue at least cfg.min_switch_life); `sw_tick` in the last cycle of each
quarter of it; never for 20 and above."""
from __future__ import annotations

from contracts.config import SwitchConfig

__all__ = ["LifetimeClockModel",]

INFINITE = 20


class LifetimeClockModel:
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        self.cycle = 0                           # cycles since reset

    def peek(self, inp: dict) -> dict:
        return self.step(inp, commit=False)

    def step(self, inp: dict, commit: bool = True) -> dict:
        u = self.cfg.lifetime_unit_log2
        tick = never = 0
        for o in range(self.cfg.ports):
            h = inp[f"hoq_life__{o}"]
            if h < INFINITE and (self.cycle + 1) % (1 << (u + h)) == 0:
                tick |= 1 << o
            if h >= INFINITE:
                never |= 1 << o
        life = inp["sw_life"]
        quarter = (1 << (u + max(life, self.cfg.min_switch_life))) // 4
        sw_tick = int(life < INFINITE and (self.cycle + 1) % quarter == 0)
        if commit:
            self.cycle += 1
        return {"tick": tick, "never": never, "sw_tick": sw_tick}
