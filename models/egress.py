"""Golden model of the egress rewrite (hw/switch/egress.py): LRH.VL rewritten, VCRC
recomputed over the whole rewritten packet (models.crc); a packet offered with `fecn` and
a BTH leaves with BTH.FECN set (IBA Annex A10; the VCRC covers it, the ICRC does not); a flit the output does not take
waits in a one-flit skid buffer, and the input waits while it is there."""
from __future__ import annotations

from hw.common.config import SwitchConfig
from models.crc import CRC16

__all__ = ["EgressModel", "egress_ports"]

_F = ["valid", "data", "sop", "eop", "bytes", "bad", "vl"]


def egress_ports():
    ins = [f"i__{k}" for k in _F] + ["fecn", "o__ready"]
    outs = [f"o__{k}" for k in _F] + ["i__ready"]
    return ins, outs, {f"o__{k}": "o__valid" for k in _F[1:]}


class EgressModel:
    """Flits pass in the same cycle. The VL nibble of the sop flit is replaced; the VCRC sits
    at bytes 4*PktLen, 4*PktLen+1 of the packet (IBA §7.8.2) and is the CRC-16 of the
    rewritten bytes before it, written wherever those two bytes pass. The input is ready
    exactly when no rewritten flit is waiting; a waiting flit is offered before anything
    else."""

    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        self.nb = cfg.bytes_per_flit
        self.pkt = bytearray()          # rewritten bytes of the packet so far
        self.vl = 0
        self.vstart = 0
        self.fecn_at = None             # byte of the packet that gets BTH.FECN (BTH byte 4), if marked
        self.held = None                # a rewritten flit the output did not take: {o__*: value}

    def peek(self, inp: dict) -> dict:
        return self.step(inp, commit=False)

    def step(self, inp: dict, commit: bool = True) -> dict:
        if self.held is not None:
            out = dict(self.held, i__ready=0)
            if commit and inp["o__ready"]:
                self.held = None
            return out
        i = {k: inp[f"i__{k}"] for k in _F}
        out = {"i__ready": 1, "o__valid": i["valid"]}
        out.update({f"o__{k}": i[k] for k in ("sop", "eop", "bytes", "bad")})
        data = bytearray(i["data"].to_bytes(self.nb, "big"))
        pkt, vstart, fecn_at = self.pkt, self.vstart, self.fecn_at
        if i["sop"]:
            data[0] = (data[0] & 0x0F) | (i["vl"] << 4)          # LRH.VL := output VL
            pkt = bytearray()
            vstart = 4 * (int.from_bytes(data[4:6], "big") & 0x7FF)
            lnh = data[1] & 3                                      # 2: LRH BTH, 3: LRH GRH BTH
            fecn_at = (8 + 4 if lnh == 2 else 8 + 40 + 4) if inp["fecn"] and lnh >= 2 else None
        base = len(pkt)
        if fecn_at is not None and 0 <= fecn_at - base < self.nb:
            data[fecn_at - base] |= 0x80                           # BTH.FECN
        for k in (0, 1):                                           # the VCRC's bytes in this flit
            j = vstart + k - base
            if 0 <= j < self.nb:
                before = (pkt + data)[:vstart]
                data[j] = CRC16.wire(bytes(before), self.cfg.crc_msb_first)[k]
        out["o__data"] = int.from_bytes(data, "big")
        out["o__vl"] = i["vl"] if i["sop"] else self.vl
        if commit and i["valid"]:
            if i["sop"]:
                self.vl, self.vstart, self.fecn_at = i["vl"], vstart, fecn_at
            self.pkt = bytearray() if i["eop"] else pkt + data
            if not inp["o__ready"]:
                self.held = {k: v for k, v in out.items() if k.startswith("o__")}
        return out
