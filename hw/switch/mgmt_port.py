"""The management port (IBA port 0) in the datapath: the VL15 relay, the receive queue to
the management processor and the processor's send path (docs/management.md).

One engine, the *relay*, moves whole packets one at a time. Its candidates are the VL15
packets the receivers hold (one head per input) and the packet at the head of the send
buffer (the processor's, candidate N); it picks round robin and takes two cycles per
decision: `look` addresses the LFT with the candidate's DLID (a synchronous read), the next
cycle decides with the entry read.

  VL15 packet from input i, DLID d, LFT entry e (an IBA port: 0 the management port; with
  cfg.adaptive, bit 7 of an entry other than 255 marks the DLID adaptive and is dropped):
    for the switch (d permissive, d = SWITCH_LID != 0, or d unicast and e = 0):
      counted in for_switch[i]; into the receive queue if it admits the packet now (see
      below), else read into the void and counted in v15_dropped[i] (IBA VL15Dropped); while
      another packet is being written into the queue the decision waits (the relay looks
      again the next cycle)
    d unicast, 1 <= e <= N, port e at least Init: forwarded to LinkTx e's VL15 source
    anything else: void, relay_err[i] (PortRcvSwitchRelayErrors)
    (extended LIDs, cfg.ext_lid_bits > 0: d is {page, DLID} as the route lookup forms it,
    the permissive DLID only in page 0, SWITCH_LID compared over all 16 + b bits)
  the processor's packet (tdest t, LRH VL v, DLID d):
    output port: t if t != 0, else LFT[d] for a unicast d (else none); none, 0 or > N: void,
      tx_errors
    v = 15: port at least Init: to its VL15 source; else void, xmit_discards[port]
    v a data VL: port not Active: void, xmit_discards[port]. Active: if the packet fits the
      port's credit for v (IBA §7.9.4) and the port's egress is between packets, the relay
      claims the port (its egress is held from this cycle until the packet has gone) and
      sends the packet to LinkTx source v; else it is left where it is (the relay moves on
      and tries again on its next turn)
    any other VL: void, xmit_discards[port]
  Forwarded packets are counted in xmit[port] (processor's) as they start.

Receive queue (`MgmtQueue`, AXI4-Stream master m_axis_mgmt_*): its single write port takes
one packet at a time. A packet is admitted only if the queue's free slots cover its charge,
blocks(PktLen) * 64 / W bytes flits (the most flits a receiver lets a packet of that PktLen
have), so it never has to stop mid-packet. Two writers: the relay (VL15 packets for the
switch) and the data taps: a data-VL packet for the switch (`dat[i].here` at its sop:
LFT entry 0 or MFT bit 0, computed by the route lookup) is copied from input i's accepted
stream as it arrives. A data packet cannot wait (it is not buffered here), so at its sop it
is admitted if the write port is idle and it fits (lowest input first among several), and
otherwise not copied and counted in relay_err[i]; the relay's decision for the queue yields
to it. Admitted packets are counted in rcv[i]; their `tuser` port is the IBA port i + 1.

Send buffer (AXI4-Stream slave s_axis_mgmt_*: tdata byte 0 in lane 0, tkeep, tlast, tdest
= the IBA port to send out of, or 0 to route by the LFT; tdest taken on the first beat):
store and forward. A packet becomes a candidate once complete and checked: its length must
be 4 * PktLen + 2 bytes (LRH..VCRC; the processor supplies every CRC) and at most
`vl15_max_packet_bytes`. A packet that fails is removed as soon as its last beat arrives
(a longer one is cut at the limit and the rest of its beats taken and dropped) and counted
in tx_errors. tready is low only while the buffer is full; it holds two of the largest
packets, so a packet always finishes arriving.

Data egress merge: LinkTx o's data sources carry egress o's packets (with the blocks the egress
computed at their sop), except while the relay
owns port o (above): then they carry the processor's packet and egress o waits (ready low).

Counters are 32 bits, saturating.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory

from contracts import switch as specs
from contracts.config import BLOCK_BYTES, VCRC_BYTES, SwitchConfig
from contracts.defs import PortState
from contracts.streams import FLIT, PACKET_BLOCKS_BITS
from hw.common.layouts import LRHLayout, header_at
from hw.common.ports import signature
from hw.link.credit import fits as credit_fits
from hw.link.link_rx import extra_flits, packet_blocks
from hw.switch.allocator import first_set, rr_pick
from hw.switch.mgmt_queue import MgmtQueue
from hw.switch.route import lid_of

__all__ = ["MgmtPort", "send_depth"]

_FLIT = FLIT
_SAT = 0xFFFFFFFF


def send_depth(cfg: SwitchConfig) -> int:
    """Send buffer flit slots: two of the largest management packets."""
    return cfg.mgmt_send_flits


def _sat_inc(m, c, *hits):
    """c += the number of `hits` set, saturating at 2**32 - 1."""
    nxt = c + sum(h.as_unsigned() for h in hits)
    m.d.sync += c.eq(Mux(nxt > _SAT, _SAT, nxt))


class MgmtPort(wiring.Component):
    def __init__(self, cfg: SwitchConfig, queue_depth: int | None = None):
        self.cfg = cfg
        self.queue_depth = cfg.mgmt_queue_flits if queue_depth is None else queue_depth
        self.send_depth = send_depth(cfg)
        super().__init__(signature(specs.mgmt_port(cfg)))

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        n, nvl = cfg.ports, cfg.data_vls
        W, nb = cfg.data_width, cfg.bytes_per_flit
        fpb = BLOCK_BYTES // nb
        pbits = max(1, (n - 1).bit_length())

        m.submodules.queue = q = MgmtQueue(cfg, self.queue_depth)
        for k in ("tdata", "tkeep", "tlast", "tuser", "tvalid"):
            m.d.comb += getattr(self, f"m_axis_mgmt_{k}").eq(getattr(q, f"m_axis_{k}"))
        m.d.comb += q.m_axis_tready.eq(self.m_axis_mgmt_tready)

        # ---------------------------------------------------------------- send buffer
        sd = self.send_depth
        max_flits = -(-cfg.vl15_max_packet_bytes // nb)
        m.submodules.smem = smem = Memory(shape=W + cfg.bytes_width + 1 + 8, depth=sd, init=[])
        swp = smem.write_port()
        srp = smem.read_port(domain="sync")
        s_wr = Signal(range(sd))
        s_start = Signal(range(sd))                    # where the packet being written starts
        s_rd = Signal(range(sd))
        s_count = Signal(range(sd + 1))                # flits held (committed or not, not the out stage)
        s_ccount = Signal(range(sd + 1))               # committed flits (readable)
        s_pflits = Signal(range(max_flits + 1))        # flits of the packet being written
        s_over = Signal()                              # it ran past the limit: the rest is dropped
        s_first = Signal(init=1)                       # the next beat is a packet's first
        s_dest = Signal(8)
        s_pktlen = Signal(11)
        beat = Signal()
        lanes = [self.s_axis_mgmt_tdata[8 * k:8 * k + 8] for k in range(nb)]
        beat_data = Cat(*reversed(lanes))              # packet byte 0 in the top byte
        keep_n = Signal(range(nb + 1))
        m.d.comb += keep_n.eq(sum(self.s_axis_mgmt_tkeep[k] for k in range(nb)))
        m.d.comb += [self.s_axis_mgmt_tready.eq(s_count < sd),
                     beat.eq(self.s_axis_mgmt_tvalid & self.s_axis_mgmt_tready)]
        dest_now = Mux(s_first, self.s_axis_mgmt_tdest, s_dest)
        store = Signal()
        m.d.comb += store.eq(beat & ~s_over & (s_pflits < max_flits))
        last_stored = Signal()                         # this beat ends what is kept of the packet
        m.d.comb += last_stored.eq(self.s_axis_mgmt_tlast | (s_pflits == max_flits - 1))
        m.d.comb += [swp.addr.eq(s_wr), swp.en.eq(store),
                     swp.data.eq(Cat(beat_data, keep_n, last_stored,
                                     dest_now))]
        pktlen_now = Mux(s_first, header_at(beat_data, W, LRHLayout).pktlen, s_pktlen)
        total = Signal(16)
        m.d.comb += total.eq(s_pflits * nb + keep_n)
        s_ragged = Signal()                            # a beat before the last was not full
        contiguous = Signal()                          # tkeep is lanes 0..k-1
        m.d.comb += contiguous.eq(self.s_axis_mgmt_tkeep == ((Const(1, nb + 1) << keep_n) - 1)[:nb])
        good = Signal()
        m.d.comb += good.eq(~s_over & ~s_ragged & contiguous & (keep_n != 0) & (s_pflits < max_flits)
                            & (total == (pktlen_now << 2) + VCRC_BYTES))
        commit = Signal()
        rewind = Signal()
        m.d.comb += [commit.eq(beat & self.s_axis_mgmt_tlast & good),
                     rewind.eq(beat & self.s_axis_mgmt_tlast & ~good)]
        s_read = Signal()
        s_out_valid = Signal()
        s_take = Signal()                              # the relay takes the out-stage flit
        m.d.comb += s_read.eq((s_ccount != 0) & (~s_out_valid | s_take))
        m.d.comb += [srp.addr.eq(s_rd), srp.en.eq(s_read)]
        with m.If(s_read):
            m.d.sync += s_rd.eq(Mux(s_rd == sd - 1, 0, s_rd + 1))
        m.d.sync += s_out_valid.eq(s_read | (s_out_valid & ~s_take))
        with m.If(beat):
            m.d.sync += [s_first.eq(self.s_axis_mgmt_tlast),
                         s_ragged.eq(~self.s_axis_mgmt_tlast & (s_ragged | (self.s_axis_mgmt_tkeep != (1 << nb) - 1)))]
            with m.If(s_first):
                m.d.sync += [s_dest.eq(self.s_axis_mgmt_tdest), s_pktlen.eq(pktlen_now)]
        nxt_wr = Mux(s_wr == sd - 1, 0, s_wr + 1)
        with m.If(rewind):
            m.d.sync += [s_wr.eq(s_start), s_pflits.eq(0), s_over.eq(0)]
        with m.Elif(beat & self.s_axis_mgmt_tlast):
            m.d.sync += [s_wr.eq(nxt_wr), s_start.eq(nxt_wr), s_pflits.eq(0), s_over.eq(0)]
        with m.Elif(store):
            m.d.sync += [s_wr.eq(nxt_wr), s_pflits.eq(s_pflits + 1)]
            with m.If(s_pflits == max_flits - 1):
                m.d.sync += s_over.eq(1)
        kept = Signal(range(max_flits + 1))            # flits of the packet ending now
        m.d.comb += kept.eq(s_pflits + store)
        m.d.sync += [s_count.eq(s_count + store - Mux(rewind, kept, 0) - s_read),
                     s_ccount.eq(s_ccount + Mux(commit, kept, 0) - s_read)]
        s_flit = {"data": srp.data[:W], "bytes": srp.data[W:W + cfg.bytes_width],
                  "eop": srp.data[W + cfg.bytes_width], "bad": Const(0), "sop": Signal()}
        s_tdest = srp.data[W + cfg.bytes_width + 1:]
        s_sop = s_flit["sop"]
        s_prev_eop = Signal(init=1)                    # the out-stage flit starts a packet
        with m.If(s_take):
            m.d.sync += s_prev_eop.eq(s_flit["eop"])
        m.d.comb += s_sop.eq(s_prev_eop)

        # ---------------------------------------------------------------- relay
        heads = Signal(n + 1)
        m.d.comb += heads.eq(Cat(*(self.v15[i].valid & self.v15[i].sop for i in range(n)),
                                 s_out_valid & s_sop))          # (only committed flits are read)
        ptr = Signal(range(n + 1))
        cand, cand_any = rr_pick(m, heads, ptr, n + 1, "relay")
        busy = Signal()
        look = Signal()
        lc = Signal(range(n + 1))                      # the candidate being looked at
        # (the send buffer's LRH reads as 0 while it holds no flit: the read port keeps its last word)
        cpu_lrh = Cat(Const(0, W - 64), Mux(s_out_valid, s_flit["data"][W - 64:], 0))
        src_data = Array([self.v15[i].data for i in range(n)] + [cpu_lrh])
        m.d.comb += self.lft_dlid.eq(lid_of(cfg, header_at(src_data[Mux(look, lc, cand)], W, LRHLayout)))
        hdr = header_at(src_data[lc], W, LRHLayout)
        dlid, entry = hdr.dlid, Signal(8)
        # with adaptive routing, bit 7 of an LFT entry other than 255 marks the DLID adaptive
        # and is not part of the port (docs/reliability.md)
        m.d.comb += entry.eq(Mux(self.lft_port == 0xFF, 0xFF, self.lft_port[:7]) if cfg.adaptive else self.lft_port)
        lid = Signal(cfg.lid_bits)                     # extended LIDs: {page, DLID}
        m.d.comb += lid.eq(lid_of(cfg, hdr))
        unicast = (dlid != 0) & (dlid < 0xC000)
        from_cpu = lc == n
        states = Array(self.state)
        # the output: for an input's SMP the LFT entry; for the processor's packet tdest or LFT
        oport = Signal(8)
        m.d.comb += oport.eq(Mux(from_cpu & (s_tdest != 0), s_tdest, Mux(unicast, entry, 0)))
        phys = Signal(pbits)
        m.d.comb += phys.eq((oport - 1)[:pbits])
        in_range = (oport >= 1) & (oport <= n)
        ostate = states[phys]
        for_sw = Signal()
        m.d.comb += for_sw.eq(~from_cpu & ((lid == 0xFFFF) | ((lid == self.switch_lid) & (self.switch_lid != 0))
                                           | (unicast & (entry == 0))))
        vl = hdr.vl
        blocks = Signal(8)
        m.d.comb += blocks.eq(packet_blocks(hdr.pktlen, cfg.credit_vcrc))
        need = Signal(range(256 * fpb + 2))            # the most flits a receiver takes of it
        m.d.comb += need.eq(blocks * fpb + extra_flits(cfg))
        fits = Signal()
        vsel = vl[:max(1, (nvl - 1).bit_length())]
        m.d.comb += fits.eq(credit_fits(Array(Array(r) for r in self.fccl)[phys][vsel],
                                        Array(Array(r) for r in self.fctbs)[phys][vsel], blocks))
        eg_mid = Signal(n)                             # egress o is inside a packet
        own = Signal(n)                                # the relay owns port o's data sources
        # the write port of the queue: a data tap admitted now, or one writing a packet
        d_owner = Signal(range(n))
        d_active = Signal()
        d_admit = Signal(n)
        r_queue = Signal()                             # the relay is writing into the queue
        wants = Signal(n)
        for i in range(n):
            t = self.dat[i]
            m.d.comb += wants[i].eq(t.valid & t.sop & t.here)
        fits_q = Array(t.blocks * fpb + extra_flits(cfg) <= q.free for t in self.dat)
        first = first_set(wants, n)
        idle_wp = Signal()
        m.d.comb += idle_wp.eq(~d_active & ~r_queue)
        for i in range(n):
            m.d.comb += d_admit[i].eq(wants[i] & idle_wp & (first == i) & fits_q[i])

        # the decision
        kind = Signal(3)                               # 0 wait, 1 queue, 2 fwd15, 3 fwd data, 4 void, 5 skip
        K_WAIT, K_QUEUE, K_FWD15, K_FWDD, K_VOID, K_SKIP = range(6)
        with m.If(for_sw):
            m.d.comb += kind.eq(Mux(~idle_wp | wants.any(), K_WAIT, Mux(need <= q.free, K_QUEUE, K_VOID)))
        with m.Elif(~in_range):
            m.d.comb += kind.eq(K_VOID)
        with m.Elif(vl == 15):
            m.d.comb += kind.eq(Mux(ostate >= PortState.INIT, K_FWD15, K_VOID))
        with m.Elif(from_cpu & (vl < nvl) & (ostate == PortState.ACTIVE)):
            m.d.comb += kind.eq(Mux(fits & ~eg_mid.bit_select(phys, 1), K_FWDD, K_SKIP))
        with m.Else():
            m.d.comb += kind.eq(K_VOID)

        decide = Signal()
        m.d.comb += decide.eq(look & (kind != K_WAIT))
        mode = Signal(3)                               # while busy: K_QUEUE, K_FWD15, K_FWDD or K_VOID
        r_in = Signal(range(n + 1))
        r_out = Signal(pbits)
        r_vl = Signal(max(1, (nvl - 1).bit_length()))
        r_blocks = Signal(PACKET_BLOCKS_BITS)          # the forwarded packet's, for LinkTx
        with m.If(~busy & ~look & cand_any):
            m.d.sync += [look.eq(1), lc.eq(cand)]
        with m.If(decide):
            m.d.sync += [look.eq(0), ptr.eq(Mux(lc == n, 0, lc + 1))]
            with m.If(kind != K_SKIP):
                m.d.sync += [busy.eq(1), mode.eq(kind), r_in.eq(lc), r_out.eq(phys), r_vl.eq(vsel),
                             r_blocks.eq(blocks)]
        m.d.comb += r_queue.eq(busy & (mode == K_QUEUE))

        # moving the packet
        srcs = [self.v15[i] for i in range(n)]
        r_valid = Array([s.valid for s in srcs] + [s_out_valid])[r_in]
        r_flit = {k: Array([getattr(s, k) for s in srcs] + [s_flit[k]])[r_in] for k in _FLIT}
        take = Signal()
        sink_ready = Signal()
        with m.Switch(mode):
            with m.Case(K_FWD15):
                m.d.comb += sink_ready.eq(Array(s.ready for s in self.src15)[r_out])
            with m.Case(K_FWDD):
                m.d.comb += sink_ready.eq(Array(Array(s.ready for s in row) for row in self.src)[r_out][r_vl])
            with m.Default():
                m.d.comb += sink_ready.eq(1)
        m.d.comb += take.eq(busy & r_valid & sink_ready)
        for i in range(n):
            m.d.comb += self.v15[i].ready.eq(take & (r_in == i))
        m.d.comb += s_take.eq(take & (r_in == n))
        with m.If(take & r_flit["eop"]):
            m.d.sync += busy.eq(0)
        for o in range(n):
            s15 = self.src15[o]
            m.d.comb += s15.valid.eq(busy & (mode == K_FWD15) & (r_out == o) & r_valid)
            m.d.comb += [getattr(s15, k).eq(r_flit[k]) for k in _FLIT]

        # data egress merge
        claim = Signal(n)
        for o in range(n):
            m.d.comb += claim[o].eq(decide & (kind == K_FWDD) & (phys == o))
            with m.If(claim[o]):
                m.d.sync += own[o].eq(1)
            with m.Elif(take & r_flit["eop"] & (r_out == o) & (mode == K_FWDD)):
                m.d.sync += own[o].eq(0)
            e = self.eg[o]
            evsel = e.vl[:max(1, (nvl - 1).bit_length())] if nvl > 1 else 0
            for v in range(nvl):
                s = self.src[o][v]
                mine = own[o]
                m.d.comb += s.valid.eq(Mux(mine, busy & (mode == K_FWDD) & (r_out == o) & (r_vl == v) & r_valid,
                                           e.valid & (e.vl == v)))
                m.d.comb += [getattr(s, k).eq(Mux(mine, r_flit[k], getattr(e, k))) for k in _FLIT]
                m.d.comb += s.blocks.eq(Mux(mine, r_blocks, e.blocks))
            ready = Array(s.ready for s in self.src[o])[evsel] if nvl > 1 else self.src[o][0].ready
            m.d.comb += e.ready.eq(ready & ~own[o] & ~claim[o])
            with m.If(e.valid & e.ready):
                m.d.sync += eg_mid[o].eq(~e.eop)

        # the queue's write port
        qi = q.i
        with m.If(r_queue):
            # (into the queue the relay never waits for a sink: `take` without the link
            # transmitters' ready, which would otherwise lie on a path into the queue)
            m.d.comb += [qi.valid.eq(r_valid)] + [getattr(qi, k).eq(r_flit[k]) for k in _FLIT]
            m.d.comb += qi.port.eq(r_in + 1)
        with m.Else():
            sel = Mux(d_active, d_owner, first)
            t = Array(self.dat)[sel]
            m.d.comb += [qi.valid.eq(Mux(d_active, t.valid, d_admit.any()))]
            m.d.comb += [getattr(qi, k).eq(getattr(t, k)) for k in _FLIT] + [qi.port.eq(sel + 1)]
        with m.If(d_admit.any() & ~Array(self.dat)[first].eop):
            m.d.sync += [d_active.eq(1), d_owner.eq(first)]
        with m.Elif(d_active & Array(self.dat)[d_owner].valid & Array(self.dat)[d_owner].eop):
            m.d.sync += d_active.eq(0)

        # counters
        for i in range(n):
            at = decide & (lc == i)
            _sat_inc(m, self.for_switch[i], at & for_sw)
            _sat_inc(m, self.v15_dropped[i], at & for_sw & (kind == K_VOID))
            _sat_inc(m, self.relay_err[i], at & ~for_sw & (kind == K_VOID), wants[i] & ~d_admit[i])
            _sat_inc(m, self.rcv[i], (at & (kind == K_QUEUE)) | d_admit[i])
        for o in range(n):
            cpu_at = decide & from_cpu & in_range & (phys == o)
            _sat_inc(m, self.xmit[o], cpu_at & ((kind == K_FWD15) | (kind == K_FWDD)))
            _sat_inc(m, self.xmit_discards[o], cpu_at & (kind == K_VOID))
        _sat_inc(m, self.tx_errors, rewind, decide & from_cpu & ~in_range)
        return m
