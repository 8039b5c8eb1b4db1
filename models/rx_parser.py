"""Golden model of the link receive parser/checker, cycle by cycle (docs/rx-parser.md).

Written from the behaviour in docs/rx-parser.md, not from the RTL: it gathers each packet's
bytes and judges it at the end with the packet model (models/packet.py, models/crc.py),
where the RTL runs a CRC engine and byte counters alongside the data.

Cycle contract: `step(inputs)` takes the inputs present at one rising clock edge and
returns the outputs visible during that same cycle (before the edge); all outputs of this
block are registered, so they reflect the inputs of the previous edge.
"""
from __future__ import annotations

from contracts.config import LINK_PACKET_BYTES, LRH_BYTES, VCRC_BYTES, SwitchConfig
from contracts.counters import PARSER_COUNTERS
from contracts.defs import RxError, worst
from contracts.link import rx_parser
from models.crc import CRC16
from models.packet import LRH, FCPacket, min_pktlen

__all__ = ["RxParserModel"]

_SAT = 0xFFFFFFFF


class RxParserModel:
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        self.nb = cfg.bytes_per_flit
        self.outputs = rx_parser(cfg).ports()[1]       # contracts/link.py
        self.counters = {n: 0 for n in PARSER_COUNTERS}
        self._pending: list[str] = []   # verdicts of the last cycle, counted in this one
        self.mode = "idle"           # idle | fwd | drop | skip
        self.pkt = bytearray()       # bytes of the open packet
        self.lrh: LRH | None = None
        self.faults: set[RxError] = set()
        self.hdr = 0                 # LRH of the last forwarded packet (out__hdr holds it)
        self._out = self._idle_outputs()

    # ------------------------------------------------------------------ helpers
    def _idle_outputs(self) -> dict:
        o = {k: 0 for k in self.outputs}
        o["out__hdr"] = getattr(self, "hdr", 0)
        o.update({f"counters__{n}": v for n, v in self.counters.items()})
        return o

    def _count(self, name: str):
        # a verdict is counted one cycle after the packet's tail (docs/rx-parser.md)
        self._pending.append(name)

    def _verdict(self, err: RxError, link=False):
        if err == RxError.NONE:
            self._count("good_link" if link else "good_data")
        else:
            self._count(err.name.lower())

    def _flit(self, nxt, data, *, sop=0, eop=0, nbytes=None, err=RxError.NONE):
        nxt.update({"out__valid": 1, "out__data": data, "out__sop": sop, "out__eop": eop,
                    "out__bytes": self.nb if nbytes is None else nbytes,
                    "out__bad": int(err != RxError.NONE), "out__err": int(err)})

    def _terminate(self, nxt):
        """Cut the open packet (IBA: a packet without its end delimiter is malformed)."""
        if self.mode == "fwd":
            self._flit(nxt, 0, eop=1, err=RxError.TRUNCATED)
        if self.mode in ("fwd", "drop"):
            self._count("truncated")
        self.mode = "idle"

    def _tail_faults(self, bad: bool) -> set[RxError]:
        f = set()
        if bad:
            f.add(RxError.EBP)
        if self.lrh is None:          # not a data packet (stray flits, a long link packet)
            return f
        p = bytes(self.pkt)
        # IBA §7.8.2: the VCRC covers LRH..ICRC; a packet too short to hold one fails.
        msb = self.cfg.crc_msb_first              # the field's byte order (SwitchConfig)
        if len(p) < VCRC_BYTES or CRC16(p[:-VCRC_BYTES]) != CRC16.field(p[-VCRC_BYTES:], msb):
            f.add(RxError.VCRC)
        # most-significant byte first: a field split over two flits (the last flit holds one
        # byte; the length is not 2 mod 4, so the packet is malformed anyway) fails the check
        if msb and len(p) % self.cfg.bytes_per_flit == 1:
            f.add(RxError.VCRC)
        # IBA §7.7.8: PktLen counts 4-byte words from LRH through ICRC; the VCRC follows.
        if len(p) != 4 * self.lrh.pktlen + VCRC_BYTES:
            f.add(RxError.PKTLEN)
        return f

    # ------------------------------------------------------------------ one cycle
    def step(self, inp: dict) -> dict:
        now = self._out
        for name in self._pending:
            self.counters[name] = min(self.counters[name] + 1, _SAT)
        self._pending = []
        nxt = {k: 0 for k in self.outputs}
        nxt["out__hdr"] = self.hdr
        self._cycle(inp, nxt)
        nxt["out__hdr"] = self.hdr
        nxt.update({f"counters__{n}": v for n, v in self.counters.items()})
        self._out = nxt
        return now

    def _cycle(self, i, nxt):
        if not i["rx__up"]:
            self._terminate(nxt)
            return
        if not i["rx__valid"]:
            return
        data, sop, eop, bad = i["rx__data"], i["rx__sop"], i["rx__eop"], i["rx__bad"]
        n = i["rx__bytes"] if eop else self.nb
        raw = data.to_bytes(self.nb, "big")
        if sop:
            was_fwd = self.mode == "fwd"
            self._terminate(nxt)
            self.pkt, self.lrh = bytearray(raw[:n]), None
            if was_fwd and not i["rx__link"]:
                # The terminator took this cycle's output slot: the new data packet is lost
                # (a link packet needs no slot on the data output).
                self._start_drop({RxError.FRAMING}, eop, bad)
                return
            if i["rx__link"]:
                self._link(raw, n, eop, bad, nxt)
                return
            self.lrh = LRH.unpack(raw[:LRH_BYTES])
            faults = set()
            if self.lrh.lver != 0:                                   # IBA §7.7.3
                faults.add(RxError.LVER)
            if self.lrh.pktlen < min_pktlen(self.lrh.lnh):           # IBA §7.7.8
                faults.add(RxError.SHORT)
            if self.lrh.pktlen > self.cfg.max_pktlen:
                faults.add(RxError.LONG)
            if faults:
                self._start_drop(faults, eop, bad)
                return
            self.hdr = self.lrh.to_int()
            if eop:
                err = worst(*self._tail_faults(bad))
                self._flit(nxt, data, sop=1, eop=1, nbytes=n, err=err)
                self._verdict(err)
                self.mode = "idle"
            else:
                self._flit(nxt, data, sop=1)
                self.mode, self.faults = "fwd", set()
            return
        # a flit without sop
        if self.mode == "idle":
            self.pkt, self.lrh = bytearray(raw[:n]), None
            self._start_drop({RxError.FRAMING}, eop, bad)
        elif self.mode in ("fwd", "drop"):
            self.pkt += raw[:n]
            if len(self.pkt) > self.cfg.max_packet_bytes:
                err = worst(*self.faults, RxError.LONG)
                if self.mode == "fwd":
                    self._flit(nxt, data, eop=1, nbytes=n, err=err)
                self._verdict(err)
                self.mode = "idle" if eop else "skip"
            elif eop:
                err = worst(*self.faults, *self._tail_faults(bad))
                if self.mode == "fwd":
                    self._flit(nxt, data, eop=1, nbytes=n, err=err)
                self._verdict(err)
                self.mode = "idle"
            elif self.mode == "fwd":
                self._flit(nxt, data)
        elif self.mode == "skip" and eop:
            self.mode = "idle"

    def _start_drop(self, faults, eop, bad):
        if eop:
            self._verdict(worst(*faults, *self._tail_faults(bad)))
            self.mode = "idle"
        else:
            self.mode, self.faults = "drop", set(faults)

    def _link(self, raw, n, eop, bad, nxt):
        """A link packet (IBA §7.9.4): 6 bytes, one flit, Op 0 or 1, good LPCRC."""
        if not eop:
            self._start_drop({RxError.LINK_FORMAT}, False, bad)
            return
        body = raw[:LINK_PACKET_BYTES]
        fc = FCPacket.unpack(body)
        faults = set()
        if bad:
            faults.add(RxError.EBP)
        if n != LINK_PACKET_BYTES or fc.op > 1:
            faults.add(RxError.LINK_FORMAT)
        if CRC16(body[:4]) != CRC16.field(body[4:6], self.cfg.crc_msb_first):
            faults.add(RxError.LPCRC)
        err = worst(*faults)
        self._verdict(err, link=True)
        if err == RxError.NONE:
            nxt.update({"fc__valid": 1, "fc__op": fc.op, "fc__fctbs": fc.fctbs, "fc__vl": fc.vl,
                        "fc__fccl": fc.fccl})
        self.mode = "idle"
