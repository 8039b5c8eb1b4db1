"""The packets MADs travel in: LRH, BTH, DETH, the 256-byte MAD, ICRC, VCRC.

Subnet management packets go to QP0 on VL15, general management packets (the PMA's) to
QP1 on a data VL (IBA §13.5.1); both are unreliable-datagram SEND Only packets (BTH
OpCode 0x64, IBA §9.2 table 39) with a DETH (Q_Key, SrcQP; IBA §9.3.3). The management
interface of the switch carries whole wire packets, so the firmware computes both CRCs:

  ICRC  IBA §7.8.1: CRC-32 (the Ethernet one, zlib's) over LRH..payload with the variant
        fields taken as ones: LRH.VL (the whole LRH when a GRH follows: routers replace
        it), GRH TClass/FlowLabel/HopLmt, BTH byte 4 (FECN/BECN/reserved); sent least
        significant byte first
  VCRC  IBA §7.8.2: CRC-16 polynomial 0x100B, seed 0xFFFF, reflected, final XOR 0xFFFF,
        over LRH..ICRC, sent least significant byte first

Decoding raises MADError naming what is wrong (length, LNH, opcode, PktLen, a CRC), so
the agent can count the packet as malformed and drop it.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from fw.mad import MAD_BYTES, MADError

__all__ = ["UDPacket", "build_ud", "parse_ud", "crc16_vcrc", "crc16_vcrc_table", "icrc", "UD_SEND_ONLY", "QP1_QKEY",
           "DEFAULT_PKEY", "LNH_LOCAL", "LNH_GLOBAL"]

UD_SEND_ONLY = 0x64
QP1_QKEY = 0x80010000         # IBA §13.5.3: the well-known Q_Key of QP1
DEFAULT_PKEY = 0xFFFF
LNH_LOCAL, LNH_GLOBAL = 2, 3
_LRH = struct.Struct(">BBHHH")
_BTH = struct.Struct(">BBHII")
_DETH = struct.Struct(">II")


def _vcrc_table() -> list[int]:
    """The VCRC's byte table, made bit by bit (this firmware keeps its own, apart from the
    hardware's CRC networks): CRC-16 0x100B, reflected (0xD008)."""
    out = []
    for b in range(256):
        crc = b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xD008 if crc & 1 else 0)
        out.append(crc)
    return out


_VCRC = _vcrc_table()


