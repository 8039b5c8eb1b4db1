"""Golden model of the egress rewrite (hw/switch/egress.py): LRH.VL rewritten, VCRC
recomputed over the whole rewritten packet (models.crc), one-flit holding stage."""
from __future__ import annotations

from hw.common.config import SwitchConfig
from models.crc import CRC16

__all__ = ["EgressModel", "egress_ports"]

_F = ["valid", "data", "sop", "eop", "bytes", "bad", "vl"]


def egress_ports():
    ins = [f"i__{k}" for k in _F] + ["o__ready"]
    outs = [f"o__{k}" for k in _F] + ["i__ready"]
    return ins, outs, {f"o__{k}": "o__valid" for k in _F[1:]}


class EgressModel:
    """Flits pass in the same cycle (ready straight through). The VL nibble of the sop flit is
    replaced; the VCRC sits at bytes 4*PktLen, 4*PktLen+1 of the packet (IBA §7.8.2) and is
    the CRC-16 of the rewritten bytes before it, written wherever those two bytes pass."""

    def __init__(self, cfg: SwitchConfig):
        self.nb = cfg.bytes_per_flit
        self.pkt = bytearray()          # rewritten bytes of the packet so far
        self.vl = 0
        self.vstart = 0

    def peek(self, inp: dict) -> dict:
        return self.step(inp, commit=False)

    def step(self, inp: dict, commit: bool = True) -> dict:
        i = {k: inp[f"i__{k}"] for k in _F}
        out = {"i__ready": inp["o__ready"], "o__valid": i["valid"]}
        out.update({f"o__{k}": i[k] for k in ("sop", "eop", "bytes", "bad")})
        data = bytearray(i["data"].to_bytes(self.nb, "big"))
        pkt, vstart = self.pkt, self.vstart
        if i["sop"]:
            data[0] = (data[0] & 0x0F) | (i["vl"] << 4)          # LRH.VL := output VL
            pkt = bytearray()
            vstart = 4 * (int.from_bytes(data[4:6], "big") & 0x7FF)
        base = len(pkt)
        for k in (0, 1):                                           # the VCRC's bytes in this flit
            j = vstart + k - base
            if 0 <= j < self.nb:
                before = (pkt + data)[:vstart]
                data[j] = CRC16.wire(bytes(before))[k]
        out["o__data"] = int.from_bytes(data, "big")
        out["o__vl"] = i["vl"] if i["sop"] else self.vl
        if commit and i["valid"] and inp["o__ready"]:
            if i["sop"]:
                self.vl, self.vstart = i["vl"], vstart
            self.pkt = bytearray() if i["eop"] else pkt + data
        return out
