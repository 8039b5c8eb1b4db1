"""Link receive: parser/checker + per-VL receive buffers + credit accounting (IBA §7.9).

Behind the receive parser (hw/link/rx_parser.py) each data packet is classified on its sop
flit (docs/link-layer.md):

  * port state Down/Init and VL != 15, or state Down  -> dropped, `state_drop`
  * VL15 longer than a VL15 packet may be (IBA §7.6.5) or not fitting the VL15 buffer
                                                      -> dropped, `vl15_dropped`
  * VL >= data_vls (and != 15)                        -> dropped, `vl_invalid`
  * n blocks > free blocks of its VL: the sender ignored its credit limit, since
    n > FCCL - ABR = min(free, 2048) (IBA §7.9.4)     -> dropped, `overrun`
  * otherwise accepted: ABR += n, free -= n, flits written to the VL's buffer

A refused packet is counted under its reason when its eop flit arrives, and only if that
flit is not `bad`: a packet that also ended bad (VCRC, PktLen, EBP, truncated) is counted
once, by the parser.

An accepted packet never writes more than the n blocks it was charged: if its flits would
run past them, the last charged flit is written as eop + bad (the parser counts the PktLen
fault). Buffers are FIFOs of W-bit flits, buffer_blocks_per_vl * 64 / (W/8) deep, so
credits alone guarantee room; they are read synchronously (block RAM, docs/fpga.md), so a
flit written in cycle t is on the buffer's output from t+2. Blocks are freed when the
consumer drains a packet's eop.

A good flow-control packet for data VL v sets ABR[v] := FCTBS (IBA §7.9.4) and is passed to
the transmit side (`fc_rx`, which takes its FCCL). One for another VL is dropped; it is an
error (`fc_vl_invalid`, in PortRcvErrors) only in Armed and Active: in Init the operational
VLs may not be configured yet (the link partner may send credits for VLs this port does not
have), so there it is ignored. Port state Down clears every ABR (credit state restarts at
bring-up).

Ports:
  rx        In   PHY receive stream (docs/interfaces.md)
  state     In   port state (contracts.defs.PortState)
  vl[i]     Out  drained side of data VL i's buffer: valid data sop eop bytes bad, In ready
  vl15      Out  the same for VL15
  fccl      Out  per data VL, the credit limit to advertise: (ABR + min(free, 2048)) mod 4096
  fc_rx     Out  good FC packets received (one-cycle pulse): op fctbs vl fccl
  data_rx   Out  a data packet (not VL15) was accepted into a buffer (one-cycle pulse, a clock
                 after its header): takes an Armed port to Active (IBA §7.2)
  counters  Out  the parser's counters and the buffer/credit ones above, 32-bit saturating
Timing: rx -> parser output 1 cycle; a flit written in cycle t is readable from t+2.
"""
from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import data, enum, wiring
from amaranth.lib.fifo import SyncFIFOBuffered

from contracts import link as specs
from contracts.config import BLOCK_BYTES, VCRC_BYTES, SwitchConfig
from contracts.counters import PARSER_COUNTERS
from contracts.defs import PortState
from hw.common.ports import signature
from hw.link.credit import CreditReceiver
from hw.link.rx_parser import RxParser

__all__ = ["LinkRx", "packet_blocks", "extra_flits"]

_WHY = ("state_drop", "vl15_dropped", "vl_invalid", "overrun")      # why a packet is refused


class _Mode(enum.Enum, shape=2):
    IDLE = 0
    ACCEPT = 1
    DROP = 2


def packet_blocks(pktlen, vcrc: bool = True):
    """The credit blocks of a data packet, ceil((4*PktLen + VCRC) / 64), or without the
    VCRC ceil(4*PktLen / 64) (SwitchConfig.credit_vcrc; docs/link-layer.md), as an Amaranth
    expression."""
    return ((pktlen << 2) + (VCRC_BYTES if vcrc else 0) + BLOCK_BYTES - 1) >> 6


def extra_flits(cfg: SwitchConfig) -> int:
    """Flits a receiver takes of a data packet beyond its charged blocks: one without the
    VCRC in the charge (where a PktLen % 16 == 0 packet's VCRC goes), else none."""
    return 0 if cfg.credit_vcrc else 1


