"""Egress rewrite for one output port: LRH.VL := the output VL (SL2VL), VCRC regenerated
(IBA §7.8.2: the VCRC covers the VL, so it changes hop by hop); the ICRC is untouched.

A one-flit holding stage lets the VCRC be placed even when it straddles two flits: a held
flit leaves when the next flit of its packet arrives (or at once if it is the eop), so when
the eop shows only one byte, the flit before it is still here to take the VCRC's first byte.
The CRC runs over the flits as they leave, with the VL already rewritten.

Ports:
  i    In   flits from the crossbar (valid data sop eop bytes bad, ready out) and `vl`, the
            output VL, valid with the sop flit
  o    Out  rewritten flits (ready in); one cycle of latency; `vl` repeated for the LinkTx
            source demux, valid with every flit
"""
from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.common.config import SwitchConfig
from hw.common.crc import CRC16_IB, CRCEngine

__all__ = ["Egress"]


class Egress(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        flit = {"valid": Out(1), "data": Out(cfg.data_width), "sop": Out(1), "eop": Out(1),
                "bytes": Out(cfg.bytes_width), "bad": Out(1), "vl": Out(4), "ready": In(1)}
        super().__init__({"i": In(wiring.Signature(flit)), "o": Out(wiring.Signature(flit))})

    def elaborate(self, platform):
        m = Module()
        W, nb = self.cfg.data_width, self.cfg.bytes_per_flit
        i, o = self.i, self.o

        hv = Signal()
        h = {k: Signal(len(getattr(i, k)), name=f"h_{k}") for k in ("data", "sop", "eop", "bytes", "bad", "vl")}
        vl_q = Signal(4)                     # output VL of the packet in progress

        emit = Signal()
        m.d.comb += emit.eq(hv & (i.valid | h["eop"]) & o.ready)
        m.d.comb += i.ready.eq(~hv | emit)
        take = i.valid & i.ready

        # incoming flit, VL rewritten on the sop flit (LRH byte 0, high nibble)
        vl_in = Mux(i.sop, i.vl, vl_q)
        data_in = Signal(W)
        m.d.comb += data_in.eq(Mux(i.sop, Cat(i.data[:W - 4], i.vl), i.data))
        with m.If(take):
            m.d.sync += [h["data"].eq(data_in), h["sop"].eq(i.sop), h["eop"].eq(i.eop), h["bytes"].eq(i.bytes),
                         h["bad"].eq(i.bad), h["vl"].eq(vl_in), hv.eq(1)]
            with m.If(i.sop):
                m.d.sync += vl_q.eq(i.vl)
        with m.Elif(emit):
            m.d.sync += hv.eq(0)

        # VCRC over the leaving flit: all of it, except the last two packet bytes
        m.submodules.crc = crc = CRCEngine(CRC16_IB, W)
        split = Signal()                     # the next flit is an eop holding one byte
        m.d.comb += split.eq(~h["eop"] & i.valid & i.eop & (i.bytes == 1))
        count = Signal(range(nb + 1))
        m.d.comb += count.eq(Mux(h["eop"], Mux(h["bytes"] > 2, h["bytes"] - 2, 0), Mux(split, nb - 1, nb)))
        m.d.comb += [crc.valid.eq(emit), crc.first.eq(h["sop"]), crc.data.eq(h["data"]), crc.nbytes.eq(count)]
        v = crc.crc                          # VCRC through this flit; final on the last covered one
        lo, hi = v[:8], v[8:]

        out = Signal(W)
        m.d.comb += out.eq(h["data"])
        with m.If(h["eop"]):
            with m.If(h["bytes"] == 1):
                m.d.comb += out.word_select(nb - 1, 8).eq(hi)                 # byte 0 of the flit
            with m.Else():
                for b in range(2, nb + 1):
                    with m.If(h["bytes"] == b):
                        m.d.comb += [out.word_select(nb - (b - 2) - 1, 8).eq(lo),
                                     out.word_select(nb - (b - 1) - 1, 8).eq(hi)]
        with m.Elif(split):
            m.d.comb += out.word_select(0, 8).eq(lo)                          # the flit's last byte

        m.d.comb += [o.valid.eq(hv & (i.valid | h["eop"])), o.data.eq(out), o.sop.eq(h["sop"]),
                     o.eop.eq(h["eop"]), o.bytes.eq(h["bytes"]), o.bad.eq(h["bad"]), o.vl.eq(h["vl"])]
        return m
