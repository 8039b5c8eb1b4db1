"""Parallel CRC engines: one W-bit flit per cycle, with a byte count on the last flit.

The XOR network is derived at elaboration time from a bit-serial definition of the CRC
(`serial_update`, written from the polynomial, independent of the table-driven golden model
in models/crc.py). Each output bit is the parity of a masked input vector.

A flit carries `nbytes` valid bytes at its front (byte 0 = most significant). The update
for k bytes is built as a cascade over the binary digits of k: stage j (2^j bytes) consumes
the next 2^j bytes when bit j of k is set. That needs log2(W/8)+1 fixed XOR matrices instead
of W/8 of them.
"""
from __future__ import annotations

from functools import lru_cache

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["CRCParams", "CRC32_IB", "CRC16_IB", "serial_update", "crc_matrix", "crc_network",
           "CRCEngine"]


class CRCParams:
    """A reflected CRC: `poly` is the normal (MSB-first) polynomial without its x^n term."""

    def __init__(self, name, width, poly, init, xorout):
        self.name, self.width, self.poly, self.init, self.xorout = name, width, poly, init, xorout

    @property
    def poly_reflected(self):
        return int(f"{self.poly:0{self.width}b}"[::-1], 2)

    @property
    def residue(self):
        """Finalised CRC over a message followed by its own CRC, LSB first (constant)."""
        st = serial_update(self, self.init, b"\x00")
        wire = (st ^ self.xorout).to_bytes(self.width // 8, "little")
        return serial_update(self, self.init, b"\x00" + wire) ^ self.xorout


CRC32_IB = CRCParams("icrc", 32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF)   # IBA §7.8.1
CRC16_IB = CRCParams("vcrc", 16, 0x100B, 0xFFFF, 0xFFFF)               # IBA §7.8.2, §7.9.4


def serial_update(p: CRCParams, state: int, data: bytes) -> int:
    """Bit-serial reflected LFSR: each byte enters least-significant bit first."""
    pr = p.poly_reflected
    for byte in data:
        for i in range(8):
            fb = (state ^ (byte >> i)) & 1
            state >>= 1
            if fb:
                state ^= pr
    return state


@lru_cache(maxsize=None)
def crc_matrix(p: CRCParams, nbytes: int) -> tuple[int, ...]:
    """Row masks of the linear map (state, data) -> state' for `nbytes` data bytes.

    Input vector bit order: state bits 0..n-1, then the data as an 8*nbytes-bit integer
    whose most significant byte is the first byte. Row o is the mask of inputs XORed into
    output bit o.
    """
    n = p.width
    cols = [serial_update(p, 1 << i, bytes(nbytes)) for i in range(n)]
    cols += [serial_update(p, 0, (1 << b).to_bytes(nbytes, "big")) for b in range(8 * nbytes)]
    rows = []
    for o in range(n):
        m = 0
        for i, c in enumerate(cols):
            if (c >> o) & 1:
                m |= 1 << i
        rows.append(m)
    return tuple(rows)


def crc_network(p: CRCParams, state, data, nbytes: int):
    """Combinational state' for a fixed `nbytes`-byte chunk (`data` is 8*nbytes wide)."""
    vec = Cat(state, data)
    return Cat(*[(vec & Const(m, len(vec))).xor() for m in crc_matrix(p, nbytes)])


class CRCEngine(wiring.Component):
    """Running CRC over a flit stream.

    Ports (all in the `sync` domain):
      valid   In(1)   a flit is presented this cycle
      first   In(1)   the flit starts a new message (state seeded with `init`)
      data    In(W)   the flit; byte 0 of the flit in the most significant byte
      nbytes  In(b)   valid bytes at the front of the flit, 1..W/8 (W/8 on non-last flits)
      crc     Out(n)  combinational: finalised CRC of the message up to and including this
                      flit (valid in the same cycle as the flit)
      crc_q   Out(n)  registered: `crc` of the last valid flit, one cycle later
    """

    def __init__(self, params: CRCParams, width: int):
        if width % 8 or (width // 8) & (width // 8 - 1):
            raise ValueError(f"CRCEngine: width must be a power-of-two number of bytes, got {width}")
        self.params = params
        self.width = width
        nb = width // 8
        super().__init__({
            "valid": In(1),
            "first": In(1),
            "data": In(width),
            "nbytes": In(nb.bit_length()),
            "crc": Out(params.width),
            "crc_q": Out(params.width),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        nb = self.width // 8
        state = Signal(p.width, init=p.init)
        base = Signal(p.width)
        m.d.comb += base.eq(Mux(self.first, p.init, state))

        # Cascade over the binary digits of nbytes, largest chunk first.
        cur = base
        rest = self.data
        for j in reversed(range(nb.bit_length())):
            chunk = 1 << j
            if chunk > nb:
                continue
            take = self.nbytes[j]
            top = rest[len(rest) - 8 * chunk:]
            nxt_state = Signal(p.width, name=f"st{chunk}")
            m.d.comb += nxt_state.eq(Mux(take, crc_network(p, cur, top, chunk), cur))
            if chunk < len(rest) // 8:
                nxt_rest = Signal(len(rest), name=f"rest{chunk}")
                m.d.comb += nxt_rest.eq(Mux(take, rest << (8 * chunk), rest))
                rest = nxt_rest
            cur = nxt_state

        m.d.comb += self.crc.eq(cur ^ p.xorout)
        with m.If(self.valid):
            m.d.sync += state.eq(cur)
            m.d.sync += self.crc_q.eq(cur ^ p.xorout)
        return m
