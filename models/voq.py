"""Golden model of the VOQ input buffer (hw/switch/voq.py), cycle by cycle.

Written from the queue semantics only — packets in FIFO order per (output, output VL),
flits readable from the cycle after they are written, the reader never passing the writer —
with no blocks, free lists or linked lists: those are the RTL's business, and a fault in
them shows up here as wrong data, order or timing.
"""
from __future__ import annotations

from collections import deque

from hw.common.config import SwitchConfig

__all__ = ["VOQModel", "voq_ports"]

_FLIT = ["valid", "data", "sop", "eop", "bytes", "bad"]


def voq_ports(cfg: SwitchConfig):
    n, v = cfg.ports, cfg.data_vls
    ins = [f"w__{k}" for k in _FLIT + ["dest", "ovl", "blocks", "ivl"]]
    ins += ["rd_start", "rd_port", "rd_vl", "r__ready"]
    outs = [f"nonempty__{o}" for o in range(n)] + [f"head_blocks__{o}__{x}" for o in range(n) for x in range(v)]
    outs += ["busy"] + [f"r__{k}" for k in _FLIT] + ["done", "rel__valid", "rel__ivl", "rel__blocks"]
    qual = {f"r__{k}": "r__valid" for k in _FLIT[1:]}
    qual.update({"rel__ivl": "rel__valid", "rel__blocks": "rel__valid"})
    return ins, outs, qual


class _Pkt:
    def __init__(self, n, ivl):
        self.n, self.ivl = n, ivl
        self.flits: list[dict] = []


class VOQModel:
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        self.n, self.v = cfg.ports, cfg.data_vls
        self.q = {(o, x): deque() for o in range(self.n) for x in range(self.v)}
        self.head_blocks = {(o, x): 0 for o in range(self.n) for x in range(self.v)}
        self.wpkt: _Pkt | None = None
        self.cur: _Pkt | None = None
        self.count = 0

    def _vl(self, x):
        return x if self.v > 1 else 0

    def step(self, inp: dict) -> dict:
        out = {f"nonempty__{o}": sum(1 << x for x in range(self.v) if self.q[(o, x)]) for o in range(self.n)}
        out.update({f"head_blocks__{o}__{x}": self.head_blocks[(o, x)] for o in range(self.n) for x in range(self.v)})
        reading = self.cur is not None
        out["busy"] = int(reading)
        start = inp["rd_start"] and not reading
        key = (inp["rd_port"], self._vl(inp["rd_vl"]))
        if start and not self.q[key]:
            raise ValueError(f"VOQModel: rd_start on empty queue (port {key[0]}, VL {key[1]})")
        pkt = self.q[key][0] if start else self.cur
        count = 0 if start else self.count
        out.update({f"r__{k}": 0 for k in _FLIT})
        out.update({"done": 0, "rel__valid": 0, "rel__ivl": 0, "rel__blocks": 0})
        take = False
        if pkt is not None and count < len(pkt.flits):
            f = pkt.flits[count]
            out.update({"r__valid": 1, "r__data": f["data"], "r__sop": int(count == 0), "r__eop": f["eop"],
                        "r__bytes": f["bytes"], "r__bad": f["bad"]})
            take = bool(inp["r__ready"])
            if take and f["eop"]:
                out.update({"done": 1, "rel__valid": 1, "rel__ivl": pkt.ivl, "rel__blocks": pkt.n})
        # ---- clock edge
        if start:
            self.q[key].popleft()
            self.cur, self.count = pkt, 0
        if take:
            self.count = count + 1
            if out["r__eop"]:
                self.cur = None
        if inp["w__valid"]:
            f = {k: inp[f"w__{k}"] for k in ("data", "eop", "bytes", "bad")}
            if inp["w__sop"]:
                self.wpkt = _Pkt(inp["w__blocks"], inp["w__ivl"] if self.v > 1 else inp["w__ivl"] & 1)
                self.q[(inp["w__dest"], self._vl(inp["w__ovl"]))].append(self.wpkt)
            self.wpkt.flits.append(f)
        for k, qq in self.q.items():
            if qq:
                self.head_blocks[k] = qq[0].n
        return out
