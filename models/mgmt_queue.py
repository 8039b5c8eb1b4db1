"""Golden model of the management receive queue (hw/switch/mgmt_queue.py), from its
description: a FIFO of flits of bounded capacity, each flit visible at the AXI4-Stream
output from the second cycle after it was written, in order, held until taken; a flit
offered while the FIFO is full is lost and counted."""
from __future__ import annotations

from collections import deque

from contracts.config import SwitchConfig
from contracts.streams import AXIS_OUT, FLIT

__all__ = ["MgmtQueueModel",]

_I = ["valid", *FLIT, "port"]
_AX = AXIS_OUT
_SAT = 0xFFFFFFFF


class MgmtQueueModel:
    def __init__(self, cfg: SwitchConfig, depth_flits: int | None = None):
        depth_flits = cfg.mgmt_queue_flits if depth_flits is None else depth_flits
        self.cfg, self.depth = cfg, depth_flits
        self.fifo: deque = deque()          # (flit dict, cycle written)
        self.out = None                     # the flit on the AXI4-Stream output
        self.cycle = 0
        self.pkts_in = self.overflow = 0

    def _axis(self) -> dict:
        f = self.out
        if f is None:
            return {"m_axis_tvalid": 0, "m_axis_tdata": 0, "m_axis_tkeep": 0, "m_axis_tlast": 0, "m_axis_tuser": 0}
        nb = self.cfg.bytes_per_flit
        body = f["data"].to_bytes(nb, "big")               # packet byte 0 first
        n = f["bytes"] if f["eop"] else nb
        return {"m_axis_tvalid": 1, "m_axis_tdata": int.from_bytes(body, "little"),
                "m_axis_tkeep": (1 << n) - 1, "m_axis_tlast": f["eop"], "m_axis_tuser": f["port"] | f["bad"] << 8}

    def step(self, inp: dict) -> dict:
        held = len(self.fifo)                       # flits held at the start of the cycle
        out = {"free": self.depth - held, "pkts_in": self.pkts_in, "overflow": self.overflow, **self._axis()}
        taken = self.out is not None and inp["m_axis_tready"]
        if taken:
            self.out = None
        if self.out is None and self.fifo and self.fifo[0][1] < self.cycle:
            self.out = self.fifo.popleft()[0]
        if inp["i__valid"]:
            if held < self.depth:
                self.fifo.append(({k: inp[f"i__{k}"] for k in _I[1:]}, self.cycle))
                if inp["i__sop"]:
                    self.pkts_in = min(self.pkts_in + 1, _SAT)
            else:
                self.overflow = min(self.overflow + 1, _SAT)
        self.cycle += 1
        return out
