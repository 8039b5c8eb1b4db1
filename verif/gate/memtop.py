"""Memories shaped like the switch's, for checking the DP16KD model (verif/gate/dp16kd_sim.v)
against yosys's block-RAM mapping: tests/test_gate_bram.py synthesizes this top with
`synth_ecp5` and simulates netlist and RTL side by side (verif/gate/mem_equiv_tb.v).

  lft  32 x 256, initialised, byte enables, one plain and one transparent read port (x36 PDP)
  voq  72 x 512, no init (two x36 PDP side by side)
  b8    8 x 2048, initialised (x9)
  h16  16 x 1024, initialised, a plain and a transparent read port (x18)
"""
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["MemTop"]


class MemTop(wiring.Component):
    def __init__(self):
        super().__init__({"wa": In(11), "wd": In(72), "we": In(4), "wen": In(4), "ra": In(11).array(4), "ren": In(4),
                          "q0": Out(32), "q1": Out(32), "q2": Out(72), "q3": Out(8), "q4": Out(16), "q5": Out(16)})

    def elaborate(self, platform):
        m = Module()
        init = [(0xFFFFFFFF if k % 3 else k * 0x01010101) & 0xFFFFFFFF for k in range(256)]
        m.submodules.lft = lft = Memory(shape=32, depth=256, init=init)
        w = lft.write_port(granularity=8)
        r0 = lft.read_port(domain="sync")
        r1 = lft.read_port(domain="sync", transparent_for=(w,))
        m.d.comb += [w.addr.eq(self.wa), w.data.eq(self.wd[:32]), w.en.eq(self.we & self.wen[0].replicate(4)),
                     r0.addr.eq(self.ra[0]), r1.addr.eq(self.ra[1]), r0.en.eq(self.ren[0]),
                     self.q0.eq(r0.data), self.q1.eq(r1.data)]
        m.submodules.voq = voq = Memory(shape=72, depth=512, init=[])
        w2, r2 = voq.write_port(), voq.read_port(domain="sync")
        m.d.comb += [w2.addr.eq(self.wa), w2.data.eq(self.wd), w2.en.eq(self.wen[1]), r2.addr.eq(self.ra[2]),
                     r2.en.eq(self.ren[2]), self.q2.eq(r2.data)]
        m.submodules.b8 = b8 = Memory(shape=8, depth=2048, init=[k * 7 & 0xFF for k in range(2048)])
        w3, r3 = b8.write_port(), b8.read_port(domain="sync")
        m.d.comb += [w3.addr.eq(self.wa), w3.data.eq(self.wd[:8]), w3.en.eq(self.wen[2]), r3.addr.eq(self.ra[3]),
                     self.q3.eq(r3.data)]
        m.submodules.h16 = h16 = Memory(shape=16, depth=1024, init=[k ^ 0x5A5A for k in range(1024)])
        w4 = h16.write_port()
        r4, r5 = h16.read_port(domain="sync"), h16.read_port(domain="sync", transparent_for=(w4,))
        m.d.comb += [w4.addr.eq(self.wa), w4.data.eq(self.wd[:16]), w4.en.eq(self.wen[3]), r4.addr.eq(self.ra[0]),
                     r5.addr.eq(self.ra[1]), r4.en.eq(self.ren[3]), self.q4.eq(r4.data), self.q5.eq(r5.data)]
        return m
