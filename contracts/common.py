"""Port specifications of the project's primitives shared by every block (hw/common/)."""
from __future__ import annotations

from contracts.ports import In, Model, Out, Spec

__all__ = ["block_ram", "BLOCK_RAM_READ_LATENCY"]

# a read's address in cycle t, its data in cycle t + 2: the block RAM's array read, then its
# output register (docs/fpga.md, "Block RAM")
BLOCK_RAM_READ_LATENCY = 2


def block_ram(width: int, depth: int, granularity: int = 0, init: tuple = ()) -> Spec:
    """hw/common/bram.py BlockRAM: one write port (`w_en` per lane of `granularity` bits, one
    lane when 0), one read port (`r_en`: the read is taken; otherwise the last read's data
    stays), read latency BLOCK_RAM_READ_LATENCY, a write seen by a read of the same cycle.
    `_known` (model only): a read has reached `r_data` since power-up (before, the word is
    undefined: 0 in the DP16KD, X in a Verilog simulation)."""
    lanes = width // granularity if granularity else 1
    return Spec({"w_en": In(lanes), "w_addr": In(range(depth)), "w_data": In(width),
                 "r_en": In(1), "r_addr": In(range(depth)), "r_data": Out(width), "_known": Model(1)},
                {"r_data": "_known"})
