"""Input buffer organised as virtual output queues (docs/switch-core.md), one per input
port: a block-granular shared buffer with a linked list of 64-byte blocks per packet and a
linked list of packets per (output port, output VL) queue.

Write side (`w`): the accepted packets of this input, one flit per cycle, each sop flit
carrying its destination output, output VL, charged blocks n and input VL. Room is never
checked here: the link-level credits reserved n blocks for the packet (IBA §7.9), and the
buffer holds data_vls x buffer_blocks_per_vl blocks.

Queues: `nonempty[o]` (one bit per output VL), `deep[o]` (more than one packet queued: the
allocator's depth priority) and `head_blocks[o][v]` (blocks of the packet
at the head, for the downstream credit check; it keeps its last value while the queue is
empty) are registered.

Multicast: a sop flit with `mcast` goes to the input's one multicast queue with its port
`mask` and `sl`. `mc_valid`, `mc_mask` (ports still owed a copy), `mc_sl` and `mc_blocks`
describe the packet at its head (registered; meaningful while `mc_valid`). A read with
`rd_mc` sends one copy of that packet for output `rd_port` (a bit of `mc_mask`, which is
cleared); the copy that empties the mask dequeues the packet and is the one that frees its
blocks and returns its credit. Copies are read one after another (serial replication).

Bad packets: a packet whose eop flit (marked bad: a failed check at its tail, or EBP) was
written before its read starts is read with `r.void` set: the switch drops it instead of
forwarding it. One still arriving when its read starts is forwarded (cut-through) and its
tail leaves marked bad.

Read side: `rd_start` with `rd_port`/`rd_vl` (only when idle and that queue is non-empty)
dequeues the head packet (`rd_mc`: a copy of the multicast head, see above); its flits then
stream on `r` (valid/ready). A flit is readable from the cycle after it was written, so a
packet can leave while it is still arriving (cut-through); the reader never passes the
writer. The cycle the eop flit is taken, `done` pulses and
`rel` returns the packet's n blocks of credit for its input VL. Blocks go back to the free
pool as the reader leaves them.

Timing: write at cycle t -> queue non-empty and flit readable at t+1; rd_start at t ->
first flit on `r` at t (reads are combinational from the buffer).
"""
from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hw.common.config import BLOCK_BYTES, SwitchConfig

__all__ = ["VOQBuffer"]


