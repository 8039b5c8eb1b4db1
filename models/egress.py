"""Golden model of the egress rewrite (hw/switch/egress.py): LRH.VL rewritten, VCRC
recomputed over the whole rewritten packet (models.crc); a packet offered with `fecn` and
a BTH leaves with BTH.FECN set (IBA Annex A10; the VCRC covers it, the ICRC does not). The
rewritten flits wait in a queue of two: a flit taken in one cycle is offered on `o` from the
next, and the input is ready while the queue has room at the start of the cycle. Each flit
out carries its packet's output VL and credit blocks (from PktLen, models.credit)."""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.streams import FLIT
from models.crc import CRC16
from models.credit import packet_blocks

__all__ = ["EgressModel",]

_F = ["valid", *FLIT, "vl"]
_O = _F + ["blocks"]


class EgressModel:
    """The VL nibble of the sop flit is replaced; the VCRC sits at bytes 4*PktLen,
    4*PktLen+1 of the packet (IBA §7.8.2) and is the CRC-16 of the rewritten bytes before it,
    written wherever those two bytes pass. Rewritten flits leave through a two-flit queue
    (one cycle at least)."""

    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        self.nb = cfg.bytes_per_flit
        self.pkt = bytearray()          # rewritten bytes of the packet so far
        self.vl = 0
        self.blocks = 0
        self.vstart = 0
        self.fecn_at = None             # byte of the packet that gets BTH.FECN (BTH byte 4), if marked
        self.queue: list[dict] = []     # rewritten flits not yet taken by the output: {o__*: value}

    def peek(self, inp: dict) -> dict:
        return self.step(inp, commit=False)

    def step(self, inp: dict, commit: bool = True) -> dict:
        head = self.queue[0] if self.queue else {"o__valid": 0} | {f"o__{k}": 0 for k in _O[1:]}
        room = len(self.queue) < 2
        out = dict(head, i__ready=int(room))
        if commit and self.queue and inp["o__ready"]:
            self.queue.pop(0)
        i = {k: inp[f"i__{k}"] for k in _F}
        if not (i["valid"] and room):
            return out
        flit = {"o__valid": 1} | {f"o__{k}": i[k] for k in ("sop", "eop", "bytes", "bad")}
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
        flit["o__data"] = int.from_bytes(data, "big")
        flit["o__vl"] = i["vl"] if i["sop"] else self.vl
        blocks = packet_blocks(vstart // 4, self.cfg.credit_vcrc) if i["sop"] else self.blocks
        flit["o__blocks"] = blocks
        if commit:
            if i["sop"]:
                self.vl, self.vstart, self.fecn_at, self.blocks = i["vl"], vstart, fecn_at, blocks
            self.pkt = bytearray() if i["eop"] else pkt + data
            self.queue.append(flit)
        return out
