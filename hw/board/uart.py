"""UART transmitter, 8N1 (start bit 0, eight data bits least significant first, stop bit 1),
for the board top's report (docs/fpga.md).

Ports: data (8) In, valid In, ready Out (a byte is taken when valid & ready; ready while
idle), tx Out (the line, idle high). `divisor` clock cycles per bit (clock / baud rate).
"""
from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["UartTx"]


class UartTx(wiring.Component):
    data: In(8)
    valid: In(1)
    ready: Out(1)
    tx: Out(1, init=1)

    def __init__(self, divisor: int):
        if divisor < 2:
            raise ValueError(f"UartTx: divisor (clock cycles per bit) must be >= 2, got {divisor}")
        self.divisor = divisor
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        shift = Signal(10)                 # stop, data[7:0], start: sent from bit 0
        bits = Signal(range(11))
        timer = Signal(range(self.divisor))
        m.d.comb += self.ready.eq(bits == 0)
        with m.If(self.valid & self.ready):
            m.d.sync += [shift.eq(Cat(0, self.data, 1)), bits.eq(10), timer.eq(self.divisor - 1),
                         self.tx.eq(0)]
        with m.Elif(bits != 0):
            with m.If(timer == 0):
                m.d.sync += [timer.eq(self.divisor - 1), bits.eq(bits - 1), shift.eq(shift >> 1)]
                m.d.sync += self.tx.eq(shift[1])          # the next bit (after the stop bit: idle)
                with m.If(bits == 1):
                    m.d.sync += self.tx.eq(1)
            with m.Else():
                m.d.sync += timer.eq(timer - 1)
        return m
