"""Packet header layouts as Amaranth structs (IBA ch. 7 and 9).

Amaranth struct fields are listed least-significant bit first. On the wire the first
byte is the most significant, so each layout lists the fields in *reverse* wire order:
casting the top 64 bits of a flit (packet bytes 0..7, big-endian) to `LRHLayout` gives the
LRH fields. Tests pack with `LRHLayout.const({...}).as_value()` and compare against the
model's `models.packet.LRH.to_int()`.
"""
from amaranth.hdl import unsigned
from amaranth.lib import data

__all__ = ["LRHLayout", "BTHLayout", "FCLayout", "header_at"]


class LRHLayout(data.Struct):
    """Local Route Header, 64 bits (IBA §7.7). Wire order: VL LVer SL rsvd LNH DLID rsvd PktLen SLID."""
    slid: unsigned(16)
    pktlen: unsigned(11)
    rsvd1: unsigned(5)
    dlid: unsigned(16)
    lnh: unsigned(2)
    rsvd0: unsigned(2)
    sl: unsigned(4)
    lver: unsigned(4)
    vl: unsigned(4)


class BTHLayout(data.Struct):
    """Base Transport Header, 96 bits (IBA §9.2)."""
    psn: unsigned(24)
    rsvd7: unsigned(7)
    a: unsigned(1)
    destqp: unsigned(24)
    rsvd6: unsigned(6)
    becn: unsigned(1)
    fecn: unsigned(1)
    pkey: unsigned(16)
    tver: unsigned(4)
    padcnt: unsigned(2)
    m: unsigned(1)
    se: unsigned(1)
    opcode: unsigned(8)


class FCLayout(data.Struct):
    """Flow-control link packet, 48 bits including LPCRC (IBA §7.9.4).

    The LPCRC goes least-significant byte first (docs/packet-format.md), so as a big-endian
    16-bit field it reads byte-swapped; use `lpcrc_wire` with that in mind.
    """
    lpcrc_wire: unsigned(16)
    fccl: unsigned(12)
    vl: unsigned(4)
    fctbs: unsigned(12)
    op: unsigned(4)


def header_at(flit, width: int, layout, byte_offset: int = 0):
    """View the bytes at `byte_offset` of a W-bit flit (byte 0 = MSB) as `layout`."""
    top = width - 8 * byte_offset
    return layout(flit[top - layout.as_shape().size:top])
