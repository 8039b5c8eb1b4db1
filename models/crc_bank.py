"""Golden model of hw.common.crc.CRCBank: the VCRC, ICRC and LPCRC of a flit stream.

From the CRC definitions (models/crc.py) and the ICRC masking rule (models.packet.icrc_masked):
the model keeps the bytes of the current message and computes each CRC over them, where the
RTL runs parallel XOR networks. Outputs are combinational: `step` returns the CRCs through
the flit presented in that cycle.
"""
from __future__ import annotations

from models.crc import CRC16, CRC32
from models.packet import icrc_masked

__all__ = ["CRCBankModel"]


class CRCBankModel:
    def __init__(self, width: int):
        self.nb = width // 8
        self.msg = bytearray()
        self.lnh = 0

    def step(self, inp: dict) -> dict:
        if not inp["valid"]:
            return {"_valid": 0, "vcrc": 0, "icrc": 0, "lpcrc": 0}
        raw = inp["data"].to_bytes(self.nb, "big")
        n = inp["bytes"] if inp["eop"] else self.nb
        if inp["sop"]:
            self.msg = bytearray()
            self.lnh = raw[1] & 3            # LRH.LNH of the first flit
        self.msg += raw[:n]
        return {"_valid": 1, "vcrc": CRC16(bytes(self.msg)),
                "icrc": CRC32(icrc_masked(bytes(self.msg), self.lnh)),
                "lpcrc": CRC16(raw[:4])}
