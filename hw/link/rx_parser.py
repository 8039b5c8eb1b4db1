"""Link receive parser/checker (docs/rx-parser.md).

Takes the PHY receive stream (docs/interfaces.md), separates link (flow-control) packets from data
packets, extracts the LRH from the first flit, checks the VCRC alongside the data and the
LRH fields against the packet, and emits:

  out       data-packet flits, registered (one cycle after rx), with `hdr` (the LRH) from
            the sop flit and `bad`/`err` on the eop flit. A packet whose LRH fails its
            checks (LVer, PktLen below the LNH minimum or above the MTU maximum) is dropped
            before its first flit goes out; one whose fault shows only at the tail (VCRC,
            PktLen vs actual length, EBP) goes out whole with `bad` set on its eop flit.
  fc        a one-cycle pulse per good flow-control packet (LPCRC checked, IBA §7.9.4)
  counters  32-bit saturating counts: good data and link packets, and each refused packet
            under exactly one reason (contracts.defs.RX_ERROR_PRIORITY)

Framing faults never wedge the parser: a sop while a forwarded packet is open ends that
packet with a terminator flit (eop, bad, err=TRUNCATED; the flit carrying the new sop is
lost and its packet counted as FRAMING); a packet that runs past the largest legal length
is ended at that flit (err=LONG) and the rest discarded up to its eop; `up` falling ends an
open packet the same way (TRUNCATED).
"""
from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import enum, wiring

from contracts import link as specs
from contracts.config import VCRC_BYTES, SwitchConfig
from contracts.defs import RX_ERROR_PRIORITY, RxError
from hw.common.crc import CRC16_IB, CRCCheck, crc_network, swap_last_two
from hw.common.layouts import FCLayout, LRHLayout, header_at
from hw.common.ports import signature

__all__ = ["RxParser"]

_NFLAGS = max(RxError) + 1
_MIN_PKTLEN = {0: 5, 1: 12, 2: 6, 3: 16}      # by LNH; see models.packet.min_pktlen


def _bit(e: RxError) -> int:
    return 1 << int(e)


def priority_encode(flags):
    """The highest-priority RxError whose bit is set in `flags` (NONE if none)."""
    code = Const(RxError.NONE, 4)
    for e in reversed(RX_ERROR_PRIORITY):
        code = Mux(flags[int(e)], int(e), code)
    return code


class State(enum.Enum, shape=2):
    IDLE = 0   # between packets
    FWD = 1    # forwarding a data packet
    DROP = 2   # inside a refused packet; counted at its end
    SKIP = 3   # discarding the tail of a packet already ended and counted