class VOQBuffer(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        n, v = cfg.ports, cfg.data_vls
        self.nblocks = v * cfg.buffer_blocks_per_vl
        self.fpb = BLOCK_BYTES // cfg.bytes_per_flit
        self.nbits = cfg.max_packet_blocks.bit_length()
        flit = {"valid": Out(1), "data": Out(cfg.data_width), "sop": Out(1), "eop": Out(1),
                "bytes": Out(cfg.bytes_width), "bad": Out(1)}
        super().__init__({
            "w": In(wiring.Signature({**flit, "dest": Out(range(n)), "ovl": Out(range(max(v, 2))),
                                      "blocks": Out(self.nbits), "ivl": Out(range(max(v, 2))),
                                      "mcast": Out(1), "mask": Out(n), "sl": Out(4)})),
            "nonempty": Out(v).array(n),
            "deep": Out(v).array(n),
            "head_blocks": Out(self.nbits).array(n, v),
            "mc_valid": Out(1),
            "mc_mask": Out(n),
            "mc_sl": Out(4),
            "mc_blocks": Out(self.nbits),
            "rd_start": In(1),
            "rd_mc": In(1),
            "rd_port": In(range(n)),
            "rd_vl": In(range(max(v, 2))),
            "busy": Out(1),
            "r": Out(wiring.Signature({**flit, "void": Out(1), "ready": In(1)})),
            "done": Out(1),
            "rel": Out(wiring.Signature({"valid": Out(1), "ivl": Out(range(max(v, 2))), "blocks": Out(self.nbits)})),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        n, v, B, fpb = cfg.ports, cfg.data_vls, self.nblocks, self.fpb
        bw = max(B - 1, 1).bit_length()
        w, r = self.w, self.r

        word = data.StructLayout({"data": cfg.data_width, "bytes": cfg.bytes_width, "eop": 1, "bad": 1})
        info = data.StructLayout({"n": self.nbits, "ivl": max(v - 1, 1).bit_length(), "sl": 4, "mask": n})
        m.submodules.flits = flits = Memory(shape=word, depth=B * fpb, init=[])
        m.submodules.next_blk = next_blk = Memory(shape=bw, depth=B, init=[])
        m.submodules.pkt_next = pkt_next = Memory(shape=bw, depth=B, init=[])
        m.submodules.pkt_info = pkt_info = Memory(shape=info, depth=B, init=[])
        fw = flits.write_port()
        nbw = next_blk.write_port()
        pnw = pkt_next.write_port()
        piw = pkt_info.write_port()
        fr = flits.read_port(domain="comb")
        nbr = next_blk.read_port(domain="comb")
        pnr = pkt_next.read_port(domain="comb")
        pir = pkt_info.read_port(domain="comb")
        pir2 = pkt_info.read_port(domain="comb")
        m.submodules.pkt_bad = pkt_bad = Memory(shape=1, depth=B, init=[])    # tail marked bad
        pbw = pkt_bad.write_port()
        pbr = pkt_bad.read_port(domain="comb")

        # ---- free blocks: never-used ones first, then two recycle FIFOs (the reader can
        # free two blocks in one cycle: the one it leaves and the eop's)
        fresh = Signal(range(B + 1))
        m.submodules.free_a = free_a = SyncFIFO(width=bw, depth=B)
        m.submodules.free_b = free_b = SyncFIFO(width=bw, depth=B)
        alloc = Signal()
        alloc_blk = Signal(bw)
        m.d.comb += alloc_blk.eq(Mux(fresh < B, fresh, Mux(free_a.r_rdy, free_a.r_data, free_b.r_data)))
        with m.If(alloc):
            with m.If(fresh < B):
                m.d.sync += fresh.eq(fresh + 1)
            with m.Elif(free_a.r_rdy):
                m.d.comb += free_a.r_en.eq(1)
            with m.Else():
                m.d.comb += free_b.r_en.eq(1)

        # ---- queues
        head = Array(Array(Signal(bw, name=f"head_{o}_{x}") for x in range(v)) for o in range(n))
        tail = Array(Array(Signal(bw, name=f"tail_{o}_{x}") for x in range(v)) for o in range(n))
        cnt = Array(Array(Signal(range(B + 1), name=f"cnt_{o}_{x}") for x in range(v)) for o in range(n))

        # ---- writer
        wr_blk = Signal(bw)
        wr_off = Signal(range(fpb + 1))
        wr_head = Signal(bw)
        wr_active = Signal()
        wr_count = Signal(range(cfg.max_packet_flits + 2))
        enq = Signal()
        enq_blk = Signal(bw)
        with m.If(w.valid):
            cross = ~w.sop & (wr_off == fpb)
            blk = Mux(w.sop | cross, alloc_blk, wr_blk)
            off = Mux(w.sop | cross, 0, wr_off)
            m.d.comb += [
                alloc.eq(w.sop | cross),
                fw.addr.eq(blk * fpb + off), fw.en.eq(1),
                fw.data.eq(Cat(w.data, w.bytes, w.eop, w.bad)),          # `word` field order
            ]
            with m.If(cross):
                m.d.comb += [nbw.addr.eq(wr_blk), nbw.data.eq(alloc_blk), nbw.en.eq(1)]
            m.d.sync += [wr_blk.eq(blk), wr_off.eq(off + 1), wr_count.eq(Mux(w.sop, 1, wr_count + 1)),
                         wr_active.eq(~w.eop)]
            with m.If(w.eop):
                m.d.comb += [pbw.addr.eq(Mux(w.sop, alloc_blk, wr_head)), pbw.data.eq(w.bad), pbw.en.eq(1)]
            with m.If(w.sop):
                m.d.comb += [enq.eq(1), enq_blk.eq(alloc_blk),
                             piw.addr.eq(alloc_blk),
                             piw.data.eq(Cat(w.blocks, w.ivl[:info["ivl"].width], w.sl, w.mask)),
                             piw.en.eq(1)]
                m.d.sync += wr_head.eq(alloc_blk)

        # ---- reader
        reading = Signal()
        rd_blk = Signal(bw)
        rd_off = Signal(range(fpb + 1))
        rd_count = Signal(range(cfg.max_packet_flits + 2))
        rd_n = Signal(self.nbits)
        rd_ivl = Signal(range(max(v, 2)))
        deq = Signal()
        m.d.comb += self.busy.eq(reading)

        # multicast queue: one per input, packets in arrival order
        mc_head = Signal(bw)
        mc_tail = Signal(bw)
        mc_cnt = Signal(range(B + 1))
        m.d.comb += self.mc_valid.eq(mc_cnt != 0)
        rd_bit = Signal(n)
        m.d.comb += rd_bit.eq(1 << self.rd_port)

        # the start cycle reads the head packet's first flit directly
        q_head = Mux(self.rd_mc, mc_head, head[self.rd_port][self.rd_vl])
        start = self.rd_start & ~reading
        mc_start = start & self.rd_mc
        last_now = ~self.rd_mc | ((self.mc_mask & ~rd_bit) == 0)     # the copy that frees the packet
        mc_deq = mc_start & last_now
        m.d.comb += deq.eq(start & ~self.rd_mc)
        rd_last = Signal()
        cur_blk = Signal(bw)
        cur_off = Signal(range(fpb + 1))
        crossing = Signal()
        m.d.comb += [nbr.addr.eq(rd_blk), crossing.eq(~start & (rd_off == fpb))]
        m.d.comb += [
            cur_blk.eq(Mux(start, q_head, Mux(crossing, nbr.data, rd_blk))),
            cur_off.eq(Mux(start | crossing, 0, rd_off)),
            fr.addr.eq(cur_blk * fpb + cur_off),
        ]
        count = Mux(start, 0, rd_count)
        # Following the writer: the packet being read is the one still arriving. Decided at
        # the start (head blocks identify packets only while their first block is held) and
        # over when the writer writes that packet's eop.
        rd_follow = Signal()
        follow = Mux(start, wr_active & (q_head == wr_head), rd_follow)
        with m.If(start):
            m.d.sync += rd_follow.eq(follow)
        with m.If(w.valid & w.eop):
            m.d.sync += rd_follow.eq(0)
        avail = ~follow | (count < wr_count)
        # a packet whose tail is already in, marked bad, is read into the void (dropped)
        rd_void = Signal()
        m.d.comb += pbr.addr.eq(q_head)
        void = Mux(start, ~follow & pbr.data, rd_void)
        with m.If(start):
            m.d.sync += rd_void.eq(void)
        m.d.comb += r.void.eq(void)
        fword = word(fr.data)
        m.d.comb += [
            r.valid.eq((start | reading) & avail),
            r.data.eq(fword.data), r.bytes.eq(fword.bytes), r.eop.eq(fword.eop), r.bad.eq(fword.bad),
            r.sop.eq(count == 0),
            pir.addr.eq(q_head),
        ]
        take = r.valid & r.ready
        with m.If(start):
            m.d.sync += [reading.eq(1), rd_blk.eq(q_head), rd_off.eq(0), rd_count.eq(0), rd_last.eq(last_now),
                         rd_n.eq(info(pir.data).n), rd_ivl.eq(info(pir.data).ivl)]
        n_now = Mux(start, info(pir.data).n, rd_n)
        ivl_now = Mux(start, info(pir.data).ivl, rd_ivl)
        frees = Mux(start, last_now, rd_last)      # only the last copy of a multicast packet frees
        with m.If(take):
            m.d.sync += [rd_blk.eq(cur_blk), rd_off.eq(cur_off + 1), rd_count.eq(count + 1)]
            with m.If(crossing & frees):
                m.d.comb += [free_a.w_en.eq(1), free_a.w_data.eq(rd_blk)]
            with m.If(fword.eop):
                m.d.sync += reading.eq(0)
                m.d.comb += self.done.eq(1)
                with m.If(frees):
                    m.d.comb += [free_b.w_en.eq(1), free_b.w_data.eq(cur_blk),
                                 self.rel.valid.eq(1), self.rel.ivl.eq(ivl_now), self.rel.blocks.eq(n_now)]

        # ---- queue updates (enqueue from the writer, dequeue from the reader)
        m.d.comb += pnr.addr.eq(q_head)
        m.d.comb += pir2.addr.eq(pnr.data)
        w_vl = w.ovl if v > 1 else 0
        nxt = info(pir2.data)
        mc_e = enq & w.mcast
        m.d.sync += mc_cnt.eq(mc_cnt + mc_e - mc_deq)
        with m.If(mc_e):
            m.d.sync += mc_tail.eq(enq_blk)
            with m.If(mc_cnt != 0):
                m.d.comb += [pnw.addr.eq(mc_tail), pnw.data.eq(enq_blk), pnw.en.eq(1)]
        mc_load = [self.mc_mask.eq(w.mask), self.mc_sl.eq(w.sl), self.mc_blocks.eq(w.blocks)]
        with m.If(mc_deq):
            with m.If(mc_cnt == 1):
                with m.If(mc_e):
                    m.d.sync += [mc_head.eq(enq_blk)] + mc_load
            with m.Else():
                m.d.sync += [mc_head.eq(pnr.data), self.mc_mask.eq(nxt.mask), self.mc_sl.eq(nxt.sl),
                             self.mc_blocks.eq(nxt.n)]
        with m.Elif(mc_start):
            m.d.sync += self.mc_mask.eq(self.mc_mask & ~rd_bit)
        with m.Elif(mc_e & (mc_cnt == 0)):
            m.d.sync += [mc_head.eq(enq_blk)] + mc_load
        for o in range(n):
            for x in range(v):
                e = enq & ~w.mcast & (w.dest == o) & (w_vl == x)
                d = deq & (self.rd_port == o) & ((self.rd_vl == x) if v > 1 else 1)
                c = cnt[o][x]
                m.d.sync += c.eq(c + e - d)
                with m.If(e):
                    m.d.sync += tail[o][x].eq(enq_blk)
                    with m.If(c != 0):
                        m.d.comb += [pnw.addr.eq(tail[o][x]), pnw.data.eq(enq_blk), pnw.en.eq(1)]
                with m.If(d):
                    with m.If(c == 1):
                        with m.If(e):
                            m.d.sync += [head[o][x].eq(enq_blk), self.head_blocks[o][x].eq(w.blocks)]
                    with m.Else():
                        m.d.sync += [head[o][x].eq(pnr.data), self.head_blocks[o][x].eq(nxt.n)]
                with m.Elif(e & (c == 0)):
                    m.d.sync += [head[o][x].eq(enq_blk), self.head_blocks[o][x].eq(w.blocks)]
                m.d.comb += [self.nonempty[o][x].eq(c != 0), self.deep[o][x].eq(c >= 2)]
        return m