def crc16_vcrc_table(data: bytes) -> int:
    """IBA VCRC: CRC-16 0x100B reflected, initial 0xFFFF, final inversion (a byte at a time,
    by the table above)."""
    crc, t = 0xFFFF, _VCRC
    for byte in data:
        crc = (crc >> 8) ^ t[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFF


def _compiled_vcrc():
    """The same CRC from crcmod's C extension (27x the table's speed: the MAD-level fabric
    computes one per packet per hop), or None where it is not built. crcmod's initCrc is
    the register's seed XOR the final XOR: 0xFFFF ^ 0xFFFF. tests/test_ud_crc.py holds it
    to the table."""
    try:
        import crcmod
        from crcmod import _crcfunext  # noqa: F401  (the pure-Python crcmod is no faster)
    except ImportError:
        return None
    return crcmod.mkCrcFun(0x1100B, initCrc=0, rev=True, xorOut=0xFFFF)


crc16_vcrc = _compiled_vcrc() or crc16_vcrc_table


def icrc(body: bytes) -> int:
    """IBA ICRC of LRH..payload (local or global), variant fields masked to ones."""
    m = bytearray(body)
    m[0] |= 0xF0                                                   # LRH.VL
    bth = 8
    if m[1] & 3 == LNH_GLOBAL:
        m[0:8] = b"\xff" * 8                                      # a router rewrites the LRH
        g = 8
        m[g] |= 0x0F                                               # TClass (low half), FlowLabel
        m[g + 1] = m[g + 2] = m[g + 3] = 0xFF
        m[g + 7] = 0xFF                                            # HopLmt
        bth += 40
    m[bth + 4] = 0xFF                                              # FECN, BECN, Resv6
    return zlib.crc32(bytes(m)) & 0xFFFFFFFF


@dataclass
class UDPacket:
    vl: int
    sl: int
    dlid: int
    slid: int
    dest_qp: int
    src_qp: int
    qkey: int
    pkey: int
    mad: bytes
    lver: int = 0
    grh: bytes | None = None
    tver: int = 0
    psn: int = 0


def build_ud(p: UDPacket, crc_msb_first: bool = False) -> bytes:
    """Wire bytes LRH [GRH] BTH DETH MAD ICRC VCRC (crc_msb_first: the VCRC's byte order,
    the switch's SwitchConfig.crc_msb_first)."""
    if len(p.mad) != MAD_BYTES:
        raise MADError(f"MAD must be {MAD_BYTES} bytes, got {len(p.mad)}")
    lnh = LNH_GLOBAL if p.grh else LNH_LOCAL
    grh = p.grh or b""
    body_len = 8 + len(grh) + 12 + 8 + MAD_BYTES + 4
    lrh = _LRH.pack((p.vl << 4) | p.lver, (p.sl << 4) | lnh, p.dlid, body_len // 4, p.slid)
    bth = _BTH.pack(UD_SEND_ONLY, p.tver & 0xF, p.pkey, p.dest_qp & 0xFFFFFF, p.psn & 0xFFFFFF)
    deth = _DETH.pack(p.qkey, p.src_qp & 0xFFFFFF)
    body = lrh + grh + bth + deth + p.mad
    body += icrc(body).to_bytes(4, "little")
    return body + crc16_vcrc(body).to_bytes(2, "big" if crc_msb_first else "little")


def parse_ud(pkt: bytes, crc_msb_first: bool = False) -> UDPacket:
    """The MAD and the header fields of a management packet; MADError if it is not one."""
    if len(pkt) < 8 + 12 + 8 + MAD_BYTES + 6:
        raise MADError(f"packet of {len(pkt)} bytes is too short for a MAD")
    b0, b1, dlid, pktlen, slid = _LRH.unpack_from(pkt)
    vl, lver, sl, lnh = b0 >> 4, b0 & 0xF, b1 >> 4, b1 & 3
    if len(pkt) != 4 * (pktlen & 0x7FF) + 2:
        raise MADError(f"LRH.PktLen {pktlen & 0x7FF} words does not match the packet's {len(pkt)} bytes")
    if crc16_vcrc(pkt[:-2]) != int.from_bytes(pkt[-2:], "big" if crc_msb_first else "little"):
        raise MADError("VCRC mismatch")
    if lnh not in (LNH_LOCAL, LNH_GLOBAL):
        raise MADError(f"LRH.LNH {lnh} carries no BTH (not an IBA transport packet)")
    off = 8
    grh = None
    if lnh == LNH_GLOBAL:
        grh = bytes(pkt[8:48])
        off = 48
    if icrc(pkt[:-6]) != int.from_bytes(pkt[-6:-2], "little"):
        raise MADError("ICRC mismatch")
    opcode, b1b, pkey, dqp, psn = _BTH.unpack_from(pkt, off)
    if opcode != UD_SEND_ONLY:
        raise MADError(f"BTH.OpCode {opcode:#04x} is not UD SEND Only (0x64)")
    padcnt = (b1b >> 4) & 3
    qkey, sqp = _DETH.unpack_from(pkt, off + 12)
    mad = pkt[off + 20:-6]
    if padcnt:
        mad = mad[:-padcnt]
    if len(mad) != MAD_BYTES:
        raise MADError(f"payload of {len(mad)} bytes is not a {MAD_BYTES}-byte MAD")
    return UDPacket(vl=vl, sl=sl, dlid=dlid, slid=slid, dest_qp=dqp & 0xFFFFFF, src_qp=sqp & 0xFFFFFF,
                    qkey=qkey, pkey=pkey, mad=bytes(mad), lver=lver, grh=grh, tver=b1b & 0xF, psn=psn & 0xFFFFFF)