class LinkRx(wiring.Component):
    """`buffered=False` keeps only the VL15 buffer: accepted data-VL packets leave on `acc`
    (in the cycle they would have been written) and the buffer that takes them returns the
    blocks it frees on `release[i]` (the switch's VOQ buffer does this)."""

    def __init__(self, cfg: SwitchConfig, buffered: bool = True):
        self.cfg = cfg
        self.buffered = buffered
        super().__init__(signature(specs.link_rx(cfg, buffered)))

    @property
    def flits_per_block(self):
        return BLOCK_BYTES // self.cfg.bytes_per_flit

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        W, nb, nvl = cfg.data_width, cfg.bytes_per_flit, cfg.data_vls
        fpb = self.flits_per_block
        # the charge stored with a sop flit: blocks (data VLs) or flits (VL15)
        nbits = max(cfg.max_packet_blocks, -(-cfg.vl15_max_packet_bytes // nb)).bit_length()

        m.submodules.parser = p = RxParser(cfg)
        wiring.connect(m, wiring.flipped(self.rx), p.rx)
        pkt = p.out

        word = data.StructLayout({"data": W, "bytes": cfg.bytes_width, "sop": 1, "eop": 1, "bad": 1,
                                  "n": nbits})
        # without the VCRC in the charge every packet may bring one flit more than its blocks
        # (models.credit.taken_flits), and a packet is charged at least a block
        depth = cfg.buffer_blocks_per_vl * (fpb + extra_flits(cfg))
        vl15_depth = cfg.vl15_buffer_blocks * fpb
        fifos = []
        for i in range(nvl if self.buffered else 0):
            f = SyncFIFOBuffered(width=word.size, depth=depth)
            m.submodules[f"buf{i}"] = f
            fifos.append(f)
        f15 = SyncFIFOBuffered(width=word.size, depth=vl15_depth)
        m.submodules.buf15 = f15
        outs = (list(self.vl) if self.buffered else []) + [self.vl15]
        all_fifos = fifos + [f15]

        # ---- credit state per data VL (IBA §7.9), hw/link/credit.py
        credits = []
        for i in range(nvl):
            c = CreditReceiver(cfg.buffer_blocks_per_vl, nbits + 1)
            m.submodules[f"credit{i}"] = c
            credits.append(c)
            m.d.comb += self.fccl[i].eq(c.fccl)

        # ---- classify the sop flit of each packet coming out of the parser
        hdr = pkt.hdr
        n = Signal(nbits)
        m.d.comb += n.eq(packet_blocks(hdr.pktlen, cfg.credit_vcrc))
        hdr_vl = hdr.vl
        state = self.state
        rx_on = (state == PortState.ARMED) | (state == PortState.ACTIVE)
        vl15_flits = Signal(range(vl15_depth + 1))          # flits reserved in the VL15 buffer
        nflits = Signal(range(cfg.max_packet_flits + 2))
        m.d.comb += nflits.eq(((hdr.pktlen << 2) + VCRC_BYTES + nb - 1) // nb)

        mode = Signal(_Mode)
        cur = Signal(range(nvl + 1))                         # buffer index; nvl = VL15
        left = Signal(range(cfg.max_packet_blocks * fpb + 2))  # flits it may still bring

        ev = {k: Signal(name=f"ev_{k}") for k in ("state_drop", "vl15_dropped", "vl_invalid", "overrun",
                                                   "fc_vl_invalid", "accept")}
        why = Signal(len(_WHY))     # the reason of the refused packet still arriving (one-hot)
        acc_vl = Signal(range(nvl + 1))
        offer = Signal()            # a data-VL packet reaches the credit check

        # write port mux: at most one buffer written per cycle
        w_en = Signal()
        w_idx = Signal(range(nvl + 1))
        w_word = Signal(word)
        if self.buffered:
            for k, f in enumerate(all_fifos):
                m.d.comb += [f.w_en.eq(w_en & (w_idx == k)), f.w_data.eq(w_word)]
        else:
            m.d.comb += [f15.w_en.eq(w_en & (w_idx == nvl)), f15.w_data.eq(w_word)]
            a = self.acc
            m.d.comb += [a.valid.eq(w_en & (w_idx != nvl)), a.data.eq(w_word.data), a.sop.eq(w_word.sop),
                         a.eop.eq(w_word.eop), a.bytes.eq(w_word.bytes), a.bad.eq(w_word.bad),
                         a.hdr.eq(pkt.hdr), a.vl.eq(w_idx), a.blocks.eq(w_word.n)]

        def write(idx, eop=None, bad=None, nval=0):
            m.d.comb += [
                w_en.eq(1), w_idx.eq(idx),
                w_word.data.eq(pkt.data), w_word.bytes.eq(pkt.bytes), w_word.sop.eq(pkt.sop),
                w_word.eop.eq(pkt.eop if eop is None else eop),
                w_word.bad.eq(pkt.bad if bad is None else bad),
                w_word.n.eq(nval),
            ]

        with m.If(pkt.valid & pkt.sop):
            with m.If((state == PortState.DOWN) | (~rx_on & (hdr_vl != 15))):
                m.d.comb += ev["state_drop"].eq(1)
            with m.Elif(hdr_vl == 15):
                with m.If(((hdr.pktlen << 2) + VCRC_BYTES > cfg.vl15_max_packet_bytes)
                          | (nflits > vl15_depth - vl15_flits)):
                    m.d.comb += ev["vl15_dropped"].eq(1)
                with m.Else():
                    m.d.comb += [ev["accept"].eq(1), acc_vl.eq(nvl)]
            with m.Elif(hdr_vl >= nvl):
                m.d.comb += ev["vl_invalid"].eq(1)
            with m.Else():
                m.d.comb += offer.eq(1)
                with m.If(Array(c.accept for c in credits)[hdr_vl]):
                    m.d.comb += [ev["accept"].eq(1), acc_vl.eq(hdr_vl)]
                with m.Else():
                    m.d.comb += ev["overrun"].eq(1)                  # IBA §7.9.4

            # a refused packet counts under its reason at its eop, and only if it ended good:
            # one that ended bad is the parser's to count (one packet, one reason)
            with m.If(~ev["accept"] & ~pkt.eop):
                m.d.sync += why.eq(Cat(ev[k] for k in _WHY))
            with m.If(ev["accept"]):
                charged = Mux(acc_vl == nvl, nflits, n * fpb + extra_flits(cfg))
                last = pkt.eop | (charged == 1)
                write(acc_vl, eop=last, bad=pkt.bad | (last & ~pkt.eop), nval=Mux(acc_vl == nvl, nflits, n))
                m.d.sync += [cur.eq(acc_vl), left.eq(charged - 1),
                             mode.eq(Mux(~last, _Mode.ACCEPT, Mux(pkt.eop, _Mode.IDLE, _Mode.DROP)))]
            with m.Else():
                m.d.sync += mode.eq(Mux(pkt.eop, _Mode.IDLE, _Mode.DROP))
        with m.Elif(pkt.valid):
            with m.Switch(mode):
                with m.Case(_Mode.ACCEPT):
                    last = pkt.eop | (left == 1)
                    write(cur, eop=last, bad=pkt.bad | (last & ~pkt.eop))
                    m.d.sync += left.eq(left - 1)
                    with m.If(last):
                        m.d.sync += mode.eq(Mux(pkt.eop, _Mode.IDLE, _Mode.DROP))
                with m.Case(_Mode.DROP):
                    with m.If(pkt.eop):
                        m.d.sync += [mode.eq(_Mode.IDLE), why.eq(0)]

        # ---- drain side: release a packet's blocks when its eop leaves the buffer
        rel_n = Array(Signal(nbits, name=f"rel_n{i}") for i in range(nvl + 1))
        popped_eop = [] if self.buffered else list(self.release)
        for k, (f, o) in enumerate(zip(all_fifos, outs, strict=True)):
            k = k if self.buffered else nvl
            w = word(f.r_data)
            m.d.comb += [
                o.valid.eq(f.r_rdy), o.data.eq(w.data), o.bytes.eq(w.bytes), o.sop.eq(w.sop),
                o.eop.eq(w.eop), o.bad.eq(w.bad), f.r_en.eq(o.ready),
            ]
            pop = f.r_rdy & o.ready
            with m.If(pop & w.sop):
                m.d.sync += rel_n[k].eq(w.n)
            rel = Signal(nbits, name=f"release{k}")
            m.d.comb += rel.eq(Mux(pop & w.eop, Mux(w.sop, w.n, rel_n[k]), 0))
            popped_eop.append(rel)

        # ---- credit updates
        fc = p.fc
        link_down = (state == PortState.DOWN) | ~self.rx.up
        for i, c in enumerate(credits):
            m.d.comb += [
                c.n.eq(n), c.arrive.eq(offer & (hdr_vl == i)), c.release.eq(popped_eop[i]),
                c.fc_valid.eq(fc.valid & (fc.vl == i)), c.fc_fctbs.eq(fc.fctbs), c.clear.eq(link_down),
            ]
        take15 = Mux(ev["accept"] & (acc_vl == nvl), nflits, 0)
        m.d.sync += self.data_rx.eq(ev["accept"] & (acc_vl != nvl))
        m.d.sync += vl15_flits.eq(vl15_flits + take15 - popped_eop[nvl])

        # ---- flow-control packets to the transmit side
        fc_ok = fc.valid & (fc.vl < nvl) & ~link_down
        m.d.comb += ev["fc_vl_invalid"].eq(fc.valid & (fc.vl >= nvl) & (state >= PortState.ARMED))
        m.d.sync += [
            self.fc_rx.valid.eq(fc_ok), self.fc_rx.op.eq(fc.op), self.fc_rx.fctbs.eq(fc.fctbs),
            self.fc_rx.vl.eq(fc.vl), self.fc_rx.fccl.eq(fc.fccl),
        ]

        # ---- counters
        ctr = self.counters
        for name in PARSER_COUNTERS:
            m.d.comb += getattr(ctr, name).eq(getattr(p.counters, name))
        ends_good = pkt.valid & pkt.eop & ~pkt.bad
        refused_now = {k: ends_good & Mux(pkt.sop, ev[k], why[j] & (mode == _Mode.DROP))
                       for j, k in enumerate(_WHY)}
        incs = {
            "rcv_pkts": (ev["accept"], 1),
            "rcv_words": (ev["accept"], hdr.pktlen),         # 4-byte words, LRH..ICRC
            **{k: (refused_now[k], 1) for k in _WHY},
            "fc_vl_invalid": (ev["fc_vl_invalid"], 1),
        }
        for name, (hit, amount) in incs.items():
            c = getattr(ctr, name)
            nxt = c + amount
            with m.If(hit):
                m.d.sync += c.eq(Mux(nxt > 0xFFFFFFFF, 0xFFFFFFFF, nxt))
        return m
