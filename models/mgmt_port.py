"""Golden model of the management port (hw/switch/mgmt_port.py), from its description in
docs/management.md: a relay that moves one whole packet at a time, chosen round robin among
the VL15 packets waiting at the inputs and the processor's oldest complete packet, two
cycles per decision (look up the LFT, decide); a receive queue (models.mgmt_queue) that
admits whole packets only, written by the relay or copied from an input's accepted stream;
a store-and-forward send buffer that drops malformed packets as they end; and a per-output
switch between the egress and the processor for the data VLs.

Packets are handled as lists of flits (dicts of data/sop/eop/bytes/bad); decisions are
made on the packet's LRH as a packet: models.packet.LRH.
"""
from __future__ import annotations

from collections import deque

from contracts.config import BLOCK_BYTES, VCRC_BYTES, SwitchConfig
from contracts.counters import MGMT_PORT_COUNTERS
from contracts.defs import PortState
from contracts.streams import AXIS_IN, AXIS_OUT, FLIT
from models.credit import may_send, packet_blocks, taken_flits
from models.mgmt_queue import MgmtQueueModel
from models.packet import LRH
from models.route import lft_port_of, route_lid

__all__ = ["MgmtPortModel"]

_FL = list(FLIT)
_AXO = AXIS_OUT
_AXI = AXIS_IN
_SAT = 0xFFFFFFFF


