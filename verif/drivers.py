"""Cycle-level stream drivers for lock-step tests (simulator-agnostic).

A `StreamSource` presents the flits of queued packets on a valid/ready stream, obeying the
stream rules (once valid is raised it stays, with the same payload, until ready takes the
flit). Idle cycles are inserted only between flits, never under a presented one. The
lock-step loop calls `inputs()` for a cycle's input fields and `advance(ready)` with the
DUT's ready of that cycle.
"""
from __future__ import annotations

import itertools
from collections import deque

from models.packet import Flit

__all__ = ["StreamSource", "StreamSink", "axil_pauses", "stream_pauses", "lrh_blocks"]


def lrh_blocks(width: int, credit_vcrc: bool = True):
    """`blocks_of` for a StreamSource feeding a link transmitter: the credit blocks of the
    packet whose sop flit (`width` bits, byte 0 in the top lane) is given, decoded here from
    the LRH (PktLen: bytes 4-5, low 11 bits, in 4-byte words; 64-byte blocks, counting the
    2-byte VCRC when `credit_vcrc`), apart from the models."""
    def blocks_of(data: int) -> int:
        pktlen = (data >> (width - 48)) & 0x7FF
        return (4 * pktlen + (2 if credit_vcrc else 0) + 63) // 64
    return blocks_of


class StreamSource:
    """`blocks_of`, if given, adds the `blocks` sideband of a link transmitter's source
    (hw/link/link_tx.py): blocks_of(sop flit data) for every flit of the packet."""

    def __init__(self, prefix: str, idle=None, width: int = 64, blocks_of=None):
        self.p = prefix
        self.q: deque[Flit] = deque()
        self.idle = idle if idle is not None else itertools.repeat(False)
        self.cur: Flit | None = None
        self.sent_packets = 0
        self.blocks_of = blocks_of
        self.blocks = 0

    def send(self, flits: list[Flit]):
        self.q.extend(flits)

    @property
    def busy(self) -> bool:
        return self.cur is not None or bool(self.q)

    def inputs(self) -> dict:
        if self.cur is None and self.q and not next(self.idle):
            self.cur = self.q.popleft()
        f = self.cur
        p = self.p
        if f is None:
            out = {f"{p}__valid": 0, f"{p}__data": 0, f"{p}__sop": 0, f"{p}__eop": 0, f"{p}__bytes": 0,
                   f"{p}__bad": 0}
        else:
            out = {f"{p}__valid": 1, f"{p}__data": f.data, f"{p}__sop": int(f.sop), f"{p}__eop": int(f.eop),
                   f"{p}__bytes": f.nbytes if f.eop else 0, f"{p}__bad": int(f.bad)}
            if self.blocks_of is not None and f.sop:
                self.blocks = self.blocks_of(f.data)
        if self.blocks_of is not None:
            out[f"{p}__blocks"] = self.blocks if f is not None else 0
        return out

    def advance(self, ready: int):
        if self.cur is not None and ready:
            if self.cur.eop:
                self.sent_packets += 1
            self.cur = None


class StreamSink:
    """Collects packets from a valid/ready stream given the per-cycle outputs."""

    def __init__(self, prefix: str, width: int, ready_gen=None):
        self.p, self.width = prefix, width
        self.ready_gen = ready_gen if ready_gen is not None else itertools.repeat(True)
        self.packets: list[tuple[bytes, bool]] = []
        self._cur: list[Flit] = []
        self.ready = 1

    def next_ready(self) -> int:
        self.ready = int(next(self.ready_gen))
        return self.ready

    def observe(self, o: dict, ready: int | None = None):
        from models.packet import from_flits
        p = self.p
        r = self.ready if ready is None else ready
        if not (o[f"{p}__valid"] and r):
            return
        eop = bool(o[f"{p}__eop"])
        nb = o[f"{p}__bytes"] if eop else self.width // 8
        self._cur.append(Flit(o[f"{p}__data"], bool(o[f"{p}__sop"]), eop, nb))
        if eop:
            self.packets.append((from_flits(self._cur, self.width), bool(o[f"{p}__bad"])))
            self._cur = []


def axil_pauses(axi, rng, *, p_pause: float = 0.3, length: int = 97):
    """Random pause patterns on all five channels of a cocotbext-axi AxiLiteMaster: the
    master then holds awvalid/wvalid/arvalid low at times and, on the B and R channels,
    bready/rready low, so that the slave must honour every handshake (a slave that took
    `valid | ready` for `valid & ready` loses or repeats transfers). `rng` comes from the
    test's seed; the patterns repeat every `length` cycles."""
    chans = [axi.write_if.aw_channel, axi.write_if.w_channel, axi.write_if.b_channel,
             axi.read_if.ar_channel, axi.read_if.r_channel]
    for ch in chans:
        pattern = [rng.random() < p_pause for _ in range(length)]
        ch.set_pause_generator(itertools.cycle(pattern))


def stream_pauses(drv, rng, p_pause: float = 0.2, length: int = 89):
    """A random pause pattern on a cocotbext-axi AXI4-Stream source or sink (a sink's pause
    holds tready low)."""
    pattern = [rng.random() < p_pause for _ in range(length)]
    drv.set_pause_generator(itertools.cycle(pattern))
