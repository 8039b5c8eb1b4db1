"""Egress rewrite for one output port: LRH.VL := the output VL (SL2VL), VCRC regenerated
(IBA §7.8.2: the VCRC covers the VL, so it changes hop by hop); the ICRC is untouched.

One cycle: the rewrite is computed on the flit offered on `i`, and the flit taken in cycle t
is on `o` from t+1. The VCRC's place is known from the LRH's PktLen at the sop (the VCRC is
bytes 4*PktLen and 4*PktLen+1 of the packet), so the CRC runs over the flits as they pass,
with the VL already rewritten, and the VCRC is written into the flit that holds it. When the
VCRC straddles two flits, its first byte goes into the last byte of one flit and its second
byte is kept for the first byte of the next.

Both directions end at registers (docs/fpga.md): the rewritten flits go into a two-flit
queue whose head is `o` (the output register and a skid register behind it), and `i.ready`
is "the queue has room" as of the last edge. So neither the link transmitter's `ready` nor
its credit test of the flit's PktLen runs back through the CRC, the crossbar and the VOQ in
one cycle. Full rate: a flit can be taken every cycle while `o` is taken every cycle, and
after a stall the skid register's flit leaves first with no bubble.

Congestion marking (IBA Annex A10; hw/switch/congestion.py): `fecn`, valid with the sop
flit, sets BTH.FECN (bit 7 of BTH byte 4: packet byte 12, or 52 behind a GRH) of a packet
with a BTH (LNH 2 or 3). The VCRC is computed over the marked byte, as over the rewritten
VL; the ICRC does not cover it (IBA §7.8.1: FECN is masked as a variant field).

A packet whose length disagrees with its PktLen is bad (the receive checker marks its tail
bad, IBA EBP): its flits pass unchanged except where PktLen puts the VCRC; it never stalls
the egress.

Ports:
  i    In   flits from the crossbar (valid data sop eop bytes bad, ready out) and `vl`, the
            output VL, valid with the sop flit
  fecn In   mark this packet with FECN (valid with the sop flit)
  o    Out  rewritten flits (ready in), from the cycle after they were taken; `vl` repeated
            for the LinkTx source demux and `blocks`, the packet's credit blocks from its
            PktLen (LinkTx's credit test), both valid with every flit
"""
from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring

from contracts import switch as specs
from contracts.config import SwitchConfig
from contracts.streams import PACKET_BLOCKS_BITS
from hw.common.crc import CRC16_IB, CRCEngine, crc16_wire
from hw.common.layouts import LRHLayout
from hw.common.ports import signature
from hw.link.link_rx import packet_blocks

__all__ = ["Egress"]


