"""The endpoint side of IBA congestion control (Annex A10), as a model the benchmarks' link
peers use (scenarios/cc.py, `make bench-cc`; docs/reliability.md, "Congestion control").

A destination that receives a packet with BTH.FECN set answers its source with a packet that
has BTH.BECN set (A10.2.2: in an acknowledgement or a congestion notification packet; here a
UD packet of its own). The source keeps, per flow (per QP in A10's QP-based mode), a
congestion control table index CCTI:

  a BECN for the flow     CCTI := min(CCTI + CCTI_Increase, CCTI_Limit)
  every CCTI_Timer cycles CCTI := max(CCTI - 1, CCTI_Min)   (one timer per flow)
  after each packet       the flow waits CCT[CCTI] cycles before its next packet may start

The table's entries are IBA's CCT entries (CCT_Shift:2, CCT_Multiplier:14), the delay
multiplier << shift. IBA leaves the unit of the delay to the CA; here it is one clock cycle
of the switch (a flit time at line rate). `linear_cct(step, limit)` gives entry k the delay
k * step.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CCSettings", "CCFlow", "linear_cct", "cct_entry"]


def cct_entry(shift: int, multiplier: int) -> int:
    """A CongestionControlTableEntry (A10.4.3.9): 2 bits of shift, 14 of multiplier."""
    if not 0 <= shift < 4 or not 0 <= multiplier < 1 << 14:
        raise ValueError(f"CCT entry: shift {shift} must be 0..3 and multiplier {multiplier} 0..16383")
    return shift << 14 | multiplier


def linear_cct(step: int, limit: int) -> list[int]:
    """Entries 0..limit with delay k * step (the multiplier, shifted down to fit 14 bits)."""
    out = []
    for k in range(limit + 1):
        d, s = k * step, 0
        while d >= 1 << 14:
            if s == 3:
                raise ValueError(f"linear_cct: a delay of {k * step} does not fit a CCT entry")
            d, s = d >> 1, s + 1
        out.append(cct_entry(s, d))
    return out


@dataclass
class CCSettings:
    """CACongestionEntry (A10.4.3.8) and the CongestionControlTable (A10.4.3.9) of a source."""
    cct: list[int] = field(default_factory=lambda: linear_cct(8, 127))
    ccti_increase: int = 1
    ccti_timer: int = 256            # cycles between decrements
    ccti_min: int = 0

    def __post_init__(self):
        if not self.cct:
            raise ValueError("CCSettings: the congestion control table is empty")
        if not 0 <= self.ccti_min < len(self.cct):
            raise ValueError(f"CCSettings: ccti_min {self.ccti_min} beyond the table ({len(self.cct)} entries)")
        if self.ccti_timer < 1 or self.ccti_increase < 0:
            raise ValueError(f"CCSettings: ccti_timer {self.ccti_timer} must be >= 1 and ccti_increase "
                             f"{self.ccti_increase} >= 0")

    @property
    def ccti_limit(self) -> int:
        return len(self.cct) - 1

    def delay(self, ccti: int) -> int:
        e = self.cct[ccti]
        return (e & 0x3FFF) << (e >> 14)


class CCFlow:
    """One flow's throttle. `now` is the cycle; call `tick(now)` every cycle."""

    def __init__(self, s: CCSettings):
        self.s = s
        self.ccti = s.ccti_min
        self.next_ok = 0                 # the first cycle the next packet may start
        self.becns = 0
        self.max_ccti = self.ccti
        self._timer = 0

    def tick(self, now: int) -> None:
        self._timer += 1
        if self._timer >= self.s.ccti_timer:
            self._timer = 0
            self.ccti = max(self.ccti - 1, self.s.ccti_min)

    def on_becn(self) -> None:
        self.becns += 1
        self.ccti = min(self.ccti + self.s.ccti_increase, self.s.ccti_limit)
        self.max_ccti = max(self.max_ccti, self.ccti)

    def ready(self, now: int) -> bool:
        return now >= self.next_ok

    def sent(self, now: int) -> None:
        """A packet of the flow started at `now`."""
        self.next_ok = now + self.s.delay(self.ccti)
