"""Golden model of VL arbitration for one output (IBA §7.6.9); rules in hw/switch/vlarb.py's
docstring and docs/switch-core.md. The choice is made a cycle ahead: the one offered in a
cycle was made in the cycle before, from that cycle's readiness and the tables' state after
every earlier `sent`; a `sent` consumes the entry behind the choice it was offered, and
`sent` in two consecutive cycles is a contract violation."""
from __future__ import annotations

__all__ = ["VLArbModel",]

HIGH_UNIT_BLOCKS = 64


class _Table:
    def __init__(self, entries):
        self.e = entries
        self.ptr = entries - 1
        self.rem = 0

    def pick(self, entries: list[tuple[int, int]], ready: set[int]):
        """Index of the entry to serve, or None."""
        start = self.ptr if self.rem else (self.ptr + 1) % self.e
        for j in range(self.e):
            k = (start + j) % self.e
            vl, w = entries[k]
            if vl in ready and (w or (k == self.ptr and self.rem)):
                return k
        return None

    def consume(self, k, entries, blocks):
        base = self.rem if (k == self.ptr and self.rem) else entries[k][1]
        self.ptr, self.rem = k, max(base - blocks, 0)


class VLArbModel:
    def __init__(self, data_vls: int, entries: int, block_bits: int = 8):
        self.nvl, self.e = data_vls, entries
        self.high, self.low = _Table(entries), _Table(entries)
        self.hcount = 0
        self.chosen = None          # ("high" | "low", entry, blocks) of the last cycle's `sent`
        self.offer = (0, 0, None)   # the choice offered this cycle: (sel_valid, sel_vl, (table, entry) or None)
        self.cycle = 0

    def step(self, inp: dict) -> dict:
        valid, vl, behind = self.offer
        out = {"sel_valid": valid, "sel_vl": vl}
        ent = {t: [(inp[f"{t}__{k}"] & 0xF, inp[f"{t}__{k}"] >> 4 & 0xFF) for k in range(self.e)]
               for t in ("high", "low")}
        # the packet sent last cycle consumes its entry (with this cycle's weights)
        if self.chosen is not None:
            if inp["sent"]:
                raise ValueError(f"VLArbModel: `sent` in consecutive cycles ({self.cycle - 1} and {self.cycle}); "
                                 "the choice offered in the second did not see the first")
            table, k, n = self.chosen
            if table == "high":
                self.high.consume(k, ent["high"], n)
                self.hcount = min(self.hcount + n, 255 * HIGH_UNIT_BLOCKS)
            else:
                self.low.consume(k, ent["low"], n)
                self.hcount = 0
        self.chosen = (*behind, inp["blocks"]) if inp["sent"] and valid and behind is not None else None
        # the choice for the next cycle, from this cycle's readiness
        ready = {v for v in range(self.nvl) if inp["ready"] >> v & 1}
        hk = self.high.pick(ent["high"], ready)
        lk = self.low.pick(ent["low"], ready)
        limit = inp["limit"]
        may_high = limit == 255 or self.hcount == 0 or self.hcount < limit * HIGH_UNIT_BLOCKS or lk is None
        use_high = hk is not None and may_high
        if inp["ready15"]:
            self.offer = (1, 15, None)
        elif use_high:
            self.offer = (1, ent["high"][hk][0], ("high", hk))
        elif lk is not None:
            self.offer = (1, ent["low"][lk][0], ("low", lk))
        else:
            self.offer = (0, 0, None)
        self.cycle += 1
        return out
