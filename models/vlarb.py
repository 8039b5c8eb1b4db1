"""Golden model of VL arbitration for one output (IBA §7.6.9); rules in hw/switch/vlarb.py's
docstring and docs/switch-core.md. Combinational selection; the state moves one clock
after `sent` (the choice is registered first), and `sent` in two consecutive cycles is a
contract violation."""
from __future__ import annotations

__all__ = ["VLArbModel", "vlarb_ports"]

HIGH_UNIT_BLOCKS = 64


def vlarb_ports(data_vls: int, entries: int):
    ins = ["ready", "ready15", "limit", "sent", "blocks"]
    ins += [f"{t}__{k}" for t in ("high", "low") for k in range(entries)]
    return ins, ["sel_valid", "sel_vl"], {"sel_vl": "sel_valid"}


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
    def __init__(self, data_vls: int, entries: int):
        self.nvl, self.e = data_vls, entries
        self.high, self.low = _Table(entries), _Table(entries)
        self.hcount = 0
        self.chosen = None          # ("high" | "low", entry, blocks) of the last cycle's `sent`
        self.cycle = 0

    def step(self, inp: dict) -> dict:
        ready = {v for v in range(self.nvl) if inp["ready"] >> v & 1}
        ent = {t: [(inp[f"{t}__{k}"] & 0xF, inp[f"{t}__{k}"] >> 4 & 0xFF) for k in range(self.e)]
               for t in ("high", "low")}
        hk = self.high.pick(ent["high"], ready)
        lk = self.low.pick(ent["low"], ready)
        limit = inp["limit"]
        may_high = limit == 255 or self.hcount == 0 or self.hcount < limit * HIGH_UNIT_BLOCKS or lk is None
        use_high = hk is not None and may_high
        if inp["ready15"]:
            vl = 15
        elif use_high:
            vl = ent["high"][hk][0]
        elif lk is not None:
            vl = ent["low"][lk][0]
        else:
            vl = None
        out = {"sel_valid": int(vl is not None), "sel_vl": vl or 0}
        # clock edge: the previous cycle's choice takes effect, with this cycle's weights
        if self.chosen is not None:
            if inp["sent"]:
                raise ValueError(f"VLArbModel: `sent` in consecutive cycles ({self.cycle - 1} and {self.cycle}); "
                                 "the state of the first has not moved yet")
            table, k, n = self.chosen
            if table == "high":
                self.high.consume(k, ent["high"], n)
                self.hcount = min(self.hcount + n, 255 * HIGH_UNIT_BLOCKS)
            else:
                self.low.consume(k, ent["low"], n)
                self.hcount = 0
        self.chosen = None
        if inp["sent"] and not inp["ready15"]:
            if use_high:
                self.chosen = ("high", hk, inp["blocks"])
            elif lk is not None:
                self.chosen = ("low", lk, inp["blocks"])
        self.cycle += 1
        return out