class MgmtPortModel:
    peek_by_copy = True                 # its state copies faster than its cycle evaluates (models.compose)
    # what the relay does with the packet it looked at
    WAIT, QUEUE, FWD15, FWDD, VOID, SKIP = range(6)

    def __init__(self, cfg: SwitchConfig, queue_depth: int | None = None, send_depth: int | None = None):
        queue_depth = cfg.mgmt_queue_flits if queue_depth is None else queue_depth
        send_depth = cfg.mgmt_send_flits if send_depth is None else send_depth
        self.cfg = cfg
        n = cfg.ports
        self.nb = cfg.bytes_per_flit
        self.fpb = BLOCK_BYTES // self.nb
        self.queue = MgmtQueueModel(cfg, queue_depth)
        self.send_depth = send_depth
        self.max_flits = -(-cfg.vl15_max_packet_bytes // self.nb)
        # send buffer: the packet arriving (its kept flits), the complete ones (flit, cycle)
        self.arriving: list[dict] = []
        self.arriving_beats = 0
        self.arriving_dest = 0
        self.ragged = False
        self.ready_flits: deque = deque()         # committed flits not yet in the output stage
        self.s_out = None                         # the send buffer's output flit (with "tdest")
        self.s_out_sop = True
        self.cycle = 0
        # relay
        self.ptr = 0
        self.look = None                          # candidate being looked at
        self.move = None                          # (kind, source, output, vl) while moving a packet
        self.move_blocks = 0                      # ... and its credit blocks (LinkTx's sideband)
        self.own = [False] * n                    # the relay owns port o's data sources
        self.eg_mid = [False] * n
        self.data_owner = None                    # input whose packet is being copied into the queue
        self.c = {k: [0] * n for k in MGMT_PORT_COUNTERS}
        self.tx_errors = 0

    # ---------------------------------------------------------------- helpers
    def _head(self, inp, src):
        """(flit dict, valid) at source `src` (an input, or N for the processor)."""
        n = self.cfg.ports
        if src == n:
            f = self.s_out
            return (f or {k: 0 for k in _FL}), f is not None
        return {k: inp[f"v15__{src}__{k}"] for k in _FL}, bool(inp[f"v15__{src}__valid"])

    def _lrh(self, flit) -> LRH:
        return LRH.unpack((flit["data"] >> (self.cfg.data_width - 64)).to_bytes(8, "big"))

    def _decide(self, inp, src):
        """What to do with the packet at `src`, its LFT entry being `lft_port`:
        (kind, output index or None, vl, for the switch?)."""
        cfg = self.cfg
        n, nvl = cfg.ports, cfg.data_vls
        flit, _ = self._head(inp, src)
        h = self._lrh(flit)
        entry = lft_port_of(cfg, inp["lft_port"])     # (cfg.adaptive: without the adaptive bit 7)
        unicast = 0 < h.dlid < 0xC000
        lid = inp["switch_lid"]
        d = route_lid(cfg, h)                  # extended LIDs: the page above the DLID
        from_cpu = src == n
        if not from_cpu and (d == 0xFFFF or (lid and d == lid) or (unicast and entry == 0)):
            writing = self.data_owner is not None or (self.move is not None and self.move[0] == self.QUEUE)
            wants = any(inp[f"dat__{i}__valid"] and inp[f"dat__{i}__sop"] and inp[f"dat__{i}__here"]
                        for i in range(n))
            if writing or wants:
                return self.WAIT, None, 0, True
            free = self.queue.depth - len(self.queue.fifo)
            need = taken_flits(h.pktlen, self.nb, self.cfg.credit_vcrc)
            return (self.QUEUE if need <= free else self.VOID), None, 0, True
        port = (self.s_out["tdest"] if from_cpu and self.s_out["tdest"] else (entry if unicast else 0))
        if not 1 <= port <= n:
            return self.VOID, None, 0, False
        o = port - 1
        state = inp[f"state__{o}"]
        if h.vl == 15:
            return (self.FWD15 if state >= PortState.INIT else self.VOID), o, 15, False
        if from_cpu and h.vl < nvl and state == PortState.ACTIVE:
            ok = may_send(inp[f"fccl__{o}__{h.vl}"], inp[f"fctbs__{o}__{h.vl}"],
                          packet_blocks(h.pktlen, self.cfg.credit_vcrc))
            return (self.FWDD if ok and not self.eg_mid[o] else self.SKIP), o, h.vl, False
        return self.VOID, o, h.vl, False

    def _inc(self, name, i, k=1):
        self.c[name][i] = min(self.c[name][i] + k, _SAT)

    # ---------------------------------------------------------------- one cycle
    def peek(self, inp: dict) -> dict:
        return self.step(inp, commit=False)

    def step(self, inp: dict, commit: bool = True) -> dict:
        cfg = self.cfg
        n, nvl = cfg.ports, cfg.data_vls
        out = {}
        # ---- the data taps: packets for the switch copied into the queue
        wants = [i for i in range(n) if inp[f"dat__{i}__valid"] and inp[f"dat__{i}__sop"] and inp[f"dat__{i}__here"]]
        relay_writing = self.move is not None and self.move[0] == self.QUEUE
        free = self.queue.depth - len(self.queue.fifo)
        admit = None
        if wants and self.data_owner is None and not relay_writing:
            first = wants[0]
            # the most flits the receiver lets the packet have (models.credit.taken_flits)
            if inp[f"dat__{first}__blocks"] * self.fpb + (0 if self.cfg.credit_vcrc else 1) <= free:
                admit = first
        # ---- the relay's decision on the packet looked at in the last cycle
        dec = None
        if self.look is not None:
            dec = self._decide(inp, self.look)
            if dec[0] == self.WAIT:
                dec = None
        # ---- the LFT address: the candidate being looked at, else the round-robin choice
        # among the heads (N when there is none); a new look starts when the relay is idle
        heads = [i for i in range(n) if inp[f"v15__{i}__valid"] and inp[f"v15__{i}__sop"]]
        if self.s_out is not None and self.s_out_sop:
            heads.append(n)
        rr = min(heads, key=lambda k: (k - self.ptr) % (n + 1)) if heads else n
        pick = rr if heads and self.move is None and self.look is None else None
        addr_src = self.look if self.look is not None else rr
        flit, _ = self._head(inp, addr_src)
        out["lft_dlid"] = route_lid(self.cfg, self._lrh(flit))
        # ---- moving a packet
        mv = self.move
        take = False
        flit = None
        if mv is not None:
            kind, src, o, vl = mv
            flit, valid = self._head(inp, src)
            if kind == self.FWD15:
                sink = inp[f"src15__{o}__ready"]
            elif kind == self.FWDD:
                sink = inp[f"src__{o}__{vl}__ready"]
            else:
                sink = 1
            take = valid and bool(sink)
        for i in range(n):
            out[f"v15__{i}__ready"] = int(take and mv[1] == i)
        for o in range(n):
            fwd15 = mv is not None and mv[0] == self.FWD15 and mv[2] == o
            out[f"src15__{o}__valid"] = int(fwd15 and self._head(inp, mv[1])[1])
            for k in _FL:
                out[f"src15__{o}__{k}"] = flit[k] if flit is not None else self._head(inp, 0)[0][k]
        # ---- the per-output data switch
        claim = [dec is not None and dec[0] == self.FWDD and dec[1] == o for o in range(n)]
        for o in range(n):
            evl = inp[f"eg__{o}__vl"]
            for v in range(nvl):
                if self.own[o]:
                    mine = mv is not None and mv[0] == self.FWDD and mv[2] == o and mv[3] == v
                    out[f"src__{o}__{v}__valid"] = int(mine and self._head(inp, mv[1])[1])
                    for k in _FL:
                        out[f"src__{o}__{v}__{k}"] = flit[k] if flit is not None else self._head(inp, 0)[0][k]
                    out[f"src__{o}__{v}__blocks"] = self.move_blocks
                else:
                    out[f"src__{o}__{v}__valid"] = int(bool(inp[f"eg__{o}__valid"]) and evl == v)
                    for k in _FL + ["blocks"]:
                        out[f"src__{o}__{v}__{k}"] = inp[f"eg__{o}__{k}"]
            vsel = evl % nvl if nvl > 1 else 0
            out[f"eg__{o}__ready"] = int(bool(inp[f"src__{o}__{vsel}__ready"]) and not self.own[o] and not claim[o])
        # ---- the queue's write port
        qin = {"i__valid": 0, **{f"i__{k}": 0 for k in _FL}, "i__port": 0}
        if relay_writing:
            qin.update({f"i__{k}": flit[k] for k in _FL})
            qin.update({"i__valid": int(take), "i__port": mv[1] + 1})
        else:
            sel = self.data_owner if self.data_owner is not None else (wants[0] if wants else 0)
            qin.update({f"i__{k}": inp[f"dat__{sel}__{k}"] for k in _FL})
            qin["i__port"] = sel + 1
            qin["i__valid"] = int(bool(inp[f"dat__{sel}__valid"]) if self.data_owner is not None
                                  else admit is not None)
        qin["m_axis_tready"] = inp["m_axis_mgmt_tready"]
        qout = self.queue._axis()                 # the queue's outputs depend on its state only
        out.update({f"m_axis_mgmt_{k}": qout[f"m_axis_{k}"] for k in _AXO})
        # ---- the send buffer's inputs
        held = len(self.ready_flits) + len(self.arriving)
        out["s_axis_mgmt_tready"] = int(held < self.send_depth)
        beat = bool(inp["s_axis_mgmt_tvalid"]) and held < self.send_depth
        # ---- counters (registered: the values of the cycle's start)
        for c in MGMT_PORT_COUNTERS:
            out.update({f"{c}__{i}": self.c[c][i] for i in range(n)})
        out["tx_errors"] = self.tx_errors

        if not commit:
            return out
        # ================================================================ next state
        self.queue.step(qin)
        # the send buffer's output stage
        s_take = take and mv[1] == n
        if s_take:
            self.s_out_sop = bool(self.s_out["eop"])
            self.s_out = None
        if self.s_out is None and self.ready_flits and self.ready_flits[0][1] < self.cycle:
            self.s_out = self.ready_flits.popleft()[0]
        if beat:
            self._beat(inp)
        # data taps
        for i in wants:
            if i != admit:
                self._inc("relay_err", i)
        if admit is not None:
            self._inc("rcv", admit)
            if not inp[f"dat__{admit}__eop"]:
                self.data_owner = admit
        elif self.data_owner is not None and inp[f"dat__{self.data_owner}__valid"] \
                and inp[f"dat__{self.data_owner}__eop"]:
            self.data_owner = None
        # egress state
        for o in range(n):
            if inp[f"eg__{o}__valid"] and out[f"eg__{o}__ready"]:
                self.eg_mid[o] = not inp[f"eg__{o}__eop"]
        # the relay
        if mv is not None and take and flit["eop"]:
            if mv[0] == self.FWDD:
                self.own[mv[2]] = False
            self.move = None
        if pick is not None:
            self.look = pick
        if dec is not None:
            kind, o, vl, for_sw = dec
            src = self.look
            self.look = None
            self.ptr = (src + 1) % (n + 1)
            if kind != self.SKIP:
                self.move = (kind, src, o, vl)
                self.move_blocks = packet_blocks(self._lrh(self._head(inp, src)[0]).pktlen, self.cfg.credit_vcrc)
            if kind == self.FWDD:
                self.own[o] = True
            if src < n:
                if for_sw:
                    self._inc("for_switch", src)
                    if kind == self.VOID:
                        self._inc("v15_dropped", src)
                elif kind == self.VOID:
                    self._inc("relay_err", src)
                if kind == self.QUEUE:
                    self._inc("rcv", src)
            elif o is None:
                self.tx_errors = min(self.tx_errors + 1, _SAT)
            elif kind in (self.FWD15, self.FWDD):
                self._inc("xmit", o)
            elif kind == self.VOID:
                self._inc("xmit_discards", o)
        self.cycle += 1
        return out

    def _beat(self, inp):
        """One beat accepted by the send buffer: keep it, and at the packet's last beat
        commit it (complete and well formed) or drop it (tx_errors)."""
        nb = self.nb
        keep, last = inp["s_axis_mgmt_tkeep"], bool(inp["s_axis_mgmt_tlast"])
        if not self.arriving and self.arriving_beats == 0:
            self.arriving_dest = inp["s_axis_mgmt_tdest"]
        nkeep = bin(keep).count("1")
        body = inp["s_axis_mgmt_tdata"].to_bytes(nb, "little")            # lane k = byte k
        if len(self.arriving) < self.max_flits:
            self.arriving.append({"data": int.from_bytes(body, "big"), "bytes": nkeep, "bad": 0,
                                  "eop": int(last or len(self.arriving) == self.max_flits - 1),
                                  "sop": int(not self.arriving), "tdest": self.arriving_dest})
        beats = self.arriving_beats + 1
        if not last:
            self.ragged = self.ragged or keep != (1 << nb) - 1
            self.arriving_beats = beats
            return
        total = (beats - 1) * nb + nkeep
        pktlen = self._lrh(self.arriving[0]).pktlen
        good = (beats <= self.max_flits and not self.ragged and nkeep > 0 and keep == (1 << nkeep) - 1
                and total == 4 * pktlen + VCRC_BYTES)
        if good:
            for f in self.arriving:
                self.ready_flits.append((f, self.cycle))
        else:
            self.tx_errors = min(self.tx_errors + 1, _SAT)
        self.arriving, self.arriving_beats, self.ragged = [], 0, False