class Egress(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        super().__init__(signature(specs.egress(cfg)))

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        W, nb = cfg.data_width, cfg.bytes_per_flit
        sh = (nb - 1).bit_length()                       # log2(bytes per flit)
        i, o = self.i, self.o
        full = Signal()                                  # the queue holds two flits
        take = i.valid & ~full
        m.d.comb += i.ready.eq(~full)

        # the packet in progress: output VL, flit index, where its VCRC starts
        vl_q = Signal(4)
        pos = Signal(16 - sh + 1)
        at_q = Signal(16 - sh + 1)
        off_q = Signal(max(sh, 1))
        with m.If(take):
            m.d.sync += pos.eq(Mux(i.eop, 0, Mux(i.sop, 1, pos + 1)))

        lrh = LRHLayout(i.data[W - 64:])
        # FECN: the flit index and byte of BTH byte 4, known at the sop from LNH
        mk_q = Signal()                                  # this packet is marked
        fpos_q = Signal(6)                               # byte offset of BTH byte 4: 12 or 52
        mk = Signal()
        fpos = Signal(6)
        m.d.comb += [mk.eq(Mux(i.sop, self.fecn & lrh.lnh[1], mk_q)),
                     fpos.eq(Mux(i.sop, Mux(lrh.lnh[0], 52, 12), fpos_q))]
        with m.If(take & i.sop):
            m.d.sync += [mk_q.eq(mk), fpos_q.eq(fpos)]
        vl_data = Signal(W)
        m.d.comb += vl_data.eq(Mux(i.sop, Cat(i.data[:W - 4], i.vl), i.data))
        data_in = Signal(W)
        m.d.comb += data_in.eq(vl_data)
        idx0 = Signal(16 - sh + 1)
        m.d.comb += idx0.eq(Mux(i.sop, 0, pos))
        with m.If(mk & (idx0 == (fpos >> sh))):
            for b in range(nb):                          # byte b of the flit is word nb - 1 - b
                with m.If(fpos[:sh] == b if sh else 1):
                    m.d.comb += data_in.word_select(nb - 1 - b, 8).eq(vl_data.word_select(nb - 1 - b, 8) | 0x80)
        vstart = Signal(16)                              # byte offset of the VCRC: 4 * PktLen
        m.d.comb += vstart.eq(lrh.pktlen << 2)
        at = Signal.like(at_q)
        off = Signal.like(off_q)
        idx = Signal.like(pos)
        m.d.comb += [at.eq(Mux(i.sop, vstart >> sh, at_q)), off.eq(Mux(i.sop, vstart[:sh] if sh else 0, off_q)),
                     idx.eq(Mux(i.sop, 0, pos))]
        blocks, blocks_q = Signal(PACKET_BLOCKS_BITS), Signal(PACKET_BLOCKS_BITS)   # for LinkTx's credit test
        m.d.comb += blocks.eq(Mux(i.sop, packet_blocks(lrh.pktlen, cfg.credit_vcrc), blocks_q))
        with m.If(take & i.sop):
            m.d.sync += [vl_q.eq(i.vl), at_q.eq(at), off_q.eq(off), blocks_q.eq(blocks)]

        # CRC over the bytes in front of the VCRC
        m.submodules.crc = crc = CRCEngine(CRC16_IB, W, granule=4)   # 4*PktLen bytes: 4-aligned
        # this flit holds the VCRC: it starts at 4 * PktLen, a multiple of 4, and a flit is a
        # multiple of 4 bytes, so both its bytes are in the same flit
        here = Signal()
        m.d.comb += here.eq(idx == at)
        m.d.comb += [crc.valid.eq(take & (idx <= at)), crc.first.eq(i.sop), crc.data.eq(data_in),
                     crc.nbytes.eq(Mux(here, off, nb))]
        v = crc.crc                                      # final once the bytes before the VCRC are in
        b0, b1 = crc16_wire(v, self.cfg.crc_msb_first)   # the first and second byte on the wire

        out = Signal(W)
        m.d.comb += out.eq(data_in)
        with m.If(here):
            for b in range(0, nb, 4):                    # byte b of the flit is word nb - 1 - b
                with m.If(off == b):
                    m.d.comb += [out.word_select(nb - 1 - b, 8).eq(b0), out.word_select(nb - 2 - b, 8).eq(b1)]

        # the rewritten flit of this cycle into the two-flit queue: the output register `o`
        # and the skid register behind it (it fills only while `o` stalls)
        cur = {"data": out, "sop": i.sop, "eop": i.eop, "bytes": i.bytes, "bad": i.bad,
               "vl": Mux(i.sop, i.vl, vl_q),
               "blocks": blocks}
        ov = Signal()                                    # the output register holds a flit
        held = {k: Signal.like(getattr(o, k), name=f"held_{k}") for k in cur}
        oreg = {k: Signal.like(getattr(o, k), name=f"o_{k}") for k in cur}
        moves = ~ov | o.ready                            # the output register takes its next flit
        with m.If(moves):
            m.d.sync += [ov.eq(full | take), full.eq(0)]
            with m.If(full):
                m.d.sync += [oreg[k].eq(held[k]) for k in cur]
            with m.Else():
                m.d.sync += [oreg[k].eq(v) for k, v in cur.items()]
        with m.Elif(take):
            m.d.sync += [full.eq(1)] + [held[k].eq(v) for k, v in cur.items()]
        m.d.comb += o.valid.eq(ov)
        m.d.comb += [getattr(o, k).eq(oreg[k]) for k in cur]
        return m
