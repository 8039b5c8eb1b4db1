"""Golden model of congestion marking (hw/switch/congestion.py), from IBA Annex A10 as
docs/reliability.md ("Congestion control") reads it for this switch.

The model keeps the packets themselves: per (input, output, output VL) the sizes of the
unicast packets queued there, in order. A packet joins when its input writes its sop into
the buffer (`enq`, not multicast) and the head leaves when its input starts a unicast read
of it (`deq`, a read or a discard; the size it reports must be the head's). An output VL
is congested while the packets queued for it at all inputs, as of the last clock edge,
fill at least (16 - threshold) * cc_unit blocks (threshold 0: never). A packet leaving
output o (`eg`, its sop taken) is eligible when its VL is congested, it carries a whole BTH
and is at least 64 * packet_size bytes long (LNH and PktLen read from its LRH, the first 8
bytes of its sop flit); the port marks the first eligible packet and then every
(marking_rate + 1)-th."""
from __future__ import annotations

from collections import deque

from contracts.config import SwitchConfig
from models.packet import LNH, LRH

__all__ = ["CongestionModel",]

_ENQ = ("valid", "sop", "mcast", "port", "vl", "blocks")
_DEQ = ("start", "mc", "port", "vl", "blocks")
_EG = ("valid", "sop", "ready", "vl", "data")


class CongestionModel:
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        n, nvl = cfg.ports, cfg.data_vls
        self.queues = {(i, o, v): deque() for i in range(n) for o in range(n) for v in range(nvl)}
        self.total = {(o, v): 0 for o in range(n) for v in range(nvl)}     # sum over the inputs' queues
        self.to_skip = [0] * n               # eligible packets of the port to let pass before the next mark
        self.marked = [0] * n

    def queued(self, o: int, v: int) -> int:
        """Blocks of the packets queued for output o, VL v at every input."""
        return self.total[(o, v)]

    def peek(self, inp: dict) -> dict:
        return self.step(inp, commit=False)

    def step(self, inp: dict, commit: bool = True) -> dict:
        cfg = self.cfg
        n, nvl = cfg.ports, cfg.data_vls
        out = {}
        for o in range(n):
            word = inp[f"cc__{o}"]
            threshold, size, rate = word & 0xF, word >> 8 & 0xFF, word >> 16 & 0xFFFF
            cong = 0
            if threshold:
                for v in range(nvl):
                    if self.queued(o, v) >= (16 - threshold) * cfg.cc_unit:
                        cong |= 1 << v
            eg = {k: inp[f"eg__{o}__{k}"] for k in _EG}
            lrh = LRH.unpack((eg["data"] >> (cfg.data_width - 64)).to_bytes(8, "big"))
            whole_bth = (lrh.lnh == LNH.IBA_LOCAL and lrh.pktlen >= 5) or (lrh.lnh == LNH.IBA_GLOBAL
                                                                          and lrh.pktlen >= 15)
            eligible = (eg["valid"] and eg["sop"] and eg["ready"] and cong >> eg["vl"] & 1 and whole_bth
                        and 4 * lrh.pktlen >= 64 * size)
            mark = bool(eligible) and self.to_skip[o] == 0
            out[f"mark__{o}"], out[f"congested__{o}"], out[f"marked__{o}"] = int(mark), cong, self.marked[o]
            if commit and eligible:
                self.to_skip[o] = rate if mark else self.to_skip[o] - 1
                if mark:
                    self.marked[o] = min(self.marked[o] + 1, 0xFFFFFFFF)
        if commit:
            for i in range(n):
                d = {k: inp[f"deq__{i}__{k}"] for k in _DEQ}
                if d["start"] and not d["mc"]:
                    q = self.queues[(i, d["port"], d["vl"])]
                    if not q or q[0] != d["blocks"]:
                        raise AssertionError(f"congestion model: input {i} starts a packet of {d['blocks']} blocks "
                                             f"for ({d['port']}, VL {d['vl']}), whose queue holds {list(q)}")
                    self.total[(d["port"], d["vl"])] -= q.popleft()
            for i in range(n):
                e = {k: inp[f"enq__{i}__{k}"] for k in _ENQ}
                if e["valid"] and e["sop"] and not e["mcast"]:
                    self.queues[(i, e["port"], e["vl"])].append(e["blocks"])
                    self.total[(e["port"], e["vl"])] += e["blocks"]
        return out
