"""Golden model of the link receive side (docs/link-layer.md), cycle by cycle.

Composes the receive parser's model with a model of what IBA §7.9 asks of a receiver:
per-VL buffers measured in 64-byte blocks, ABR, the advertised FCCL, overrun detection, the
VL15 rules and port-state gating. Written from the spec's formulas (models/credit.py): the
overrun test is the modular IBA condition, where the RTL compares n with the free blocks.

`step(inputs)` returns the outputs of that cycle and advances one clock edge.
"""
from __future__ import annotations

from collections import deque

from contracts.config import BLOCK_BYTES, VCRC_BYTES, SwitchConfig
from contracts.counters import LINK_RX_COUNTERS, PARSER_COUNTERS
from contracts.defs import PortState
from contracts.streams import FLIT
from models.credit import advertised_fccl, is_overrun, packet_blocks, taken_flits
from models.packet import LRH
from models.rx_parser import RxParserModel

__all__ = ["LinkRxModel"]

_BUF = ["valid", *FLIT]
_FC = ["valid", "op", "fctbs", "vl", "fccl"]
_SAT = 0xFFFFFFFF


_ACC = ["valid", *FLIT, "hdr", "vl", "blocks"]


class LinkRxModel:
    """`buffered=False`: data-VL packets leave on `acc` and come back as `release` inputs."""

    def __init__(self, cfg: SwitchConfig, prefix: str = "", buffered: bool = True):
        self.cfg = cfg
        self.p = prefix
        self.buffered = buffered
        self._acc = None
        self._hdr = 0
        self.nb = cfg.bytes_per_flit
        self.fpb = BLOCK_BYTES // self.nb
        self.parser = RxParserModel(cfg)
        nvl = cfg.data_vls
        self.nvl = nvl
        # index nvl = VL15; entries (flit dict, n, cycle written): a buffer is read synchronously,
        # so a flit is on its output from the second cycle after its write
        self.bufs = [deque() for _ in range(nvl + 1)]
        self.cycle = 0
        self.free = [cfg.buffer_blocks_per_vl] * nvl
        self.abr = [0] * nvl
        self.vl15_depth = cfg.vl15_buffer_blocks * self.fpb
        self.vl15_used = 0                                   # flits reserved in the VL15 buffer
        self.rel = [0] * (nvl + 1)                           # blocks of the packet being drained
        self.mode, self.cur, self.left = "idle", 0, 0
        self.why = None                       # the reason of the refused packet still arriving
        self.fc_out = {k: 0 for k in _FC}
        self.data_rx = 0                     # a data (not VL15) packet accepted last cycle
        self.counters = {n: 0 for n in LINK_RX_COUNTERS if n not in PARSER_COUNTERS}
        self._names = [f"vl__{i}" for i in range(nvl)] + ["vl15"]
        if not buffered:
            self._names = [None] * nvl + ["vl15"]

    def _readable(self, k) -> bool:
        return bool(self.bufs[k]) and self.cycle >= self.bufs[k][0][2] + 2

    def _count(self, name, amount=1):
        self.counters[name] = min(self.counters[name] + amount, _SAT)

    def outputs(self, parser_out: dict) -> dict:
        p = self.p
        o = {}
        for k, name in enumerate(self._names):
            if name is None:
                continue
            if self._readable(k):
                f = self.bufs[k][0][0]
                o.update({f"{p}{name}__{x}": f[x] for x in _BUF[1:]})
                o[f"{p}{name}__valid"] = 1
            else:
                o.update({f"{p}{name}__{x}": 0 for x in _BUF})
        for i in range(self.nvl):
            o[f"{p}fccl__{i}"] = advertised_fccl(self.abr[i], self.free[i])
        o.update({f"{p}fc_rx__{k}": v for k, v in self.fc_out.items()})
        o[f"{p}data_rx"] = self.data_rx
        for n in PARSER_COUNTERS:
            o[f"{p}counters__{n}"] = parser_out[f"counters__{n}"]
        o.update({f"{p}counters__{n}": v for n, v in self.counters.items()})
        return o

    def step(self, inp: dict) -> dict:
        p = self.p
        pin = {k[len(p):]: v for k, v in inp.items() if k.startswith(p + "rx__")}
        po = self.parser.step(pin)           # the parser's outputs in this cycle
        out = self.outputs(po)
        state = inp[f"{p}state"]
        link_down = state == PortState.DOWN or not inp[f"{p}rx__up"]

        # drain: a popped eop frees its packet's blocks (after this cycle's checks)
        release = [0] * (self.nvl + 1)
        if not self.buffered:
            release[:self.nvl] = [inp[f"{p}release__{i}"] for i in range(self.nvl)]
        self._acc = None
        for k, name in enumerate(self._names):
            if name is not None and self._readable(k) and inp[f"{p}{name}__ready"]:
                f, n, _ = self.bufs[k].popleft()
                if f["sop"]:
                    self.rel[k] = n
                if f["eop"]:
                    release[k] = self.rel[k]

        accepted = None
        if po["out__valid"]:
            accepted = self._data_flit(po, state)

        for i in range(self.nvl):
            taken = accepted[1] if accepted and accepted[0] == i else 0
            self.free[i] += release[i] - taken
            if link_down:
                self.abr[i] = 0                                # credit state restarts
            elif po["fc__valid"] and po["fc__vl"] == i:
                self.abr[i] = po["fc__fctbs"]                  # IBA §7.9.4
            elif taken:
                self.abr[i] = (self.abr[i] + taken) % 4096
        taken15 = accepted[1] if accepted and accepted[0] == self.nvl else 0
        self.vl15_used += taken15 - release[self.nvl]

        if not self.buffered:
            a = self._acc or {k: 0 for k in _ACC}
            out.update({f"{p}acc__{k}": a[k] for k in _ACC})
        fc_ok = po["fc__valid"] and po["fc__vl"] < self.nvl and not link_down
        if po["fc__valid"] and po["fc__vl"] >= self.nvl and state in (PortState.ARMED, PortState.ACTIVE):
            self._count("fc_vl_invalid")                       # in Init: ignored (not yet configured)
        self.fc_out = {"valid": int(fc_ok), **{k: po[f"fc__{k}"] for k in _FC[1:]}}
        self.data_rx = int(accepted is not None and accepted[0] != self.nvl)
        self.cycle += 1
        return out

    def _data_flit(self, po, state):
        self._hdr = po["out__hdr"]
        flit = {"data": po["out__data"], "bytes": po["out__bytes"], "sop": po["out__sop"],
                "eop": po["out__eop"], "bad": po["out__bad"]}
        if po["out__sop"]:
            lrh = LRH.unpack(po["out__hdr"].to_bytes(8, "big"))
            wire = 4 * lrh.pktlen + VCRC_BYTES
            n = packet_blocks(lrh.pktlen, self.cfg.credit_vcrc)
            nflits = -(-wire // self.nb)
            rx_on = state in (PortState.ARMED, PortState.ACTIVE)
            if state == PortState.DOWN or (not rx_on and lrh.vl != 15):
                why = "state_drop"
            elif lrh.vl == 15:
                # IBA §7.6.5: VL15 packets are small and never flow controlled
                too_long = wire > self.cfg.vl15_max_packet_bytes
                why = "vl15_dropped" if too_long or nflits > self.vl15_depth - self.vl15_used else None
            elif lrh.vl >= self.nvl:
                why = "vl_invalid"
            elif is_overrun(self.abr[lrh.vl], self.free[lrh.vl], n):
                why = "overrun"
            else:
                why = None
            if why:
                # counted at the packet's end, and only if it ended good: one that ended bad
                # is the parser's to count
                if flit["eop"]:
                    if not flit["bad"]:
                        self._count(why)
                    self.mode = "idle"
                else:
                    self.why, self.mode = why, "drop"
                return None
            k = self.nvl if lrh.vl == 15 else lrh.vl
            charge = nflits if k == self.nvl else n
            charged_flits = nflits if k == self.nvl else taken_flits(lrh.pktlen, self.nb, self.cfg.credit_vcrc)
            self._count("rcv_pkts")
            self._count("rcv_words", lrh.pktlen)
            self.cur, self.left = k, charged_flits
            self._write(flit, charge)
            return (k, charge)
        if self.mode == "accept":
            self._write(flit, 0)
        elif self.mode == "drop" and flit["eop"]:
            if self.why and not flit["bad"]:
                self._count(self.why)
            self.mode, self.why = "idle", None
        return None

    def _write(self, flit, n):
        """Write one flit of the accepted packet; never past the flits it was charged."""
        self.left -= 1
        if not flit["eop"] and self.left == 0:
            flit = dict(flit, eop=1, bad=1)        # cut: it ran past its PktLen
            self.mode = "drop"
        elif flit["eop"]:
            self.mode = "idle"
        else:
            self.mode = "accept"
        if self.buffered or self.cur == self.nvl:
            self.bufs[self.cur].append((flit, n, self.cycle))
        else:
            self._acc = {**flit, "valid": 1, "hdr": self._hdr, "vl": self.cur, "blocks": n}
