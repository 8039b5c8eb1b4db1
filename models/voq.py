"""Golden model of the VOQ input buffer (hw/switch/voq.py), cycle by cycle.

Written from the queue semantics only — packets in FIFO order per (output, output VL),
flits readable from the cycle after they are written, the reader never passing the writer —
with no blocks, free lists or linked lists: those are the RTL's business, and a fault in
them shows up here as wrong data, order or timing.

Multicast packets wait in one more FIFO with the set of ports still owed a copy; a read of
the head for one of those ports sends a copy and strikes the port off; the copy that strikes
off the last port takes the packet out of the FIFO and returns its credit.
"""
from __future__ import annotations

from collections import deque

from hw.common.config import SwitchConfig

__all__ = ["VOQModel", "voq_ports"]

_FLIT = ["valid", "data", "sop", "eop", "bytes", "bad"]


def voq_ports(cfg: SwitchConfig):
    n, v = cfg.ports, cfg.data_vls
    ins = [f"w__{k}" for k in _FLIT + ["dest", "ovl", "blocks", "ivl", "mcast", "mask", "sl"]]
    ins += ["rd_start", "rd_port", "rd_vl", "rd_mc", "r__ready"]
    outs = [f"nonempty__{o}" for o in range(n)] + [f"deep__{o}" for o in range(n)]
    outs += [f"head_blocks__{o}__{x}" for o in range(n) for x in range(v)]
    outs += ["busy"] + [f"r__{k}" for k in _FLIT] + ["r__void", "done", "rel__valid", "rel__ivl", "rel__blocks"]
    outs += ["mc_valid", "mc_mask", "mc_sl", "mc_blocks"]
    qual = {f"r__{k}": "r__valid" for k in _FLIT[1:] + ["void"]}
    qual.update({k: "mc_valid" for k in ("mc_mask", "mc_sl", "mc_blocks")})
    qual.update({"rel__ivl": "rel__valid", "rel__blocks": "rel__valid"})
    return ins, outs, qual


class _Pkt:
    def __init__(self, n, ivl, owed=0, sl=0):
        self.n, self.ivl = n, ivl
        self.owed, self.sl = owed, sl           # multicast: ports still owed a copy, SL
        self.flits: list[dict] = []


class VOQModel:
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        self.n, self.v = cfg.ports, cfg.data_vls
        self.q = {(o, x): deque() for o in range(self.n) for x in range(self.v)}
        self.head_blocks = {(o, x): 0 for o in range(self.n) for x in range(self.v)}
        self.mc: deque[_Pkt] = deque()
        self.wpkt: _Pkt | None = None
        self.cur: _Pkt | None = None
        self.cur_last = True
        self.cur_void = False
        self.count = 0

    def _vl(self, x):
        return x if self.v > 1 else 0

    def peek(self, inp: dict) -> dict:
        """This cycle's outputs without the clock edge (cheaper than a copy of the queues)."""
        return self.step(inp, commit=False)

    def step(self, inp: dict, commit: bool = True) -> dict:
        out = {f"nonempty__{o}": sum(1 << x for x in range(self.v) if self.q[(o, x)]) for o in range(self.n)}
        out.update({f"deep__{o}": sum(1 << x for x in range(self.v) if len(self.q[(o, x)]) >= 2)
                    for o in range(self.n)})
        out.update({f"head_blocks__{o}__{x}": self.head_blocks[(o, x)] for o in range(self.n) for x in range(self.v)})
        h = self.mc[0] if self.mc else None
        out.update(mc_valid=int(h is not None), mc_mask=h.owed if h else 0, mc_sl=h.sl if h else 0,
                   mc_blocks=h.n if h else 0)
        reading = self.cur is not None
        out["busy"] = int(reading)
        start = inp["rd_start"] and not reading
        mc = bool(inp["rd_mc"])
        key = (inp["rd_port"], self._vl(inp["rd_vl"]))
        last = True
        if start and mc:
            if h is None or not h.owed >> inp["rd_port"] & 1:
                raise ValueError(f"VOQModel: multicast read for port {inp['rd_port']} not owed a copy")
            last = h.owed == 1 << inp["rd_port"]
        elif start and not self.q[key]:
            raise ValueError(f"VOQModel: rd_start on empty queue (port {key[0]}, VL {key[1]})")
        pkt = (h if mc else self.q[key][0]) if start else self.cur
        last = last if start else self.cur_last
        # complete and bad when its read starts: dropped (read with r__void)
        void = (bool(pkt.flits) and pkt.flits[-1]["eop"] and bool(pkt.flits[-1]["bad"])) if start else self.cur_void
        count = 0 if start else self.count
        out.update({f"r__{k}": 0 for k in _FLIT + ["void"]})
        out.update({"done": 0, "rel__valid": 0, "rel__ivl": 0, "rel__blocks": 0})
        take = False
        if pkt is not None and count < len(pkt.flits):
            f = pkt.flits[count]
            out.update({"r__valid": 1, "r__data": f["data"], "r__sop": int(count == 0), "r__eop": f["eop"],
                        "r__bytes": f["bytes"], "r__bad": f["bad"], "r__void": int(void)})
            take = bool(inp["r__ready"])
            if take and f["eop"]:
                out["done"] = 1
                if last:
                    out.update({"rel__valid": 1, "rel__ivl": pkt.ivl, "rel__blocks": pkt.n})
        if not commit:
            return out
        # ---- clock edge
        if start:
            if mc:
                h.owed &= ~(1 << inp["rd_port"])
                if last:
                    self.mc.popleft()
            else:
                self.q[key].popleft()
            self.cur, self.count, self.cur_last, self.cur_void = pkt, 0, last, void
        if take:
            self.count = count + 1
            if out["r__eop"]:
                self.cur = None
        if inp["w__valid"]:
            f = {k: inp[f"w__{k}"] for k in ("data", "eop", "bytes", "bad")}
            if inp["w__sop"]:
                self.wpkt = _Pkt(inp["w__blocks"], inp["w__ivl"] if self.v > 1 else inp["w__ivl"] & 1)
                if inp["w__mcast"]:
                    self.wpkt.owed, self.wpkt.sl = inp["w__mask"], inp["w__sl"]
                    self.mc.append(self.wpkt)
                else:
                    self.q[(inp["w__dest"], self._vl(inp["w__ovl"]))].append(self.wpkt)
            self.wpkt.flits.append(f)
        for k, qq in self.q.items():
            if qq:
                self.head_blocks[k] = qq[0].n
        return out
