"""Congestion marking (IBA Annex A10 switch behaviour; docs/reliability.md, "Congestion
control"): which packets leave with BTH.FECN set.

An output VL's queue is the sum of the virtual output queues for it at every input: the
blocks of the unicast packets queued for (output o, output VL v) that have not started to
leave. `enq[i]` reports the packet input i queues this cycle (its sop written: queue
(port, vl), `blocks` charged), `deq[i]` the packet input i starts to read (a real read or a
discard: the queue's head leaves it). Multicast packets have a queue of their own and are
not counted. The count is registered: `congested[o][v]` is "queue (o, v) held at least
(16 - threshold) * cfg.cc_unit blocks at the last clock edge", threshold the port's
CC_PORT threshold (0: never).

`eg[o]` reports the sop of the packet the egress of output o takes this cycle: its output
VL, its LRH's LNH and PktLen. It is *eligible* when the port's threshold is not 0, its VL
is congested, it has a BTH (LNH 2 with PktLen >= 5, LNH 3 with PktLen >= 15: the BTH is
all there) and it is at least 64 * packet_size bytes long (4 * PktLen >= 64 * packet_size).
Of the eligible packets of a port every (marking_rate + 1)-th is marked: `mark[o]`, in the
same cycle, for the egress to set the bit (hw/switch/egress.py); the first eligible packet
after reset is marked. `marked[o]` counts the marks (saturating).

The A10 Victim_Mask (mark only at the root of congestion, not at a port that is congested
because it has no credit) is not modelled: every port marks whether root or victim, as a
port with its Victim_Mask bit set does.

Ports:
  enq[i], deq[i]  In   valid, port, vl, blocks
  cc[o]           In   CC_PORT of output o: threshold 3:0, packet_size 15:8, marking_rate 31:16
  eg[o]           In   valid (a sop taken), vl, lnh, pktlen
  mark[o]         Out  mark the packet of eg[o] (combinational)
  congested[o]    Out  a bit per output VL (observability)
  marked[o]       Out  packets marked at output o
"""
from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.common.config import SwitchConfig

__all__ = ["CongestionMarker", "queue_event_signature"]


def queue_event_signature(cfg: SwitchConfig) -> wiring.Signature:
    return wiring.Signature({"valid": Out(1), "port": Out(range(cfg.ports)), "vl": Out(range(max(cfg.data_vls, 2))),
                             "blocks": Out(cfg.max_packet_blocks.bit_length())})


class CongestionMarker(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        n, nvl = cfg.ports, cfg.data_vls
        self.qmax = n * nvl * cfg.buffer_blocks_per_vl
        super().__init__({
            "enq": In(queue_event_signature(cfg)).array(n),
            "deq": In(queue_event_signature(cfg)).array(n),
            "cc": In(32).array(n),
            "eg": In(wiring.Signature({"valid": Out(1), "vl": Out(range(max(nvl, 2))), "lnh": Out(2),
                                       "pktlen": Out(11)})).array(n),
            "mark": Out(1).array(n),
            "congested": Out(nvl).array(n),
            "marked": Out(32).array(n),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        n, nvl, unit = cfg.ports, cfg.data_vls, cfg.cc_unit
        qw = self.qmax.bit_length()
        for o in range(n):
            thr = self.cc[o][0:4]
            size = self.cc[o][8:16]
            rate = self.cc[o][16:32]
            level = Signal(range(16 * unit + 1), name=f"level{o}")        # (16 - threshold) * unit
            m.d.comb += level.eq((16 - thr) * unit)
            for v in range(nvl):
                q = Signal(qw, name=f"q{o}_{v}")
                add = sum(Mux(e.valid & (e.port == o) & (e.vl == v), e.blocks, 0) for e in self.enq)
                sub = sum(Mux(e.valid & (e.port == o) & (e.vl == v), e.blocks, 0) for e in self.deq)
                m.d.sync += q.eq(q + add - sub)
                m.d.comb += self.congested[o][v].eq((thr != 0) & (q >= level))
            e = self.eg[o]
            has_bth = Mux(e.lnh == 2, e.pktlen >= 5, (e.lnh == 3) & (e.pktlen >= 15))
            eligible = Signal(name=f"eligible{o}")
            m.d.comb += eligible.eq(e.valid & self.congested[o].bit_select(e.vl, 1) & has_bth
                                    & (e.pktlen >= size * 16))
            skip = Signal(16, name=f"skip{o}")                 # eligible packets still to pass unmarked
            m.d.comb += self.mark[o].eq(eligible & (skip == 0))
            with m.If(eligible):
                m.d.sync += skip.eq(Mux(skip == 0, rate, skip - 1))
            with m.If(self.mark[o] & (self.marked[o] != 0xFFFFFFFF)):
                m.d.sync += self.marked[o].eq(self.marked[o] + 1)
        return m
