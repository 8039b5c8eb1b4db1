"""Monitors that rebuild packets from per-cycle output dicts (simulator-agnostic)."""
from __future__ import annotations

from dataclasses import dataclass

from models.packet import Flit, from_flits

__all__ = ["ParsedPacket", "ParsedMonitor", "FCMonitor"]


@dataclass
class ParsedPacket:
    data: bytes
    bad: bool
    err: int
    hdr: int
    nflits: int


class ParsedMonitor:
    """Collects the receive parser's `out` stream into packets; checks its framing."""

    def __init__(self, width: int, prefix: str = "out"):
        self.width, self.p = width, prefix
        self.packets: list[ParsedPacket] = []
        self._cur: list[Flit] | None = None
        self._hdr = 0

    def __call__(self, inp: dict, o: dict):
        p = self.p
        if not o[f"{p}__valid"]:
            return
        sop, eop = o[f"{p}__sop"], o[f"{p}__eop"]
        if sop:
            assert self._cur is None, "output stream: sop while a packet is open"
            self._cur, self._hdr = [], o[f"{p}__hdr"]
        assert self._cur is not None, "output stream: flit outside a packet"
        self._cur.append(Flit(o[f"{p}__data"], bool(sop), bool(eop), o[f"{p}__bytes"]))
        if eop:
            self.packets.append(ParsedPacket(from_flits(self._cur, self.width), bool(o[f"{p}__bad"]),
                                             o[f"{p}__err"], self._hdr, len(self._cur)))
            self._cur = None


class FCMonitor:
    def __init__(self, prefix: str = "fc"):
        self.p = prefix
        self.packets: list[tuple[int, int, int, int]] = []

    def __call__(self, inp: dict, o: dict):
        p = self.p
        if o[f"{p}__valid"]:
            self.packets.append((o[f"{p}__op"], o[f"{p}__fctbs"], o[f"{p}__vl"], o[f"{p}__fccl"]))
