"""AXI4-Lite master that plays a fixed list of register writes after reset: how a board
top with no processor programs the switch (LFT, port states; docs/endpoint.md).

For each (address, data) in order: AWVALID and WVALID are raised together (stream rules:
neither waits for the other's ready), each is dropped once its handshake is done, then the
write response is taken (BREADY high); a response other than OKAY counts in `errors`.
`done` rises after the last response. WSTRB is all ones, AWPROT 0.

Ports: m_axil_aw*/w*/b* (master side of the switch's s_axil_*), done, errors (Out).
The read channels are left idle (ARVALID 0, RREADY 1).
"""
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from contracts.streams import AXIL_ADDR_BITS

__all__ = ["AxilWriter"]


class AxilWriter(wiring.Component):
    def __init__(self, writes: list[tuple[int, int]]):
        if not writes:
            raise ValueError("AxilWriter: the list of writes is empty")
        for k, (a, d) in enumerate(writes):
            if not 0 <= a < 1 << AXIL_ADDR_BITS or a % 4:
                raise ValueError(f"AxilWriter: write {k}: address {a:#x} is not a word address below "
                                 f"{1 << AXIL_ADDR_BITS:#x}")
            if not 0 <= d <= 0xFFFFFFFF:
                raise ValueError(f"AxilWriter: write {k}: data {d:#x} does not fit 32 bits")
        self.writes = list(writes)
        a = AXIL_ADDR_BITS
        super().__init__({
            "awaddr": Out(a), "awvalid": Out(1), "awready": In(1), "awprot": Out(3),
            "wdata": Out(32), "wstrb": Out(4), "wvalid": Out(1), "wready": In(1),
            "bresp": In(2), "bvalid": In(1), "bready": Out(1),
            "araddr": Out(a), "arvalid": Out(1), "arready": In(1), "arprot": Out(3),
            "rdata": In(32), "rresp": In(2), "rvalid": In(1), "rready": Out(1),
            "done": Out(1), "errors": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        n = len(self.writes)
        m.submodules.rom = rom = Memory(shape=AXIL_ADDR_BITS + 32, depth=n,
                                        init=[(d << AXIL_ADDR_BITS) | a for a, d in self.writes])
        rd = rom.read_port(domain="sync")
        idx = Signal(range(n + 1))
        aw_pend = Signal()
        w_pend = Signal()
        loaded = Signal()                  # the ROM word of `idx` is on rd.data
        m.d.comb += [rd.addr.eq(idx), self.wstrb.eq(0xF), self.bready.eq(1), self.rready.eq(1),
                     self.awaddr.eq(rd.data[:AXIL_ADDR_BITS]), self.wdata.eq(rd.data[AXIL_ADDR_BITS:]),
                     self.awvalid.eq(aw_pend), self.wvalid.eq(w_pend)]
        with m.If(~self.done & ~loaded & ~aw_pend & ~w_pend):
            # the address was presented last cycle: the word is out now, start its write
            m.d.sync += [loaded.eq(1), aw_pend.eq(1), w_pend.eq(1)]
        with m.If(aw_pend & self.awready):
            m.d.sync += aw_pend.eq(0)
        with m.If(w_pend & self.wready):
            m.d.sync += w_pend.eq(0)
        with m.If(loaded & self.bvalid):
            with m.If(self.bresp != 0):
                m.d.sync += self.errors.eq(self.errors + 1)
            m.d.sync += [loaded.eq(0), idx.eq(idx + 1)]
            with m.If(idx == n - 1):
                m.d.sync += self.done.eq(1)
        return m
