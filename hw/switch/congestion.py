"""Congestion marking (IBA Annex A10 switch behaviour; docs/reliability.md, "Congestion
control"): which packets leave with BTH.FECN set.

An output VL's queue is the sum of the virtual output queues for it at every input: the
blocks of the unicast packets queued for (output o, output VL v) that have not started to
leave. `enq[i]` is input i's write into its buffer (the ingress's flits: a sop flit not
`mcast` queues a packet for (port, vl), `blocks` charged), `deq[i]` input i's read starts
(`start` not `mc`: a real read or a discard takes the head of queue (port, vl), `blocks`
long, hw/switch/voq.py `rd_blocks`). Multicast packets have a queue of their own and are not
counted. The count is registered: `congested[o][v]` is "queue (o, v) held at least
(16 - threshold) * cfg.cc_unit blocks at the last clock edge", threshold the port's
CC_PORT threshold (0: never).

`eg[o]` is the flit the crossbar offers the egress of output o (`valid`, `sop`, `data`, its
output `vl`) and whether the egress takes it (`ready`): a sop taken starts a packet, whose
LRH (the first 8 bytes of the flit) gives LNH and PktLen. It is *eligible* when the port's threshold is not 0, its VL
is congested, it has a BTH (LNH 2 with PktLen >= 5, LNH 3 with PktLen >= 15: the BTH is
all there) and it is at least 64 * packet_size bytes long (4 * PktLen >= 64 * packet_size).
Of the eligible packets of a port every (marking_rate + 1)-th is marked: `mark[o]`, in the
same cycle, for the egress to set the bit (hw/switch/egress.py); the first eligible packet
after reset is marked. `marked[o]` counts the marks (saturating).

The A10 Victim_Mask (mark only at the root of congestion, not at a port that is congested
because it has no credit) is not modelled: every port marks whether root or victim, as a
port with its Victim_Mask bit set does.

Ports:
  enq[i]          In   valid, sop, mcast, port, vl, blocks (the ingress's write)
  deq[i]          In   start, mc, port, vl, blocks (the VOQ reader's start)
  cc[o]           In   CC_PORT of output o: threshold 3:0, packet_size 15:8, marking_rate 31:16
  eg[o]           In   valid, sop, data, vl (the crossbar's flit for output o), ready (taken)
  mark[o]         Out  mark the packet of eg[o] (combinational)
  congested[o]    Out  a bit per output VL (observability)
  marked[o]       Out  packets marked at output o
"""
from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring

from contracts import switch as specs
from contracts.config import SwitchConfig
from hw.common.layouts import LRHLayout, header_at
from hw.common.ports import signature

__all__ = ["CongestionMarker"]


class CongestionMarker(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        n, nvl = cfg.ports, cfg.data_vls
        self.qmax = n * nvl * cfg.buffer_blocks_per_vl
        super().__init__(signature(specs.congestion(cfg)))

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
                add = sum(Mux(e.valid & e.sop & ~e.mcast & (e.port == o) & (e.vl == v), e.blocks, 0)
                          for e in self.enq)
                sub = sum(Mux(d.start & ~d.mc & (d.port == o) & (d.vl == v), d.blocks, 0) for d in self.deq)
                m.d.sync += q.eq(q + add - sub)
                m.d.comb += self.congested[o][v].eq((thr != 0) & (q >= level))
            e = self.eg[o]
            lrh = header_at(e.data, cfg.data_width, LRHLayout)
            has_bth = Mux(lrh.lnh == 2, lrh.pktlen >= 5, (lrh.lnh == 3) & (lrh.pktlen >= 15))
            eligible = Signal(name=f"eligible{o}")
            m.d.comb += eligible.eq(e.valid & e.sop & e.ready & self.congested[o].bit_select(e.vl, 1) & has_bth
                                    & (lrh.pktlen >= size * 16))
            skip = Signal(16, name=f"skip{o}")                 # eligible packets still to pass unmarked
            m.d.comb += self.mark[o].eq(eligible & (skip == 0))
            with m.If(eligible):
                m.d.sync += skip.eq(Mux(skip == 0, rate, skip - 1))
            with m.If(self.mark[o] & (self.marked[o] != 0xFFFFFFFF)):
                m.d.sync += self.marked[o].eq(self.marked[o] + 1)
        return m
