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
           "CRCEngine", "CRCCheck", "check_constants", "ICRCGenerator", "icrc_mask_bytes", "CRCBank",
           "crc16_wire", "swap_last_two"]


def crc16_wire(value, msb_first: bool):
    """The two wire bytes (first, second) of a 16-bit CRC value: least-significant byte first,
    or most-significant first (SwitchConfig.crc_msb_first, for the VCRC and LPCRC)."""
    lo, hi = value[:8], value[8:16]
    return (hi, lo) if msb_first else (lo, hi)


def swap_last_two(data, nbytes, width: int):
    """`data` (a W-bit flit, byte 0 the most significant) with its bytes nbytes - 2 and
    nbytes - 1 exchanged: a 16-bit field at the end of a packet sent most-significant byte
    first becomes the least-significant-first field the residue check expects. With
    nbytes < 2 nothing moves."""
    nb = width // 8
    lanes = [data.word_select(nb - 1 - j, 8) for j in range(nb)]      # lane j: byte j of the flit
    out = []
    for j in range(nb):
        v = lanes[j]
        if j + 1 < nb:
            v = Mux(nbytes == j + 2, lanes[j + 1], v)
        if j >= 1:
            v = Mux(nbytes == j + 1, lanes[j - 1], v)
        out.append(v)
    return Cat(*reversed(out))


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

    `granule` (a power of two): nbytes is always a multiple of it (its lower bits are
    ignored), so the cascade has no stages for smaller chunks. IBA data packets are 4-byte
    multiples up to the ICRC and the VCRC (PktLen counts words, IBA §7.7.8), so CRCs that
    stop there use granule 4: half the stages at W=64.
    """

    def __init__(self, params: CRCParams, width: int, granule: int = 1):
        if width % 8 or (width // 8) & (width // 8 - 1):
            raise ValueError(f"CRCEngine: width must be a power-of-two number of bytes, got {width}")
        if granule < 1 or granule & (granule - 1) or granule > width // 8:
            raise ValueError(f"CRCEngine: granule must be a power of two in 1..{width // 8}, got {granule}")
        self.params = params
        self.width = width
        self.granule = granule
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
            if chunk > nb or chunk < self.granule:
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


def check_constants(p: CRCParams, nb: int) -> list[int]:
    """C[k], k = 0..nb: the raw CRC register a message that ends in its own CRC leaves after
    k zero bytes more. Appending a zero byte is an invertible linear map A of the register
    (the polynomial has an x^0 term), so `register == R` iff `A^k register == A^k R`."""
    raw = p.residue ^ p.xorout
    return [serial_update(p, raw, bytes(k)) for k in range(nb + 1)]


class CRCCheck(wiring.Component):
    """Residue check of a CRC-protected message (a packet ending in its VCRC), one flit per
    cycle: `ok` in the cycle of the last flit.

    CRCEngine's `crc` over a partial last flit goes through a cascade of one XOR network
    per binary digit of `nbytes`, each fed by the one before: the longest path of the
    receive parser. The check does not need that value. Here the bytes after `nbytes` are
    zeroed and the whole flit goes through one full-width network; a message of n bytes
    followed by k zero bytes leaves A^k of its register (A: one zero byte), so the message
    is good iff the result equals C[k] = A^k R (`check_constants`), a 16-bit compare with a
    constant per byte count, selected by `nbytes`.

    Ports (sync domain): valid, first, data (W), nbytes In (as CRCEngine; nbytes of a non-
    last flit = W/8, values above W/8 count as W/8); ok Out (combinational): the message up
    to and including this flit, ended here, leaves the CRC's residue.
    """

    def __init__(self, params: CRCParams, width: int):
        if width % 8 or (width // 8) & (width // 8 - 1):
            raise ValueError(f"CRCCheck: width must be a power-of-two number of bytes, got {width}")
        self.params, self.width = params, width
        nb = width // 8
        super().__init__({"valid": In(1), "first": In(1), "data": In(width),
                          "nbytes": In(nb.bit_length()), "ok": Out(1)})

    def elaborate(self, platform):
        m = Module()
        p, nb = self.params, self.width // 8
        state = Signal(p.width, init=p.init)
        base = Signal(p.width)
        m.d.comb += base.eq(Mux(self.first, p.init, state))
        keep = Signal(nb)                       # byte b (0 = first, most significant) is valid
        m.d.comb += keep.eq(Cat((self.nbytes > b) for b in range(nb)))
        padded = Signal(self.width)
        m.d.comb += padded.eq(Cat(self.data.word_select(nb - 1 - b, 8) & keep[b].replicate(8)
                                  for b in reversed(range(nb))))
        full = Signal(p.width)
        m.d.comb += full.eq(crc_network(p, base, padded, nb))
        with m.If(self.valid):
            m.d.sync += state.eq(full)          # non-last flits are whole: no bytes zeroed
        consts = check_constants(p, nb)
        hits = []
        for n in range(nb + 1):
            sel = (self.nbytes >= nb) if n == nb else (self.nbytes == n)
            hits.append(sel & (full == consts[nb - n]))
        m.d.comb += self.ok.eq(Cat(*hits).any())
        return m


def icrc_mask_bytes(lnh: int) -> dict[int, int]:
    """Packet byte offset -> OR-mask of the ICRC variant fields (IBA §7.8.1).

    Local packets (LNH 2): LRH.VL. Global packets (LNH 3): the whole LRH (routers replace it),
    GRH.TClass, GRH.FlowLabel and GRH.HopLmt. Both: BTH byte 4 (FECN, BECN, Resv6). Raw
    packets (LNH 0/1) carry no ICRC and get no mask.
    """
    if lnh == 2:
        return {0: 0xF0, 8 + 4: 0xFF}
    if lnh == 3:
        return {**{k: 0xFF for k in range(8)}, 8: 0x0F, 9: 0xFF, 10: 0xFF, 11: 0xFF, 15: 0xFF, 48 + 4: 0xFF}
    return {}


class ICRCGenerator(wiring.Component):
    """ICRC (CRC-32, IBA §7.8.1) over a data packet's LRH..payload, one flit per cycle.

    The variant fields are replaced by ones on the fly: LNH is read from the sop flit (LRH
    byte 1) and latched; a flit counter places the masks.

    Ports: valid, sop, eop, data (W), bytes (valid bytes on the eop flit) In;
           crc Out (combinational, the ICRC through this flit, meaningful on eop),
           crc_q Out (registered copy, one cycle later).
    """

    def __init__(self, width: int, granule: int = 1):
        self.width = width
        self.granule = granule                   # see CRCEngine
        nb = width // 8
        super().__init__({
            "valid": In(1), "sop": In(1), "eop": In(1), "data": In(width),
            "bytes": In(nb.bit_length()),
            "crc": Out(32), "crc_q": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        W, nb = self.width, self.width // 8
        nflits = -(-(48 + 5) // nb)              # flits that can hold a masked byte
        m.submodules.engine = eng = CRCEngine(CRC32_IB, W, self.granule)
        idx = Signal(range(nflits + 1))
        lnh_q = Signal(2)
        lnh = Mux(self.sop, self.data[W - 16:W - 14], lnh_q)
        cur = Mux(self.sop, 0, idx)
        with m.If(self.valid):
            with m.If(self.sop):
                m.d.sync += lnh_q.eq(self.data[W - 16:W - 14])
            with m.If(cur < nflits):
                m.d.sync += idx.eq(cur + 1)

        def flit_mask(lnh_value, k):
            v = 0
            for off, mk in icrc_mask_bytes(lnh_value).items():
                if off // nb == k:
                    v |= mk << (8 * (nb - 1 - off % nb))
            return v

        mask = Signal(W)
        with m.Switch(Cat(cur, lnh)):
            for lnh_value in (2, 3):
                for k in range(nflits):
                    v = flit_mask(lnh_value, k)
                    if v:
                        with m.Case(k | (lnh_value << len(cur))):
                            m.d.comb += mask.eq(v)
        m.d.comb += [
            eng.valid.eq(self.valid),
            eng.first.eq(self.sop),
            eng.data.eq(self.data | mask),
            eng.nbytes.eq(Mux(self.eop, self.bytes, nb)),
            self.crc.eq(eng.crc),
            self.crc_q.eq(eng.crc_q),
        ]
        return m


class CRCBank(wiring.Component):
    """The three link CRC generators side by side on one flit stream (for verification and
    for the transmit path): VCRC and ICRC over the stream's bytes, LPCRC over the first
    4 bytes of the flit (a link packet's Op/FCTBS/VL/FCCL).

    Ports: valid, sop, eop, data, bytes In; vcrc, icrc, lpcrc Out (combinational: the CRC
    through the current flit; the LPCRC of the current flit).
    """

    def __init__(self, width: int):
        self.width = width
        super().__init__({
            "valid": In(1), "sop": In(1), "eop": In(1), "data": In(width),
            "bytes": In((width // 8).bit_length()),
            "vcrc": Out(16), "icrc": Out(32), "lpcrc": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        W, nb = self.width, self.width // 8
        m.submodules.vcrc = v = CRCEngine(CRC16_IB, W)
        m.submodules.icrc = i = ICRCGenerator(W)
        m.d.comb += [
            v.valid.eq(self.valid), v.first.eq(self.sop), v.data.eq(self.data),
            v.nbytes.eq(Mux(self.eop, self.bytes, nb)),
            i.valid.eq(self.valid), i.sop.eq(self.sop), i.eop.eq(self.eop), i.data.eq(self.data),
            i.bytes.eq(self.bytes),
            self.vcrc.eq(v.crc), self.icrc.eq(i.crc),
            self.lpcrc.eq(crc_network(CRC16_IB, Const(CRC16_IB.init, 16), self.data[W - 32:], 4)
                          ^ CRC16_IB.xorout),
        ]
        return m
