"""Input buffer organised as virtual output queues (docs/switch-core.md), one per input
port: a block-granular shared buffer with a linked list of 64-byte blocks per packet and a
linked list of packets per (output port, output VL) queue. Every memory is read
synchronously (block RAM on an FPGA; docs/fpga.md).

Write side (`w`): the accepted packets of this input, one flit per cycle, each sop flit
carrying its destination output, output VL, charged blocks n and input VL. Room is never
checked here: the link-level credits reserved n blocks for the packet (IBA §7.9), and the
buffer holds data_vls x buffer_blocks_per_vl blocks.

Queues: `nonempty[o]` (one bit per output VL), `deep[o]` (more than one packet queued: the
allocator's depth priority) and `head_blocks[o][v]` (blocks of the packet at the head, for
the downstream credit check; it keeps its last value while the queue is empty) describe the
queues as of the last clock edge.

Multicast: a sop flit with `mcast` goes to the input's one multicast queue with its port
`mask` and `sl`. `mc_valid`, `mc_mask` (ports still owed a copy), `mc_sl` and `mc_blocks`
describe the packet at its head (meaningful while `mc_valid`). A read with `rd_mc` sends one
copy of that packet for output `rd_port` (a bit of `mc_mask`, which is cleared); the copy
that empties the mask dequeues the packet and is the one that frees its blocks and returns
its credit. Copies are read one after another (serial replication).

Read side, a one-stage pipeline: `rd_start` with `rd_port`/`rd_vl` (only while not `busy`
and that queue is non-empty; `rd_mc`: a copy of the multicast head) dequeues the head
packet. Its flits are then *issued* one per cycle, the first one in the start cycle at the
earliest: a flit issued in cycle t is on `r` (the read port's output register) from t+1
until taken (`r.valid & r.ready`); a flit is issued only when `r` is empty or being taken.
`r` carries the flit with `port` and `vl` (the output it is for, the output VL) and `void`.
The first flit of a packet is issued only while `first_ok` (the switch holds it back while
another input's flit for the same output still waits: docs/switch-core.md, crossbar);
`issue_port` tells which output the next flit is for; `rd_blocks` the blocks of the head of
(`rd_port`, `rd_vl`), i.e. of the packet a unicast start dequeues. With cfg.failover the start also
names `rd_dest`, the output the packet is read for (r.port, issue_port): the queue's own
output, or its failover alternate (docs/reliability.md); without it that is `rd_port`.
With cfg.adaptive a unicast packet's sop also carries `ar` (its LFT entry is adaptive), and
`head_ar[o]` (a bit per VL) says the head of (o, v) has it (0 while the queue is empty).

SwitchLifetime (cfg.lifetimes, docs/reliability.md): `sw_tick` pulses at the end of each
quarter of the switch lifetime; a unicast packet is stamped with the count of these ticks
when its sop is written (8 bits, modulo 256), and `head_old[o]` (a bit per VL) says the head
of (o, v) has seen at least 5 ticks since: it has been in the switch longer than the
switch lifetime (more than 4 quarters, at most 5). Only heads are read, so a packet must
reach its queue's head within 256 ticks (SwitchConfig.min_switch_life sees to that).

A flit is readable from the cycle after it was written, so a packet can leave while it is
still arriving (cut-through); the reader never passes the writer. The reader knows where a
packet ends from the cycle after its read started, or, if it is still being written, from
the cycle after its tail was written. `done` pulses in the cycle the last flit is issued (or,
when the last flit went out before its end was known, in the cycle it becomes known): the
input may start its next packet from the next cycle, while its last flit may still wait on
`r`. `ending` says, from the reader's registers alone, that the packet being read has its end
known and at most two flits left to issue, so that `done` may come in the next cycle; `done`
only ever comes with `ending` (VL arbitration, which decides a cycle ahead, counts such an
input as about to be free). With
`done`, `rel` returns the packet's n blocks of credit for its input VL (the last
copy of a multicast packet only), and `done_bad` says the packet's tail was marked bad (its
receiver counted it: a read into the void of such a packet is no discard of its own);
blocks go back to the free pool as the reader issues past them.

Bad packets: a packet whose eop flit (marked bad: a failed check at its tail, or EBP) was
written before its read starts is read with `r.void` set: the switch drops it instead of
forwarding it. One still arriving when its read starts is forwarded (cut-through) and its
tail leaves marked bad. `rd_void` at the start reads the packet into the void whatever its
tail (a multicast copy that cannot go).

Credit without the VCRC (SwitchConfig.credit_vcrc False): a packet may bring one flit more
than its n blocks hold (the VCRC of a PktLen % 16 == 0 packet starts a block of its own;
models.credit.taken_flits). That flit is not stored: only its byte count and bad mark are
kept with the packet's tail, and it is read back as zeros (the egress writes the packet's
new VCRC into it, docs/switch-core.md). The buffer therefore never needs more blocks than
the credit it gave.
"""
from contextlib import nullcontext

