"""Golden model of the block RAM primitive (hw/common/bram.py), from its description: a memory
of `depth` words; a read asked in cycle t shows its word in cycle t + 2, the word as cycle t's
write left it (a write and a read of one address in one cycle: the read sees the written
lanes); a cycle without a read keeps the last read's word; before the first read the word is
undefined (`_known` 0). A reset changes nothing. An
address at or beyond the depth is refused (ValueError): the RTL's word there is undefined."""
from __future__ import annotations

__all__ = ["BlockRAMModel"]


class BlockRAMModel:
    def __init__(self, width: int, depth: int, granularity: int = 0, init=()):
        self.width, self.depth = width, depth
        self.lane_bits = granularity or width
        self.lanes = width // self.lane_bits
        self.words = list(init) + [0] * (depth - len(init))
        self.read = None                  # the word the last read took (on r_data a cycle later)
        self.shown = None                 # r_data now (None: no read yet, undefined)

    def _out(self) -> dict:
        return {"r_data": self.shown or 0, "_known": int(self.shown is not None)}

    def peek(self, inp: dict) -> dict:
        return self._out()

    def step(self, inp: dict) -> dict:
        out = self._out()
        self.shown = self.read
        en, addr = inp["w_en"], inp["w_addr"]
        for name, on in (("w_addr", en), ("r_addr", inp["r_en"])):
            if on and inp[name] >= self.depth:
                raise ValueError(f"BlockRAMModel: {name} {inp[name]} beyond the depth {self.depth} (the RTL's "
                                 "word there is undefined: keep addresses below the depth)")
        if en:
            word, g = self.words[addr], self.lane_bits
            for k in range(self.lanes):
                if en >> k & 1:
                    mask = ((1 << g) - 1) << (k * g)
                    word = (word & ~mask) | (inp["w_data"] & mask)
            self.words[addr] = word
        if inp["r_en"]:
            self.read = self.words[inp["r_addr"]]
        return out
