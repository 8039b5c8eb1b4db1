"""Text report over a UART: a fixed template of literal characters and hexadecimal fields,
sent every `period` cycles (docs/fpga.md). Field values are captured together when a report
starts, so one report is one consistent snapshot.

    Report(fields, template, divisor, period)

`template` is a list of items: a str (literal text) or (field index, digits) for that many
hex digits of the field, most significant first. `fields`: Amaranth values (up to 32 bits
shown). Ports: tx Out (the UART line), busy Out (a report is being sent).
"""
from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import Out

from hw.board.uart import UartTx

__all__ = ["Report", "render"]


def render(values: list[int], template: list) -> str:
    """The text a report shows for these field values (the specification of the report)."""
    out = []
    for it in template:
        if isinstance(it, str):
            out.append(it)
        else:
            k, digits = it
            out.append(f"{values[k] & ((1 << (4 * digits)) - 1):0{digits}X}")
    return "".join(out)


class Report(wiring.Component):
    tx: Out(1, init=1)
    busy: Out(1)

    def __init__(self, fields, template, divisor: int, period: int):
        self.fields, self.divisor, self.period = list(fields), divisor, period
        self.codes = []                       # 13 bits: literal (bit 12 = 0) or field/nibble
        for it in template:
            if isinstance(it, str):
                for ch in it:
                    if not 0 < ord(ch) < 128:
                        raise ValueError(f"Report: template character {ch!r} is not 7-bit ASCII")
                    self.codes.append(ord(ch))
            else:
                k, digits = it
                if not 0 <= k < len(self.fields) or not 1 <= digits <= 8:
                    raise ValueError(f"Report: template field {it!r}: index must be < {len(self.fields)}, "
                                     f"digits 1..8")
                for j in reversed(range(digits)):
                    self.codes.append((1 << 12) | (k << 3) | j)
        if len(self.fields) > 512:
            raise ValueError("Report: at most 512 fields")
        if period <= len(self.codes) * 10 * divisor:
            raise ValueError(f"Report: period {period} cycles is shorter than one report "
                             f"({len(self.codes)} characters at {divisor} cycles per bit)")
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.uart = uart = UartTx(self.divisor)
        m.d.comb += self.tx.eq(uart.tx)
        n = len(self.codes)
        m.submodules.rom = rom = Memory(shape=13, depth=n, init=self.codes)
        rd = rom.read_port(domain="sync")
        snap = Array(Signal(32, name=f"snap{k}") for k in range(len(self.fields)))
        timer = Signal(range(self.period))
        idx = Signal(range(n + 1))
        have = Signal()                       # rd.data holds the code of `idx`
        m.d.comb += rd.addr.eq(idx)
        m.d.sync += timer.eq(timer - 1)
        with m.If(timer == 0):
            m.d.sync += timer.eq(self.period - 1)
            with m.If(~self.busy):
                m.d.sync += [self.busy.eq(1), idx.eq(0), have.eq(0)]
                m.d.sync += [snap[k].eq(f) for k, f in enumerate(self.fields)]
        code = rd.data
        nib = snap[code[3:12]].word_select(code[:3], 4)
        hexch = Signal(8)
        m.d.comb += hexch.eq(nib + Mux(nib < 10, ord("0"), ord("A") - 10))
        m.d.comb += [uart.data.eq(Mux(code[12], hexch, code[:8])), uart.valid.eq(self.busy & have)]
        with m.If(self.busy & ~have):
            m.d.sync += have.eq(1)            # the ROM word of idx is out from now on
        with m.If(uart.valid & uart.ready):
            m.d.sync += [idx.eq(idx + 1), have.eq(0)]
            with m.If(idx == n - 1):
                m.d.sync += self.busy.eq(0)
        return m
