"""Hardware traffic checker (docs/endpoint.md): judges every packet the endpoint's link
receiver accepted against the traffic generator's definition (hw/endpoint/traffic_gen.py),
with no software in the loop.

Per packet, at its tail:
  * marked bad by the link receiver (VCRC, PktLen vs length, EBP...: the receive parser's
    checks, IBA §7.7.8, §7.8.2)                 -> `rcv_bad`, not judged further;
  * otherwise each of these is counted where it fails:
      ICRC (CRC-32 over LRH..payload with the variant fields as ones, IBA §7.8.1) -> `icrc_err`
      LNH 2 and BTH opcode RC SEND Only, and PktLen = 6 + P(PSN)                  -> `format_err`
      payload words k >= 1 = pattern(SLID, PSN, k)                                -> `pattern_err`
      SLID in src_base .. src_base + max_srcs - 1                                 -> `unknown_src`
      order per source (expected PSN = last in-order PSN + 1, 24-bit): a newer PSN is a gap
      (`seq_gap` once, `seq_lost` += packets skipped; expected moves on), an older one a
      duplicate or reordering (`seq_dup`)
    a packet with none of these faults (a gap is not its fault) is `rcv_good`, and its
    latency (`now` in the cycle its tail arrives minus the generation time in payload word
    0) goes into `lat_min`, `lat_max`, `lat_sum`; any other is `rcv_errors`.
So rcv_pkts = rcv_good + rcv_bad + rcv_errors.

`check_icrc=False` leaves the ICRC out (its CRC-32 engine is ~1,200 LUT4 at 64 bits, and
`icrc_err` stays 0): the board top does this to fit the 85F. What it loses is small for
the generator's own traffic: every payload word but word 0 (the timestamp) is compared
with the pattern and every checked header field with its expected value, so a corruption
inside the switch is still caught unless it hits only word 0 or the ICRC itself; the link
receiver still checks each packet's VCRC.

Timing: the input is registered (stage A: pattern and ICRC byte count), the tail's facts a
cycle later (stage B), and the counters take a packet's verdict from the third cycle after
its eop flit was on the input.

Ports:
  i        In   valid data sop eop bytes bad (the accepted stream of LinkRx, taken every cycle)
  src_base, len_min, len_mask, now     In
  counters Out  32-bit saturating (lat_sum 48-bit)
"""
from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import wiring

from contracts import endpoint as specs
from contracts.config import SwitchConfig
from hw.common.crc import ICRCGenerator
from hw.common.ports import signature
from hw.endpoint.traffic_gen import HEADER_WORDS, RC_SEND_ONLY, bswap32, payload_words

__all__ = ["TrafficCheck"]



