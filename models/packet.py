"""InfiniBand packet model: header layouts, packet builder/parser, flit (de)serialiser.

Pure Python, written from the IBA wire format (IBA ch. 7, 9; docs/packet-format.md), never
from the RTL. Bytes are big-endian on the wire; in a W-bit flit, packet byte 0 is the most
significant byte of the first flit.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

from contracts.config import BTH_BYTES, GRH_BYTES, ICRC_BYTES, LRH_BYTES, VCRC_BYTES
from models.crc import CRC16, CRC32

__all__ = ["LNH", "LRH", "BTH", "FCPacket", "Flit", "DataPacket",
           "build_data_packet", "parse_data_packet", "build_link_packet", "parse_link_packet",
           "icrc_masked", "to_flits", "from_flits", "min_pktlen", "PacketError"]


class PacketError(ValueError):
    """A packet cannot be built or parsed; the message names the field or check."""


class LNH:
    """LRH Link Next Header (IBA §7.7.4)."""
    RAW = 0          # raw packet, Ethertype/RWH follows
    RAW_IPV6 = 1     # raw IPv6 header follows
    IBA_LOCAL = 2    # BTH follows
    IBA_GLOBAL = 3   # GRH follows, then BTH


def min_pktlen(lnh: int) -> int:
    """Smallest PktLen (4-byte words, LRH..ICRC) that can hold the headers LNH announces.

    IBA local: LRH 8 + BTH 12 + ICRC 4 = 6 words (IBA §7.7.8). IBA global adds the 40-byte
    GRH: 16 words. Raw: LRH + 4-byte raw header + 8 bytes = 5 words; raw IPv6: LRH + the
    40-byte IPv6 header = 12 words.
    """
    return {LNH.RAW: 5, LNH.RAW_IPV6: 12, LNH.IBA_LOCAL: 6, LNH.IBA_GLOBAL: 16}[lnh]


class _Header:
    """Big-endian bit-field header. Subclasses list FIELDS as (name, bits), MSB first."""
    FIELDS: tuple[tuple[str, int], ...] = ()
    NBYTES = 0

    def pack(self) -> bytes:
        v = 0
        for name, bits in self.FIELDS:
            x = getattr(self, name)
            if not 0 <= x < (1 << bits):
                raise PacketError(f"{type(self).__name__}.{name}={x} does not fit {bits} bits")
            v = (v << bits) | x
        return v.to_bytes(self.NBYTES, "big")

    @classmethod
    def unpack(cls, b: bytes):
        if len(b) < cls.NBYTES:
            raise PacketError(f"{cls.__name__}: need {cls.NBYTES} bytes, got {len(b)}")
        v = int.from_bytes(b[:cls.NBYTES], "big")
        vals = {}
        shift = cls.NBYTES * 8
        for name, bits in cls.FIELDS:
            shift -= bits
            vals[name] = (v >> shift) & ((1 << bits) - 1)
        return cls(**vals)

    def to_int(self) -> int:
        return int.from_bytes(self.pack(), "big")


@dataclass
class LRH(_Header):
    """Local Route Header, 8 bytes (IBA §7.7)."""
    vl: int = 0
    lver: int = 0
    sl: int = 0
    rsvd0: int = 0
    lnh: int = LNH.IBA_LOCAL
    dlid: int = 1
    rsvd1: int = 0
    pktlen: int = 6
    slid: int = 1
    FIELDS = (("vl", 4), ("lver", 4), ("sl", 4), ("rsvd0", 2), ("lnh", 2), ("dlid", 16),
              ("rsvd1", 5), ("pktlen", 11), ("slid", 16))
    NBYTES = LRH_BYTES


@dataclass
class BTH(_Header):
    """Base Transport Header, 12 bytes (IBA §9.2)."""
    opcode: int = 0x04          # RC SEND Only
    se: int = 0
    m: int = 0
    padcnt: int = 0
    tver: int = 0
    pkey: int = 0xFFFF
    fecn: int = 0
    becn: int = 0
    rsvd6: int = 0
    destqp: int = 0
    a: int = 0
    rsvd7: int = 0
    psn: int = 0
    FIELDS = (("opcode", 8), ("se", 1), ("m", 1), ("padcnt", 2), ("tver", 4), ("pkey", 16),
              ("fecn", 1), ("becn", 1), ("rsvd6", 6), ("destqp", 24), ("a", 1), ("rsvd7", 7),
              ("psn", 24))
    NBYTES = BTH_BYTES


@dataclass
class FCPacket(_Header):
    """Flow-control link packet body, 4 bytes; the LPCRC follows (IBA §7.9.4)."""
    op: int = 0          # 0 normal, 1 init
    fctbs: int = 0
    vl: int = 0
    fccl: int = 0
    FIELDS = (("op", 4), ("fctbs", 12), ("vl", 4), ("fccl", 12))
    NBYTES = 4


@dataclass(frozen=True)
class Flit:
    """One beat of the link stream: `data` holds W bits, packet byte 0 in the top byte."""
    data: int
    sop: bool
    eop: bool
    nbytes: int          # valid bytes (W/8 except possibly on eop)
    link: bool = False
    bad: bool = False


@dataclass
class DataPacket:
    """A parsed data packet."""
    lrh: LRH
    grh: bytes | None
    bth: BTH | None
    payload: bytes
    icrc: int | None      # as read from the wire (None for raw packets)
    vcrc: int
    vcrc_ok: bool
    icrc_ok: bool | None
    pktlen_ok: bool


def icrc_masked(body: bytes, lnh: int | None = None) -> bytes:
    """LRH..payload with the variant fields replaced by ones (IBA §7.8.1).

    Local packets: LRH.VL. Global packets: the whole LRH (a router replaces it with the next
    subnet's), GRH.TClass, GRH.FlowLabel, GRH.HopLmt. Both: BTH byte 4 (FECN, BECN, Resv6).
    These may change hop by hop, so the end-to-end ICRC excludes them (RoCE, whose packets
    are global ones without an LRH, starts its ICRC from 8 bytes of ones for the same
    reason). A prefix of a packet is masked as far as it goes; `lnh` overrides the LRH's own.
    """
    if lnh is None:
        lnh = body[1] & 3 if len(body) > 1 else 0
    if lnh not in (LNH.IBA_LOCAL, LNH.IBA_GLOBAL):
        return bytes(body)
    m = bytearray(body)
    marks = [(0, 0xF0)]                                            # LRH.VL
    bth_at = LRH_BYTES
    if lnh == LNH.IBA_GLOBAL:
        marks = [(k, 0xFF) for k in range(LRH_BYTES)]              # the whole LRH
        g = LRH_BYTES
        marks += [(g, 0x0F), (g + 1, 0xFF), (g + 2, 0xFF), (g + 3, 0xFF),   # TClass, FlowLabel
                  (g + 7, 0xFF)]                                   # HopLmt
        bth_at += GRH_BYTES
    marks.append((bth_at + 4, 0xFF))                               # BTH FECN/BECN/Resv6
    for off, mk in marks:
        if off < len(m):
            m[off] |= mk
    return bytes(m)


def build_data_packet(lrh: LRH, payload: bytes = b"", bth: BTH | None = None,
                      grh: bytes | None = None, *, pktlen: int | None = None, msb_first: bool = False) -> bytes:
    """Wire bytes of a data packet: LRH [GRH] [BTH] payload [ICRC] VCRC.

    For IBA packets the payload is padded to a 4-byte multiple and BTH.PadCnt set; PktLen
    is computed unless `pktlen` overrides it (to build malformed packets). The ICRC covers
    the masked LRH..payload; the VCRC covers LRH..ICRC with the final LRH (msb_first: its
    bytes most-significant first, SwitchConfig.crc_msb_first).
    """
    lrh = replace(lrh)
    if lrh.lnh in (LNH.IBA_LOCAL, LNH.IBA_GLOBAL):
        bth = replace(bth) if bth is not None else BTH()
        pad = (-len(payload)) % 4
        bth.padcnt = pad
        hdr = b""
        if lrh.lnh == LNH.IBA_GLOBAL:
            if grh is None or len(grh) != GRH_BYTES:
                raise PacketError(f"LNH=3 (IBA global) needs a {GRH_BYTES}-byte GRH")
            hdr = grh
        body_wo_lrh = hdr + bth.pack() + payload + bytes(pad)
        words = (LRH_BYTES + len(body_wo_lrh) + ICRC_BYTES) // 4
        lrh.pktlen = words if pktlen is None else pktlen
        body = lrh.pack() + body_wo_lrh
        body += CRC32.wire(icrc_masked(body))
    else:
        if len(payload) % 4:
            raise PacketError("raw packet payload must be a multiple of 4 bytes")
        words = (LRH_BYTES + len(payload)) // 4
        lrh.pktlen = words if pktlen is None else pktlen
        body = lrh.pack() + payload
    return body + CRC16.wire(body, msb_first)


def parse_data_packet(pkt: bytes, msb_first: bool = False) -> DataPacket:
    """Parse wire bytes of a data packet; checks are reported, not raised (msb_first: the
    VCRC's byte order, SwitchConfig.crc_msb_first)."""
    if len(pkt) < LRH_BYTES + VCRC_BYTES:
        raise PacketError(f"data packet of {len(pkt)} bytes is shorter than LRH + VCRC")
    lrh = LRH.unpack(pkt)
    body, vfield = pkt[:-VCRC_BYTES], pkt[-VCRC_BYTES:]
    vcrc = CRC16.field(vfield, msb_first)
    grh = bth = icrc_val = icrc_ok = None
    payload_start = LRH_BYTES
    if lrh.lnh in (LNH.IBA_LOCAL, LNH.IBA_GLOBAL):
        if lrh.lnh == LNH.IBA_GLOBAL:
            grh = body[LRH_BYTES:LRH_BYTES + GRH_BYTES]
            payload_start += GRH_BYTES
        bth = BTH.unpack(body[payload_start:])
        payload_start += BTH_BYTES
        icrc_val = int.from_bytes(body[-ICRC_BYTES:], "little")
        icrc_ok = CRC32(icrc_masked(body[:-ICRC_BYTES])) == icrc_val
        payload = body[payload_start:-ICRC_BYTES]
        if bth.padcnt:
            payload = payload[:-bth.padcnt]
    else:
        payload = body[payload_start:]
    return DataPacket(lrh=lrh, grh=grh, bth=bth, payload=payload, icrc=icrc_val,
                      vcrc=vcrc, vcrc_ok=CRC16(body) == vcrc, icrc_ok=icrc_ok,
                      pktlen_ok=len(pkt) == 4 * lrh.pktlen + VCRC_BYTES)


def build_link_packet(fc: FCPacket, msb_first: bool = False) -> bytes:
    body = fc.pack()
    return body + CRC16.wire(body, msb_first)


def parse_link_packet(pkt: bytes, msb_first: bool = False) -> tuple[FCPacket, bool]:
    """(fields, lpcrc_ok) of a 6-byte link packet (msb_first: the LPCRC's byte order)."""
    if len(pkt) != 6:
        raise PacketError(f"link packet must be 6 bytes, got {len(pkt)}")
    return FCPacket.unpack(pkt), CRC16(pkt[:4]) == CRC16.field(pkt[4:], msb_first)


def to_flits(pkt: bytes, width: int, *, link: bool = False, bad: bool = False) -> list[Flit]:
    """Serialise a packet into W-bit flits; unused byte lanes of the last flit are zero.

    `bad` marks the eop flit (end bad packet / PHY error).
    """
    if not pkt:
        raise PacketError("cannot serialise an empty packet")
    nb = width // 8
    out = []
    for i in range(0, len(pkt), nb):
        chunk = pkt[i:i + nb]
        last = i + nb >= len(pkt)
        data = int.from_bytes(chunk + bytes(nb - len(chunk)), "big")
        out.append(Flit(data=data, sop=i == 0, eop=last, nbytes=len(chunk), link=link,
                        bad=bad and last))
    return out


def from_flits(flits: list[Flit], width: int) -> bytes:
    """Reassemble the bytes of one packet's flits (sop..eop)."""
    nb = width // 8
    out = bytearray()
    for f in flits:
        n = f.nbytes if f.eop else nb
        out += f.data.to_bytes(nb, "big")[:n]
    return bytes(out)


def header_fields(h) -> dict:
    return {f.name: getattr(h, f.name) for f in fields(h)}