from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory

from contracts import switch as specs
from contracts.config import BLOCK_BYTES, SwitchConfig
from hw.common.ports import signature

__all__ = ["VOQBuffer"]


class VOQBuffer(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        self.nblocks = cfg.data_vls * cfg.buffer_blocks_per_vl
        self.fpb = BLOCK_BYTES // cfg.bytes_per_flit
        self.nbits = cfg.max_packet_blocks.bit_length()
        super().__init__(signature(specs.voq(cfg)))

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        n, v, B, fpb = cfg.ports, cfg.data_vls, self.nblocks, self.fpb
        bw = max(B - 1, 1).bit_length()
        w, r = self.w, self.r
        cntw = range(cfg.max_packet_flits + 2)

        word = data.StructLayout({"data": cfg.data_width, "bytes": cfg.bytes_width, "eop": 1, "bad": 1})
        info = data.StructLayout({"n": self.nbits, "ivl": max(v - 1, 1).bit_length()})
        link = data.StructLayout({"next": bw, "n": self.nbits, "mask": n, "sl": 4,     # the packet behind
                                  **({"ar": 1} if cfg.adaptive else {}),
                                  **({"stamp": 8} if cfg.lifetimes else {})})
        phantom = not cfg.credit_vcrc     # a flit past the charged blocks may come (docstring)
        tail = data.StructLayout({"bad": 1, "last": len(Signal(cntw)),             # written at the eop
                                  **({"pbytes": cfg.bytes_width} if phantom else {})})
        m.submodules.flits = flits = Memory(shape=word, depth=B * fpb, init=[])
        m.submodules.next_blk = next_blk = Memory(shape=bw, depth=B, init=[])
        m.submodules.pkt_next = pkt_next = Memory(shape=link, depth=B, init=[])
        m.submodules.pkt_info = pkt_info = Memory(shape=info, depth=B, init=[])
        m.submodules.pkt_end = pkt_end = Memory(shape=tail, depth=B, init=[])
        fw, nbw, pnw, piw, pew = (flits.write_port(), next_blk.write_port(), pkt_next.write_port(),
                                  pkt_info.write_port(), pkt_end.write_port())
        fr = flits.read_port(domain="sync")
        nbr = next_blk.read_port(domain="sync", transparent_for=[nbw])
        pnr = pkt_next.read_port(domain="sync")
        pir = pkt_info.read_port(domain="sync")
        per = pkt_end.read_port(domain="sync")

        # ---- free blocks: never-used ones first, then two recycle FIFOs (the reader can
        # free two blocks in one cycle: the one it leaves and the last one)
        fresh = Signal(range(B + 1))
        m.submodules.free_a = free_a = SyncFIFOBuffered(width=bw, depth=B)
        m.submodules.free_b = free_b = SyncFIFOBuffered(width=bw, depth=B)
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
        qtail = Array(Array(Signal(bw, name=f"tail_{o}_{x}") for x in range(v)) for o in range(n))
        cnt = Array(Array(Signal(range(B + 1), name=f"cnt_{o}_{x}") for x in range(v)) for o in range(n))
        hb = [[Signal(self.nbits, name=f"hb_{o}_{x}") for x in range(v)] for o in range(n)]

        # ---- writer
        wr_blk = Signal(bw)
        wr_off = Signal(range(fpb + 1))
        wr_head = Signal(bw)
        wr_active = Signal()
        wr_count = Signal(cntw)            # flits of the packet being written, written so far
        enq = Signal()
        enq_blk = Signal(bw)
        w_idx = Signal(cntw)               # index of the flit written now
        m.d.comb += w_idx.eq(Mux(w.sop, 0, wr_count))
        w_ph = Signal()                    # the flit past the charged blocks (not stored)
        if phantom:
            wr_limit = Signal(cntw)        # flits the charged blocks hold
            with m.If(w.valid & w.sop):
                m.d.sync += wr_limit.eq(w.blocks * fpb)
            m.d.comb += w_ph.eq(~w.sop & (w_idx == wr_limit))
        with m.If(w.valid):
            cross = ~w.sop & (wr_off == fpb) & ~w_ph
            blk = Mux(w.sop | cross, alloc_blk, wr_blk)
            off = Mux(w.sop | cross, 0, wr_off)
            m.d.comb += [
                alloc.eq(w.sop | cross),
                fw.addr.eq(blk * fpb + off), fw.en.eq(~w_ph),
                fw.data.eq(Cat(w.data, w.bytes, w.eop, w.bad)),          # `word` field order
            ]
            with m.If(cross):
                m.d.comb += [nbw.addr.eq(wr_blk), nbw.data.eq(alloc_blk), nbw.en.eq(1)]
            with m.If(~w_ph) if phantom else nullcontext():       # w_ph is 0 without phantom flits
                m.d.sync += [wr_blk.eq(blk), wr_off.eq(off + 1)]
            m.d.sync += [wr_count.eq(w_idx + 1), wr_active.eq(~w.eop)]
            with m.If(w.eop):
                m.d.comb += [pew.addr.eq(Mux(w.sop, alloc_blk, wr_head)),
                             pew.data.eq(Cat(w.bad, w_idx, w.bytes) if phantom else Cat(w.bad, w_idx)),
                             pew.en.eq(1)]
            with m.If(w.sop):
                m.d.comb += [enq.eq(1), enq_blk.eq(alloc_blk),
                             piw.addr.eq(alloc_blk), piw.data.eq(Cat(w.blocks, w.ivl[:info["ivl"].width])),
                             piw.en.eq(1)]
                m.d.sync += wr_head.eq(alloc_blk)

        # ---- reader: start, issue (address -> read port), output register `r`
        reading = Signal()                 # a started packet still has flits to issue
        rd_blk = Signal(bw)                # block of the last flit issued
        rd_off = Signal(range(fpb + 1))    # its offset + 1
        rd_count = Signal(cntw)            # flits issued
        rd_port = Signal(range(n))
        rd_vl = Signal(range(max(v, 2)))
        rd_frees = Signal()                # the read frees the blocks (not an earlier multicast copy)
        rd_void = Signal()                 # rd_void at the start
        rd_f0 = Signal()                   # the packet was still being written at the start
        rd_follow = Signal()               # ... and still is (the reader may not pass the writer)
        rd_known = Signal()                # its end, from the writer (rd_f0)
        rd_last = Signal(cntw)
        rd_fresh = Signal()                # the start was last cycle: pkt_info/pkt_end outputs are new
        rd_bvoid = Signal()                # complete and bad at the start (latched a cycle after it)
        m.d.comb += self.busy.eq(reading)

        # multicast queue: one per input, packets in arrival order
        mc_head = Signal(bw)
        mc_tail = Signal(bw)
        mc_cnt = Signal(range(B + 1))
        mc_mask = Signal(n)
        mc_sl = Signal(4)
        mc_blocks = Signal(self.nbits)
        rd_bit = Signal(n)
        m.d.comb += rd_bit.eq(1 << self.rd_port)

        q_head = Mux(self.rd_mc, mc_head, head[self.rd_port][self.rd_vl])
        start = self.rd_start & ~reading
        mc_start = start & self.rd_mc
        last_now = ~self.rd_mc | ((self.mc_mask & ~rd_bit) == 0)     # the copy that frees the packet
        mc_deq = mc_start & last_now
        deq = Signal()
        m.d.comb += deq.eq(start & ~self.rd_mc)
        follow_now = wr_active & (q_head == wr_head)
        follow = Mux(start, follow_now, rd_follow)
        count = Mux(start, 0, rd_count)
        # where the packet ends: known a cycle after the start (pkt_end read), or a cycle after
        # the writer wrote the tail of a packet it was still writing at the start
        tl = tail(per.data)
        known = ~start & Mux(rd_f0, rd_known, 1)
        last = Mux(rd_f0, rd_last, tl.last)
        more = Signal()                    # flit `count` exists and may be issued
        m.d.comb += more.eq((start | reading) & ~(known & (count > last)) & (~follow | (count < wr_count)))
        adv = ~r.valid | r.ready
        first_gate = (count != 0) | self.first_ok | Mux(start, self.rd_void, rd_void)
        issue = Signal()
        m.d.comb += issue.eq(more & adv & first_gate)
        # `done` only ever comes while `reading` (a packet's end is not known in its start
        # cycle, and a start needs ~reading), so it is computed from the reader's registers
        # alone: the same function, without the start multiplexers (the queue head, the
        # writer comparison) on the path from a registered match into the allocator.
        known_r = Mux(rd_f0, rd_known, 1)
        more_r = ~(known_r & (rd_count > last)) & (~rd_follow | (rd_count < wr_count))
        first_gate_r = (rd_count != 0) | self.first_ok | rd_void
        issue_r = more_r & adv & first_gate_r
        is_last = reading & issue_r & known_r & (rd_count == last)
        late = reading & ~issue_r & known_r & (rd_count > last)      # last flit went out unknown
        m.d.comb += self.done.eq(is_last | late)
        # at most two flits of the packet being read are left to issue, so `done` may come in
        # the next cycle (a hint for VL arbitration, which decides a cycle ahead)
        m.d.comb += self.ending.eq(reading & known_r & (rd_count + 1 >= last))
        dest_in = self.rd_dest if cfg.failover else self.rd_port     # the output the read is for
        m.d.comb += self.issue_port.eq(Mux(start, dest_in, rd_port))

        nfo = info(pir.data)               # the packet's n blocks, from the cycle after its start
        r_ph = Signal()                    # the flit issued now is the one past the charged blocks
        if phantom:
            m.d.comb += r_ph.eq(~start & (rd_count == nfo.n * fpb))
        crossing = ~start & (rd_off == fpb) & ~r_ph
        cur_blk = Signal(bw)
        cur_off = Signal(range(fpb + 1))
        m.d.comb += [
            cur_blk.eq(Mux(start, q_head, Mux(crossing, nbr.data, rd_blk))),
            cur_off.eq(Mux(start | crossing, 0, rd_off)),
            fr.addr.eq(cur_blk * fpb + cur_off), fr.en.eq(adv),
            # next block of the one being issued (or of the last one issued); transparent, so
            # a link the writer makes now is seen next cycle
            nbr.addr.eq(Mux(issue, cur_blk, rd_blk)),
            pir.addr.eq(q_head), pir.en.eq(start),
            per.addr.eq(q_head), per.en.eq(start),
        ]
        with m.If(start):
            m.d.sync += [reading.eq(1), rd_count.eq(0), rd_port.eq(dest_in), rd_vl.eq(self.rd_vl),
                         rd_frees.eq(last_now), rd_void.eq(self.rd_void), rd_f0.eq(follow_now),
                         rd_follow.eq(follow_now), rd_known.eq(0), rd_blk.eq(q_head), rd_off.eq(0)]
        m.d.sync += rd_fresh.eq(start)
        rd_wbad = Signal()                 # the tail's bad mark, from the writer (rd_f0)
        with m.If(w.valid & w.eop):
            m.d.sync += rd_follow.eq(0)
            with m.If(follow):
                m.d.sync += [rd_known.eq(1), rd_last.eq(w_idx), rd_wbad.eq(w.bad)]
        m.d.comb += self.done_bad.eq(self.done & Mux(rd_f0, rd_wbad, tl.bad))
        bvoid = Signal()
        m.d.comb += bvoid.eq(Mux(rd_fresh, ~rd_f0 & tl.bad, rd_bvoid))
        with m.If(rd_fresh):
            m.d.sync += rd_bvoid.eq(~rd_f0 & tl.bad)
        with m.If(issue):
            m.d.sync += rd_count.eq(count + 1)
            with m.If(~r_ph) if phantom else nullcontext():       # r_ph is 0 without phantom flits
                m.d.sync += [rd_blk.eq(cur_blk), rd_off.eq(cur_off + 1)]
        with m.If(self.done):
            m.d.sync += reading.eq(0)

        # blocks back to the pool as the reader issues past them (only the read that frees),
        # through a register (the issue decision is the longest path of the block): a block
        # is allocatable three cycles after its last flit was issued, long before the credit
        # it returns can bring a packet (FC packet out, the peer's packet back, the parser)
        frees = Mux(start, last_now, rd_frees)
        m.d.sync += [free_a.w_en.eq(issue & crossing & frees), free_a.w_data.eq(rd_blk),
                     free_b.w_en.eq(self.done & frees), free_b.w_data.eq(Mux(issue, cur_blk, rd_blk))]
        m.d.comb += [self.rel.valid.eq(self.done & frees), self.rel.ivl.eq(nfo.ivl), self.rel.blocks.eq(nfo.n)]

        # output register: the flit issued last cycle (held by the read port while not taken)
        r_valid = Signal()
        r_sop = Signal()
        r_cur = Signal()                   # it belongs to the packet being read (else: an older one)
        r_void_old = Signal()
        with m.If(adv):
            m.d.sync += [r_valid.eq(issue), r_sop.eq(count == 0)]
        with m.If(issue):
            m.d.sync += [r_cur.eq(1), r.port.eq(self.issue_port),
                         r.vl.eq(Mux(start, self.rd_vl, rd_vl))]
        with m.Elif(start):
            m.d.sync += [r_cur.eq(0), r_void_old.eq(r.void)]
        fword = word(fr.data)
        m.d.comb += [
            r.valid.eq(r_valid), r.sop.eq(r_sop),
            r.data.eq(fword.data), r.bytes.eq(fword.bytes), r.eop.eq(fword.eop), r.bad.eq(fword.bad),
            r.void.eq(Mux(r_cur, rd_void | bvoid, r_void_old)),
        ]
        if phantom:
            # the flit past the charged blocks: zeros, the byte count and bad mark of its tail
            # record (from pkt_end, or from the writer when the read followed it)
            p_out = Signal()
            p_bytes = Signal(cfg.bytes_width)
            p_bad = Signal()
            rd_pbytes = Signal(cfg.bytes_width)
            rd_pbad = Signal()
            with m.If(w.valid & w.eop & follow):
                m.d.sync += [rd_pbytes.eq(w.bytes), rd_pbad.eq(w.bad)]
            with m.If(adv):
                m.d.sync += p_out.eq(issue & r_ph)
            with m.If(issue & r_ph):
                m.d.sync += [p_bytes.eq(Mux(rd_f0, rd_pbytes, tl.pbytes)), p_bad.eq(Mux(rd_f0, rd_pbad, tl.bad))]
            with m.If(p_out):
                m.d.comb += [r.data.eq(0), r.bytes.eq(p_bytes), r.eop.eq(1), r.bad.eq(p_bad)]

        # ---- queue updates (enqueue from the writer, dequeue from the reader). A dequeue
        # reads the link to the next packet (pkt_next, synchronous); the queue's head state
        # takes it a cycle later, and its outputs show it from that cycle on.
        m.d.comb += [pnr.addr.eq(q_head), pnr.en.eq(1)]
        nxt = link(pnr.data)
        epoch = Signal(8)                  # SwitchLifetime quarter ticks since reset, modulo 256
        if cfg.lifetimes:
            m.d.sync += epoch.eq(epoch + self.sw_tick)
        behind = Cat(enq_blk, w.blocks, w.mask, w.sl, *((w.ar,) if cfg.adaptive else ()),
                     *((epoch,) if cfg.lifetimes else ()))                # the link word
        w_vl = w.ovl if v > 1 else 0
        mc_e = enq & w.mcast
        mc_next = Signal()                 # the multicast head moved on last cycle: take pkt_next
        m.d.sync += mc_next.eq(mc_deq & (mc_cnt != 1))
        m.d.sync += mc_cnt.eq(mc_cnt + mc_e - mc_deq)
        with m.If(mc_e):
            m.d.sync += mc_tail.eq(enq_blk)
            with m.If(mc_cnt != 0):
                m.d.comb += [pnw.addr.eq(mc_tail), pnw.data.eq(behind),
                             pnw.en.eq(1)]
        mc_load = [mc_mask.eq(w.mask), mc_sl.eq(w.sl), mc_blocks.eq(w.blocks)]
        m.d.comb += [self.mc_valid.eq(mc_cnt != 0),
                     self.mc_mask.eq(Mux(mc_next, nxt.mask, mc_mask)), self.mc_sl.eq(Mux(mc_next, nxt.sl, mc_sl)),
                     self.mc_blocks.eq(Mux(mc_next, nxt.n, mc_blocks))]
        with m.If(mc_next):
            m.d.sync += [mc_head.eq(nxt.next), mc_mask.eq(nxt.mask), mc_sl.eq(nxt.sl), mc_blocks.eq(nxt.n)]
        with m.If(mc_deq):
            with m.If((mc_cnt == 1) & mc_e):
                m.d.sync += [mc_head.eq(enq_blk)] + mc_load
        with m.Elif(mc_start):
            m.d.sync += mc_mask.eq(self.mc_mask & ~rd_bit)
        with m.Elif(mc_e & (mc_cnt == 0)):
            m.d.sync += [mc_head.eq(enq_blk)] + mc_load
        uc_next = Signal()                 # a unicast head moved on last cycle: take pkt_next
        nx_o = Signal(range(n))
        nx_x = Signal(range(max(v, 2)))
        cnt_sel = cnt[self.rd_port][self.rd_vl if v > 1 else 0]
        m.d.sync += [uc_next.eq(deq & (cnt_sel != 1)), nx_o.eq(self.rd_port), nx_x.eq(self.rd_vl if v > 1 else 0)]
        for o in range(n):
            for x in range(v):
                e = enq & ~w.mcast & (w.dest == o) & (w_vl == x)
                d = deq & (self.rd_port == o) & ((self.rd_vl == x) if v > 1 else 1)
                moved = uc_next & (nx_o == o) & ((nx_x == x) if v > 1 else 1)
                c = cnt[o][x]
                m.d.sync += c.eq(c + e - d)
                with m.If(e):
                    m.d.sync += qtail[o][x].eq(enq_blk)
                    with m.If(c != 0):
                        m.d.comb += [pnw.addr.eq(qtail[o][x]), pnw.data.eq(behind),
                                     pnw.en.eq(1)]
                # adaptive routing: whether the head may leave on another port of its group
                har = Signal(name=f"har{o}_{x}") if cfg.adaptive else None
                hst = Signal(8, name=f"hst{o}_{x}") if cfg.lifetimes else None    # the head's stamp
                with m.If(moved):
                    m.d.sync += [head[o][x].eq(nxt.next), hb[o][x].eq(nxt.n)]
                    if cfg.adaptive:
                        m.d.sync += har.eq(nxt.ar)
                    if cfg.lifetimes:
                        m.d.sync += hst.eq(nxt.stamp)
                with m.If((d & (c == 1) & e) | (~d & e & (c == 0))):
                    m.d.sync += [head[o][x].eq(enq_blk), hb[o][x].eq(w.blocks)]
                    if cfg.adaptive:
                        m.d.sync += har.eq(w.ar)
                    if cfg.lifetimes:
                        m.d.sync += hst.eq(epoch)
                m.d.comb += [self.nonempty[o][x].eq(c != 0), self.deep[o][x].eq(c >= 2),
                             self.head_blocks[o][x].eq(Mux(moved, nxt.n, hb[o][x]))]
                if cfg.adaptive:
                    m.d.comb += self.head_ar[o][x].eq((c != 0) & Mux(moved, nxt.ar, har))
                if cfg.lifetimes:
                    age = Signal(8, name=f"sw_age{o}_{x}")
                    m.d.comb += [age.eq(epoch - Mux(moved, nxt.stamp, hst)),
                                 self.head_old[o][x].eq((c != 0) & (age >= 5))]
        # the blocks of the head a unicast read starts now (congestion marking's dequeue)
        vsel = self.rd_vl[:max(1, (v - 1).bit_length())] if v > 1 else 0
        hbs = Array(Array(self.head_blocks[o][x] for x in range(v)) for o in range(n))
        m.d.comb += self.rd_blocks.eq(hbs[self.rd_port][vsel])
        return m