class TrafficCheck(wiring.Component):
    def __init__(self, cfg: SwitchConfig, max_srcs: int = 4, check_icrc: bool = True):
        if not 1 <= max_srcs <= 256:
            raise ValueError(f"TrafficCheck: max_srcs must be in 1..256, got {max_srcs}")
        self.cfg, self.max_srcs, self.check_icrc = cfg, max_srcs, check_icrc
        super().__init__(signature(specs.traffic_check(cfg, max_srcs, check_icrc)))

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        W, nb = cfg.data_width, cfg.bytes_per_flit
        nw = nb // 4
        i = self.i

        # ---- stage A: the input flit, registered, with its index in the packet
        fidx = Signal(range(cfg.max_packet_flits + 2))
        a = {k: Signal(w, name=f"a_{k}") for k, w in (("valid", 1), ("data", W), ("sop", 1), ("eop", 1),
                                                       ("bad", 1), ("now", 32))}
        a_fidx = Signal(len(fidx))
        m.d.sync += [a[k].eq(getattr(i, k)) for k in ("valid", "data", "sop", "eop", "bad")]
        m.d.sync += [a["now"].eq(self.now), a_fidx.eq(Mux(i.sop, 0, fidx))]
        with m.If(i.valid):
            m.d.sync += fidx.eq(Mux(i.sop, 1, fidx + 1))

        slot = [a["data"].word_select(nw - 1 - j, 32) for j in range(nw)]   # slot 0 = first word

        def word_at(g):
            """(flit index, slot) of packet word g, a constant."""
            return g // nw, g % nw

        # packet facts from fixed word positions (LRH words 0-1, BTH 2-4, time word 5)
        pktlen_q, slid_q, psn_q, ts_q, lnh_q, op_q = (Signal(11), Signal(16), Signal(24), Signal(32),
                                                       Signal(2), Signal(8))
        pat_bad_q = Signal()
        icrc_rcv_q = Signal(32)

        def fact(g, q, lo, width):
            f, j = word_at(g)
            now = Mux(a_fidx == f, slot[j][lo:lo + width], q)
            with m.If(a["valid"] & (a_fidx == f)):
                m.d.sync += q.eq(slot[j][lo:lo + width])
            return now

        lnh = fact(0, lnh_q, 16, 2)
        pktlen = fact(1, pktlen_q, 16, 11)
        slid = fact(1, slid_q, 0, 16)
        op = fact(2, op_q, 24, 8)
        psn = fact(4, psn_q, 0, 24)
        ts = fact(HEADER_WORDS, ts_q, 0, 32)

        mism = []
        icrc_here = Signal(32)
        for j in range(nw):
            g = Signal(len(a_fidx) + nw.bit_length(), name=f"g{j}")
            m.d.comb += g.eq(a_fidx * nw + j)
            k = Signal(16, name=f"k{j}")
            m.d.comb += k.eq(g - HEADER_WORDS)
            want = Cat(k, psn[:8], slid[:8])
            mism.append((g > HEADER_WORDS) & (g + 1 < pktlen) & (slot[j] != want))
            with m.If(g + 1 == pktlen):
                m.d.comb += icrc_here.eq(bswap32(slot[j]))
        pat_bad = Signal()
        m.d.comb += pat_bad.eq(Cat(mism).any() | (pat_bad_q & ~a["sop"]))
        icrc_seen = Signal()
        m.d.comb += icrc_seen.eq(a_fidx == ((pktlen - 1) >> (nw.bit_length() - 1)))
        icrc_rcv = Mux(icrc_seen, icrc_here, icrc_rcv_q)
        with m.If(a["valid"]):
            m.d.sync += [pat_bad_q.eq(pat_bad), icrc_rcv_q.eq(icrc_rcv)]

        # ICRC over LRH..payload: the flit's bytes before the ICRC
        body_words = Signal(range(-(cfg.max_packet_flits + 2) * nw, 2048))
        m.d.comb += body_words.eq(pktlen - 1 - a_fidx * nw)
        body = Mux(body_words <= 0, 0, Mux(body_words >= nw, nb, body_words[:8] << 2))
        body_last = (body_words > 0) & (body_words <= nw)
        if self.check_icrc:
            m.submodules.icrc = ic = ICRCGenerator(W, granule=4)
            m.d.comb += [ic.valid.eq(a["valid"] & (body != 0)), ic.sop.eq(a["sop"]), ic.eop.eq(body_last),
                         ic.data.eq(a["data"]), ic.bytes.eq(body)]
            icrc_calc = Mux(body_last, ic.crc, ic.crc_q)
        else:
            icrc_calc = icrc_rcv            # not checked (see the module docstring)

        # ---- stage B: the tail's facts
        b_end = Signal()
        b = {k: Signal(w, name=f"b_{k}") for k, w in (("bad", 1), ("lnh", 2), ("op", 8), ("pktlen", 11),
                                                       ("slid", 16), ("psn", 24), ("lat", 32), ("pat_bad", 1),
                                                       ("icrc_calc", 32), ("icrc_rcv", 32))}
        m.d.sync += b_end.eq(a["valid"] & a["eop"])
        with m.If(a["valid"] & a["eop"]):
            m.d.sync += [b["bad"].eq(a["bad"]), b["lnh"].eq(lnh), b["op"].eq(op), b["pktlen"].eq(pktlen),
                         b["slid"].eq(slid), b["psn"].eq(psn), b["lat"].eq(a["now"] - ts),
                         b["pat_bad"].eq(pat_bad), b["icrc_rcv"].eq(icrc_rcv),
                         b["icrc_calc"].eq(icrc_calc)]

        # ---- verdict (B's cycle) -> counters
        exp = Array(Signal(24, name=f"exp{s}") for s in range(self.max_srcs))
        src = Signal(16)
        m.d.comb += src.eq(b["slid"] - self.src_base)
        known = src < self.max_srcs
        sidx = src[:max(1, (self.max_srcs - 1).bit_length())]
        e = exp[sidx]
        delta = Signal(24)
        m.d.comb += delta.eq(b["psn"] - e)
        p_len = payload_words(m, cfg, b["psn"], self.len_min, self.len_mask, "p")
        icrc_bad = b["icrc_calc"] != b["icrc_rcv"]
        fmt_bad = (b["lnh"] != 2) | (b["op"] != RC_SEND_ONLY) | (b["pktlen"] != p_len + HEADER_WORDS + 1)
        judged = b_end & ~b["bad"]
        gap = known & (delta != 0) & ~delta[23]
        dup = known & delta[23]
        good = ~icrc_bad & ~fmt_bad & ~b["pat_bad"] & known & ~dup
        with m.If(judged & known & ~dup):
            m.d.sync += exp[sidx].eq(b["psn"] + 1)

        c = self.counters
        incs = {
            "rcv_pkts": b_end, "rcv_bad": b_end & b["bad"], "rcv_good": judged & good,
            "rcv_errors": judged & ~good, "icrc_err": judged & icrc_bad, "format_err": judged & fmt_bad,
            "pattern_err": judged & b["pat_bad"], "unknown_src": judged & ~known,
            "seq_gap": judged & gap, "seq_dup": judged & dup,
        }
        for name, hit in incs.items():
            ctr = getattr(c, name)
            with m.If(hit & (ctr != 0xFFFFFFFF)):
                m.d.sync += ctr.eq(ctr + 1)
        lost = c.seq_lost + delta
        with m.If(judged & gap):
            m.d.sync += c.seq_lost.eq(Mux(lost > 0xFFFFFFFF, 0xFFFFFFFF, lost))
        with m.If(judged & good):
            m.d.sync += c.lat_sum.eq(c.lat_sum + b["lat"])
            with m.If(b["lat"] < c.lat_min):
                m.d.sync += c.lat_min.eq(b["lat"])
            with m.If(b["lat"] > c.lat_max):
                m.d.sync += c.lat_max.eq(b["lat"])
        return m
