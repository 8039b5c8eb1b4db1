"""Golden CRC models for the IB link layer (pure Python, table driven).

All three CRCs are *reflected* CRCs (bits of each byte enter least-significant first), seeded
with all ones and finished with an all-ones XOR, and go on the wire least-significant byte
first. See docs/packet-format.md for the conventions and the test vectors that pin them.

  ICRC  IBA §7.8.1  CRC-32, poly 0x04C11DB7 (reflected 0xEDB88320): the Ethernet CRC
  VCRC  IBA §7.8.2  CRC-16, poly 0x100B (x^16+x^12+x^3+x+1), reflected 0xD008
  LPCRC IBA §7.9.4  same CRC-16 as the VCRC, over the first 4 bytes of a link packet

Because the CRC is reflected and appended least-significant byte first, running the CRC
over a message *including* its CRC field gives a constant (the residue); the receive
checkers use that (`VCRC_RESIDUE`).
"""
from __future__ import annotations

__all__ = ["CRCSpec", "CRC32", "CRC16", "crc32", "crc16", "icrc", "vcrc", "lpcrc",
           "VCRC_RESIDUE", "ICRC_RESIDUE"]


class CRCSpec:
    """A reflected CRC of `width` bits: reversed polynomial, seed, final XOR."""

    def __init__(self, name: str, width: int, poly_reflected: int, init: int, xorout: int):
        self.name = name
        self.width = width
        self.poly = poly_reflected
        self.init = init
        self.xorout = xorout
        self.mask = (1 << width) - 1
        self.table = [self._byte(b) for b in range(256)]

    def _byte(self, b: int) -> int:
        r = b
        for _ in range(8):
            r = (r >> 1) ^ (self.poly if r & 1 else 0)
        return r

    def update(self, state: int, data: bytes) -> int:
        """Advance the raw (un-finalised) register over `data`."""
        t = self.table
        for b in data:
            state = (state >> 8) ^ t[(state ^ b) & 0xFF]
        return state & self.mask

    def __call__(self, data: bytes) -> int:
        return self.update(self.init, data) ^ self.xorout

    def wire(self, data: bytes, msb_first: bool = False) -> bytes:
        """The CRC field as it goes on the wire: least-significant byte first (msb_first:
        most-significant first, SwitchConfig.crc_msb_first for the VCRC and LPCRC)."""
        return self(data).to_bytes(self.width // 8, "big" if msb_first else "little")

    def field(self, wire: bytes, msb_first: bool = False) -> int:
        """The CRC value a wire field holds (the inverse of `wire`'s byte order)."""
        return int.from_bytes(wire, "big" if msb_first else "little")

    @property
    def residue(self) -> int:
        """CRC (finalised) of any message followed by its own wire CRC field."""
        return self(b"\x00" + self.wire(b"\x00"))


CRC32 = CRCSpec("crc32", 32, 0xEDB88320, 0xFFFFFFFF, 0xFFFFFFFF)
CRC16 = CRCSpec("crc16-100b", 16, 0xD008, 0xFFFF, 0xFFFF)
crc32 = CRC32
crc16 = CRC16
VCRC_RESIDUE = CRC16.residue
ICRC_RESIDUE = CRC32.residue


def icrc(masked_bytes: bytes) -> int:
    """ICRC of an already-masked LRH..payload byte string (see packet.icrc_mask)."""
    return CRC32(masked_bytes)


def vcrc(lrh_to_icrc: bytes) -> int:
    return CRC16(lrh_to_icrc)


def lpcrc(first4: bytes) -> int:
    return CRC16(first4)
