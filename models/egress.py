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
    def __init__(self, cfg: SwitchConfig):
        self.nb = cfg.bytes_per_flit
        self.held: dict | None = None
        self.pkt = bytearray()          # bytes of the packet so far (rewritten), incl. held
        self.vl = 0

    def _bytes(self, f):
        return f["data"].to_bytes(self.nb, "big")[: f["bytes"] if f["eop"] else self.nb]

    def step(self, inp: dict) -> dict:
        h = self.held
        i = {k: inp[f"i__{k}"] for k in _F}
        emit = h is not None and (i["valid"] or h["eop"]) and inp["o__ready"]
        ready = h is None or emit
        out = {"i__ready": int(ready), "o__valid": int(h is not None and (i["valid"] or h["eop"]))}
        out.update({f"o__{k}": 0 for k in _F[1:]})
        if h is not None:
            data = bytearray(h["data"].to_bytes(self.nb, "big"))
            if h["eop"] or (i["valid"] and i["eop"] and i["bytes"] == 1):
                # the whole packet is known now: its VCRC over the rewritten bytes
                body = self.pkt + (self._bytes(i) if not h["eop"] else b"")
                wire = CRC16.wire(bytes(body[:-2]))
                if h["eop"]:
                    if h["bytes"] >= 2:
                        data[h["bytes"] - 2:h["bytes"]] = wire
                    else:
                        data[0] = wire[1]
                else:
                    data[self.nb - 1] = wire[0]
            out.update({"o__data": int.from_bytes(data, "big"), "o__sop": h["sop"], "o__eop": h["eop"],
                        "o__bytes": h["bytes"], "o__bad": h["bad"], "o__vl": h["vl"]})
        # ---- edge
        if emit and h["eop"]:
            self.pkt = bytearray()
        if i["valid"] and ready:
            f = dict(i)
            if f["sop"]:
                self.vl = f["vl"]
                b = bytearray(f["data"].to_bytes(self.nb, "big"))
                b[0] = (b[0] & 0x0F) | (f["vl"] << 4)          # LRH.VL := output VL
                f["data"] = int.from_bytes(b, "big")
                self.pkt = bytearray()
            f["vl"] = self.vl
            self.pkt += self._bytes(f)
            self.held = f
        elif emit:
            self.held = None
        return out
