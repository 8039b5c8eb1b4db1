"""BlockRAM: the project's one memory primitive (docs/fpga.md, "Block RAM"): one write port, one
read port, read latency 2 (contracts/common.py BLOCK_RAM_READ_LATENCY), written for the
ECP5's DP16KD with its output register.

    cycle t      r_addr, r_en          the array read (stage 1: the DP16KD's own read register)
    cycle t + 1                        the output register (stage 2: REGMODE OUTREG)
    cycle t + 2  r_data                the word at r_addr after cycle t's write

A read and a write of the same address in one cycle: the read sees the written lanes (a
write "before" the read, as the RTL and the models read it). The DP16KD gives such a read no
defined value (Lattice TN1264, "Memory Usage Guide for ECP5", dual-port collisions), so
this block bypasses: the written lanes and a hit flag go down two registers beside the
array, and a lane-wide 2:1 multiplexer after the output register picks them: one LUT level
in front of the consumer. `r_en` low: nothing is read, the last read's word stays (the
array's read register holds; the output register copies it again).

Synthesis: the array is an Amaranth Memory with a synchronous, non-transparent read port,
which yosys maps to DP16KD (or to LUT RAM when small) with REGMODE "NOREG" (yosys's ECP5
memory mapping writes no other); the output register is a plain register of the read data,
without reset or enable, which tools/outreg.py folds into the DP16KD as REGMODE "OUTREG"
after `synth_ecp5` (every flow of tools/fpga.py, tools/timing.py and tools/gate.py runs it).
So simulation, gate-level netlist and FPGA are one design. Without the fold, a DP16KD read
costs ~5.7 ns of a 6.67 ns cycle at 150 MHz before any logic; with it, ~0.93 ns (the
prjtrellis timing database, speed 6).

Nothing here is reset: a reset leaves the memory, the read data and the bypass as they are
(the model, models/block_ram.py, likewise).
"""
from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory

from contracts import common as specs
from hw.common.ports import signature

__all__ = ["BlockRAM"]


class BlockRAM(wiring.Component):
    def __init__(self, width: int, depth: int, granularity: int = 0, init=()):
        if width < 1 or depth < 2:
            raise ValueError(f"BlockRAM: width {width} and depth {depth}: need width >= 1 and depth >= 2")
        if granularity and width % granularity:
            raise ValueError(f"BlockRAM: width {width} is not a multiple of granularity {granularity}")
        if len(init) > depth:
            raise ValueError(f"BlockRAM: {len(init)} initial words for a depth of {depth}")
        self.width, self.depth, self.granularity, self.init = width, depth, granularity, tuple(init)
        self.lanes = width // granularity if granularity else 1
        super().__init__(signature(specs.block_ram(width, depth, granularity)))

    def elaborate(self, platform):
        m = Module()
        lanes, g = self.lanes, self.width // self.lanes
        # no_rw_check: a read of the address written in the same cycle may return anything
        # (the bypass below answers it), so yosys adds no collision logic after the array
        m.submodules.array = array = Memory(shape=self.width, depth=self.depth, init=list(self.init),
                                            attrs={"no_rw_check": 1})
        wp = array.write_port(granularity=self.granularity or None)
        rp = array.read_port(domain="sync")            # stage 1: not transparent (the DP16KD's is not)
        m.d.comb += [wp.addr.eq(self.w_addr), wp.data.eq(self.w_data), wp.en.eq(self.w_en),
                     rp.addr.eq(self.r_addr), rp.en.eq(self.r_en)]

        # stage 1 beside the array: which lanes the same cycle's write gave the address read
        hit1 = Signal(lanes, reset_less=True)
        wd1 = Signal(self.width, reset_less=True)
        with m.If(self.r_en):
            m.d.sync += [hit1.eq(Mux(self.w_addr == self.r_addr, self.w_en, 0)), wd1.eq(self.w_data)]

        # stage 2: the output register (folded into the DP16KD: no reset, no enable), and the
        # bypass beside it
        q = Signal(self.width, reset_less=True, name="outreg")
        hit2 = Signal(lanes, reset_less=True)
        wd2 = Signal(self.width, reset_less=True)
        m.d.sync += [q.eq(rp.data), hit2.eq(hit1), wd2.eq(wd1)]
        m.d.comb += self.r_data.eq(Cat(Mux(hit2[k], wd2[k * g:(k + 1) * g], q[k * g:(k + 1) * g])
                                       for k in range(lanes)))
        return m