class RxParser(wiring.Component):
    """See module docstring. Ports: `rx` (In), `out`, `fc`, `counters` (Out)."""

    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        super().__init__(signature(specs.rx_parser(cfg)))

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        W = cfg.data_width
        nbw = W // 8
        rx, out = self.rx, self.out

        state = Signal(State)
        flags = Signal(_NFLAGS)               # faults of the open DROP packet
        cnt = Signal(range(cfg.max_packet_bytes + nbw + 1))   # bytes so far
        pktlen_q = Signal(11)

        v = Signal()
        nb_eff = Signal(cfg.bytes_width)
        cnt_n = Signal(len(cnt))
        m.d.comb += [
            v.eq(rx.valid & rx.up),
            nb_eff.eq(Mux(rx.eop, rx.bytes, nbw)),
            cnt_n.eq(Mux(rx.sop | (state == State.IDLE), 0, cnt) + nb_eff),
        ]

        # VCRC runs alongside the data; at eop the CRC covers the whole packet including its
        # VCRC field, so a good packet leaves the constant residue (IBA §7.8.2). CRCCheck
        # tests that without computing the CRC of the partial last flit (hw/common/crc.py).
        # With the VCRC sent most-significant byte first (SwitchConfig.crc_msb_first) the two
        # bytes at the end of the eop flit are exchanged on their way into the check; a packet
        # whose eop flit holds one byte (its length is not 2 mod 4: malformed) fails it then.
        m.submodules.vcrc = vcrc = CRCCheck(CRC16_IB, W)
        vcrc_bad = Signal()
        msb = cfg.crc_msb_first
        m.d.comb += [
            vcrc.valid.eq(v),
            vcrc.first.eq(rx.sop),
            vcrc.data.eq(Mux(rx.eop, swap_last_two(rx.data, rx.bytes, W), rx.data) if msb else rx.data),
            vcrc.nbytes.eq(nb_eff),
            vcrc_bad.eq(~vcrc.ok | (rx.eop & (rx.bytes == 1)) if msb else ~vcrc.ok),
        ]

        # LRH of a sop flit (IBA §7.7) and its checks.
        lrh = header_at(rx.data, W, LRHLayout)
        min_len = Signal(5)
        with m.Switch(lrh.lnh):
            for lnh, words in _MIN_PKTLEN.items():
                with m.Case(lnh):
                    m.d.comb += min_len.eq(words)
        hdr_flags = Signal(_NFLAGS)
        m.d.comb += [
            hdr_flags[int(RxError.LVER)].eq(lrh.lver != 0),               # IBA §7.7.3
            hdr_flags[int(RxError.SHORT)].eq(lrh.pktlen < min_len),       # IBA §7.7.8
            hdr_flags[int(RxError.LONG)].eq(lrh.pktlen > cfg.max_pktlen),
        ]

        # Tail checks on an eop flit: EBP, VCRC, PktLen vs actual (IBA §7.7.8:
        # wire length = 4*PktLen + VCRC).
        pktlen_eff = Mux(rx.sop, lrh.pktlen, pktlen_q)
        tail_flags = Signal(_NFLAGS)
        m.d.comb += [
            tail_flags[int(RxError.EBP)].eq(rx.bad),
            tail_flags[int(RxError.VCRC)].eq(vcrc_bad),
            tail_flags[int(RxError.PKTLEN)].eq(cnt_n != (pktlen_eff << 2) + VCRC_BYTES),
        ]

        # Link packet checks (IBA §7.9.4): exactly 6 bytes in one flit, Op 0/1, LPCRC.
        fcv = header_at(rx.data, W, FCLayout)
        lp = rx.data[W - 48:]
        if cfg.crc_msb_first:                       # the LPCRC's bytes in the order the check expects
            lp = Cat(lp[8:16], lp[0:8], lp[16:48])
        lpcrc_bad = Signal()
        m.d.comb += lpcrc_bad.eq(
            (crc_network(CRC16_IB, Const(CRC16_IB.init, 16), lp, 6) ^ CRC16_IB.xorout)
            != CRC16_IB.residue)
        link_flags = Signal(_NFLAGS)
        m.d.comb += [
            link_flags[int(RxError.EBP)].eq(rx.bad),
            link_flags[int(RxError.LINK_FORMAT)].eq((rx.bytes != 6) | (fcv.op > 1)),
            link_flags[int(RxError.LPCRC)].eq(lpcrc_bad),
        ]

        # Events of this cycle, counted below.
        close_trunc = Signal()     # an open FWD/DROP packet is cut (TRUNCATED)
        end_valid = Signal()       # a packet ends in this flit ...
        end_code = Signal(4)       # ... with this verdict (0 = good)
        end_link = Signal()        # ... and it is a link packet

        m.d.sync += [out.valid.eq(0), self.fc.valid.eq(0)]
        with m.If(v):
            m.d.sync += cnt.eq(cnt_n)

        def emit(sop=0, eop=0, bad=0, err=0, data=None, nbytes=None):
            m.d.sync += [
                out.valid.eq(1),
                out.data.eq(rx.data if data is None else data),
                out.sop.eq(sop),
                out.eop.eq(eop),
                out.bytes.eq(nb_eff if nbytes is None else nbytes),
                out.bad.eq(bad),
                out.err.eq(err),
            ]

        def terminator():
            emit(eop=1, bad=1, err=RxError.TRUNCATED, data=0, nbytes=nbw)

        def end(code, link=0):
            m.d.comb += [end_valid.eq(1), end_code.eq(code), end_link.eq(link)]

        with m.If(~rx.up):
            with m.If(state == State.FWD):
                terminator()
            with m.If((state == State.FWD) | (state == State.DROP)):
                m.d.comb += close_trunc.eq(1)
            m.d.sync += state.eq(State.IDLE)

        with m.Elif(v & rx.sop):
            with m.If((state == State.FWD) | (state == State.DROP)):
                m.d.comb += close_trunc.eq(1)
            with m.If((state == State.FWD) & ~rx.link):
                # The open packet is ended by a terminator in this cycle; the flit carrying
                # the new sop cannot go out too, so its packet is lost (FRAMING).
                terminator()
                with m.If(rx.eop):
                    end(RxError.FRAMING)
                    m.d.sync += state.eq(State.IDLE)
                with m.Else():
                    m.d.sync += [state.eq(State.DROP), flags.eq(_bit(RxError.FRAMING))]
            with m.Elif(rx.link):
                # a link packet needs no slot on the data output: the terminator of an open
                # packet goes out in this cycle, and the link packet is taken as usual
                with m.If(state == State.FWD):
                    terminator()
                with m.If(rx.eop):
                    code = priority_encode(link_flags)
                    end(code, link=1)
                    with m.If(code == RxError.NONE):
                        m.d.sync += [
                            self.fc.valid.eq(1),
                            self.fc.op.eq(fcv.op),
                            self.fc.fctbs.eq(fcv.fctbs),
                            self.fc.vl.eq(fcv.vl),
                            self.fc.fccl.eq(fcv.fccl),
                        ]
                    m.d.sync += state.eq(State.IDLE)
                with m.Else():
                    m.d.sync += [state.eq(State.DROP), flags.eq(_bit(RxError.LINK_FORMAT))]
            with m.Else():
                m.d.sync += pktlen_q.eq(lrh.pktlen)
                with m.If(rx.eop):
                    code = priority_encode(hdr_flags | tail_flags)
                    end(code)
                    with m.If(hdr_flags == 0):
                        emit(sop=1, eop=1, bad=code != 0, err=code)
                        m.d.sync += out.hdr.eq(lrh)
                    m.d.sync += state.eq(State.IDLE)
                with m.Elif(hdr_flags != 0):
                    m.d.sync += [state.eq(State.DROP), flags.eq(hdr_flags)]
                with m.Else():
                    emit(sop=1)
                    m.d.sync += [out.hdr.eq(lrh), state.eq(State.FWD), flags.eq(0)]

        with m.Elif(v):
            with m.Switch(state):
                with m.Case(State.IDLE):
                    # A flit with no packet open (its sop never came).
                    with m.If(rx.eop):
                        end(RxError.FRAMING)
                    with m.Else():
                        m.d.sync += [state.eq(State.DROP), flags.eq(_bit(RxError.FRAMING))]
                with m.Case(State.FWD, State.DROP):
                    fwd = state == State.FWD
                    with m.If(cnt_n > cfg.max_packet_bytes):
                        # Runaway packet: end it here, discard the rest up to its eop.
                        code = priority_encode(flags | _bit(RxError.LONG))
                        end(code)
                        with m.If(fwd):
                            emit(eop=1, bad=1, err=code)
                        m.d.sync += state.eq(Mux(rx.eop, State.IDLE, State.SKIP))
                    with m.Elif(rx.eop):
                        code = priority_encode(flags | tail_flags)
                        end(code)
                        with m.If(fwd):
                            emit(eop=1, bad=code != 0, err=code)
                        m.d.sync += state.eq(State.IDLE)
                    with m.Elif(fwd):
                        emit()
                with m.Case(State.SKIP):
                    with m.If(rx.eop):
                        m.d.sync += state.eq(State.IDLE)

        # Counters: saturating, 32 bits. A truncation (always TRUNCATED) and a packet end
        # (never TRUNCATED) may fall in the same cycle; they never hit the same counter.
        # The verdict is registered first and counted a cycle later: the VCRC check of the
        # tail flit feeds only the flit's own bad/err bits in its cycle, not the counters.
        ev = {"valid": end_valid, "code": end_code, "link": end_link, "trunc": close_trunc}
        evq = {k: Signal.like(v, name=f"count_{k}") for k, v in ev.items()}
        m.d.sync += [evq[k].eq(v) for k, v in ev.items()]
        ctr = self.counters
        incs = {
            "good_data": evq["valid"] & (evq["code"] == 0) & ~evq["link"],
            "good_link": evq["valid"] & (evq["code"] == 0) & evq["link"],
        }
        for e in RxError:
            if e == RxError.NONE:
                continue
            hit = evq["valid"] & (evq["code"] == int(e))
            if e == RxError.TRUNCATED:
                hit = hit | evq["trunc"]
            incs[e.name.lower()] = hit
        for name, hit in incs.items():
            c = getattr(ctr, name)
            with m.If(hit & (c != 0xFFFFFFFF)):
                m.d.sync += c.eq(c + 1)
        return m
