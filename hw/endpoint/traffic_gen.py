"""Hardware traffic generator (docs/endpoint.md): sequence-numbered, CRC-valid IBA data
packets for a switch port, with no software in the loop (FPGA board top, fabric and soak
runs).

Each packet is an RC SEND Only (BTH opcode 0x04, IBA §9.2) on LNH 2 (IBA local):

    LRH   VL=vl LVer=0 SL=sl LNH=2 DLID SLID=slid PktLen=6+P       (IBA §7.7)
    BTH   opcode 0x04, P_Key 0xFFFF, DestQP=qp, PSN = sequence number of the flow   (IBA §9.2)
    payload P 32-bit words: word 0 the generation time (`now` when the packet was begun),
          word k >= 1 = pattern(slid, psn, k) = slid[7:0] << 24 | psn[7:0] << 16 | k
    ICRC  CRC-32 over LRH..payload with the variant fields as ones (IBA §7.8.1)
    VCRC  CRC-16 over LRH..ICRC (IBA §7.8.2)

A flow is (slid, dlid). The generator sends to `ndest` destinations dlid_base ..
dlid_base+ndest-1 in turn, one packet each, and numbers the packets of each destination
0, 1, 2, ... (24-bit PSN). The payload length is a function of the PSN, so a checker can
verify it: P = min(len_min + ((psn ^ (psn >> 4)) & len_mask), mtu/4), at least 1.
After each packet it idles `gap` cycles (offered load); it stops after `count` packets
(0: never). `en` is looked at between packets: a packet once begun is finished.

Output `o` (to LinkTx src[vl]): the flits of the packets, back to back, through a
three-stage pipeline that stalls as a whole while `o.valid & ~o.ready` (stage 1: the
packet's words; stage 2: the ICRC over the flit's body bytes; stage 3: the VCRC), so
o shows the generated sequence (flits and the gap cycles between packets) delayed by
three cycles, one element per cycle in which o is empty or taken.

Ports (configuration inputs are to be held while `en`):
  en, slid, dlid_base, ndest, sl, vl, qp, len_min, len_mask, count, gap, now   In
  o                                        Out  valid data sop eop bytes bad(0), In ready
  sent_pkts (32, saturating), done (count reached)                        Out
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring

from contracts import endpoint as specs
from contracts.config import SwitchConfig
from hw.common.crc import CRC16_IB, CRCEngine, ICRCGenerator, crc16_wire
from hw.common.ports import signature

__all__ = ["TrafficGen", "HEADER_WORDS", "RC_SEND_ONLY", "bswap32", "payload_words"]

HEADER_WORDS = 5          # LRH (2) + BTH (3): the payload starts at word 5 (byte 20)
RC_SEND_ONLY = 0x04       # IBA §9.2 Table 38: RC SEND Only


def bswap32(x):
    """A CRC as its wire bytes (least-significant byte first) in a big-endian word."""
    return Cat(x[24:32], x[16:24], x[8:16], x[0:8])


def payload_words(m, cfg: SwitchConfig, psn, len_min, len_mask, name: str):
    """The payload length (32-bit words) of the packet with sequence number `psn`:
    clamp(len_min + ((psn ^ (psn >> 4)) & len_mask), 1, MTU/4) (docs/endpoint.md)."""
    raw = Signal(12, name=f"{name}_raw")
    m.d.comb += raw.eq(len_min + ((psn ^ (psn >> 4))[:11] & len_mask))
    return Mux(raw > cfg.mtu // 4, cfg.mtu // 4, Mux(raw == 0, 1, raw))


class TrafficGen(wiring.Component):
    def __init__(self, cfg: SwitchConfig, max_dests: int = 4):
        if not 1 <= max_dests <= 256:
            raise ValueError(f"TrafficGen: max_dests must be in 1..256, got {max_dests}")
        self.cfg, self.max_dests = cfg, max_dests
        super().__init__(signature(specs.traffic_gen(cfg, max_dests)))

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        W, nb = cfg.data_width, cfg.bytes_per_flit
        nw = nb // 4                                   # 32-bit words per flit
        sh = nb.bit_length() - 1                       # log2(bytes per flit)
        o = self.o
        adv = Signal()                                 # the whole pipeline moves this cycle
        m.d.comb += adv.eq(~o.valid | o.ready)

        # ---- stage 0: what to generate next (packet state, one flit per advancing cycle)
        psn = Array(Signal(24, name=f"psn{d}") for d in range(self.max_dests))
        d = Signal(range(max(2, self.max_dests)))      # destination of the next packet
        in_pkt = Signal()
        flit = Signal(range(cfg.max_packet_flits + 1))  # flit index within the packet
        gap_left = Signal(16)
        cur_psn = Signal(24)
        cur_p = Signal(11)                             # payload words of the packet
        cur_ts = Signal(32)
        cur_dlid = Signal(16)
        sent = self.sent_pkts
        m.d.comb += self.done.eq((self.count != 0) & (sent == self.count))

        nxt_psn = psn[d]
        p_len = payload_words(m, cfg, nxt_psn, self.len_min, self.len_mask, "p")

        begin = Signal()
        gen = Signal()                                 # stage 0 hands a flit to stage 1
        m.d.comb += [
            begin.eq(adv & ~in_pkt & (gap_left == 0) & self.en & ~self.done & (self.ndest != 0)),
            gen.eq(adv & (in_pkt | begin)),
        ]
        with m.If(adv & ~in_pkt & (gap_left != 0)):
            m.d.sync += gap_left.eq(gap_left - 1)
        with m.If(begin):
            m.d.sync += [in_pkt.eq(1), flit.eq(0), cur_psn.eq(nxt_psn), cur_p.eq(p_len), cur_ts.eq(self.now),
                         cur_dlid.eq(self.dlid_base + d)]
        # ---- stage 1 registers: the flit's words, CRC fields still zero
        s1 = {k: Signal(w, name=f"s1_{k}") for k, w in (("valid", 1), ("data", W), ("sop", 1), ("eop", 1),
                                                         ("bytes", cfg.bytes_width), ("body", range(nb + 1)),
                                                         ("body_last", 1), ("icrc_at", range(nw + 1)),
                                                         ("vcrc_at", range(nw + 1)))}
        f_idx = Mux(begin, 0, flit)
        p_w = Mux(begin, p_len, cur_p)
        g_psn = Mux(begin, nxt_psn, cur_psn)
        g_ts = Mux(begin, self.now, cur_ts)
        g_dlid = Mux(begin, (self.dlid_base + d)[:16], cur_dlid)
        pktlen = (p_w + HEADER_WORDS + 1)[:11]
        hdr = [
            Cat(g_dlid, Const(2, 2), Const(0, 2), self.sl, Const(0, 4), self.vl, Const(0, 4 - len(self.vl))),
            Cat(self.slid, pktlen, Const(0, 5)),
            Cat(Const(0xFFFF, 16), Const(0, 4), Const(0, 2), Const(0, 1), Const(0, 1), Const(RC_SEND_ONLY, 8)),
            Cat(self.qp, Const(0, 8)),
            Cat(g_psn, Const(0, 8)),
        ]
        words = []
        icrc_at = Signal(range(nw + 1))
        vcrc_at = Signal(range(nw + 1))
        m.d.comb += [icrc_at.eq(nw), vcrc_at.eq(nw)]
        for j in range(nw):
            gw = Signal(range(cfg.max_packet_flits * nw + nw), name=f"g{j}")
            m.d.comb += gw.eq(f_idx * nw + j)
            wv = Signal(32, name=f"w{j}")
            k = Signal(16, name=f"k{j}")              # payload word index
            m.d.comb += k.eq(gw - HEADER_WORDS)
            pattern = Cat(k, g_psn[:8], self.slid[:8])
            with m.If(gw < HEADER_WORDS):
                m.d.comb += wv.eq(Array(hdr)[gw[:3]])
            with m.Elif(gw == HEADER_WORDS):
                m.d.comb += wv.eq(g_ts)
            with m.Elif(gw < HEADER_WORDS + p_w):
                m.d.comb += wv.eq(pattern)
            with m.If(gw == HEADER_WORDS + p_w):
                m.d.comb += icrc_at.eq(j)
            with m.If(gw == HEADER_WORDS + p_w + 1):
                m.d.comb += vcrc_at.eq(j)
            words.append(wv)
        body_words = Signal(signed(16))                # words of LRH..payload in this flit and after
        m.d.comb += body_words.eq(p_w + HEADER_WORDS - f_idx * nw)
        body = Mux(body_words <= 0, 0, Mux(body_words >= nw, nb, body_words[:8] << 2))
        # the flit of the last byte: LRH..payload, the ICRC word, the VCRC's 2 bytes
        is_last = f_idx == ((((p_w + HEADER_WORDS + 2) << 2) - 3) >> sh)
        nbytes = ((p_w + HEADER_WORDS + 2) * 4 - 2) - f_idx * nb
        with m.If(adv):
            m.d.sync += s1["valid"].eq(gen)
        with m.If(gen):
            m.d.sync += [
                s1["data"].eq(Cat(*reversed(words))), s1["sop"].eq(f_idx == 0), s1["eop"].eq(is_last),
                s1["bytes"].eq(Mux(is_last, nbytes, nb)), s1["body"].eq(body),
                s1["body_last"].eq((body_words > 0) & (body_words <= nw)),
                s1["icrc_at"].eq(icrc_at), s1["vcrc_at"].eq(vcrc_at),
                flit.eq(f_idx + 1),
            ]
            with m.If(is_last):
                m.d.sync += [in_pkt.eq(0), gap_left.eq(self.gap), psn[d].eq(g_psn + 1),
                             d.eq(Mux(d + 1 >= self.ndest, 0, d + 1))]
                with m.If(sent != 0xFFFFFFFF):
                    m.d.sync += sent.eq(sent + 1)

        # ---- stage 2: ICRC over the body bytes of the stage-1 flit, placed in its slot
        m.submodules.icrc = ic = ICRCGenerator(W, granule=4)
        m.d.comb += [ic.valid.eq(adv & s1["valid"] & (s1["body"] != 0)), ic.sop.eq(s1["sop"]),
                     ic.eop.eq(s1["body_last"]), ic.data.eq(s1["data"]), ic.bytes.eq(s1["body"])]
        icrc_val = Mux(s1["body_last"], ic.crc, ic.crc_q)
        s2 = {k: Signal(len(v), name=f"s2_{k}") for k, v in s1.items() if k not in ("body", "body_last", "icrc_at")}
        with m.If(adv):
            m.d.sync += s2["valid"].eq(s1["valid"])
            m.d.sync += [s2[k].eq(s1[k]) for k in ("sop", "eop", "bytes", "vcrc_at")]
            # slot j (word j of the flit, from the top) takes the ICRC where it goes
            m.d.sync += s2["data"].eq(Cat(*reversed([
                Mux(s1["icrc_at"] == j, bswap32(icrc_val), s1["data"].word_select(nw - 1 - j, 32))
                for j in range(nw)])))

        # ---- stage 3: VCRC over LRH..ICRC, placed in the upper half of its slot
        m.submodules.vcrc = vc = CRCEngine(CRC16_IB, W, granule=4)
        vbytes = Mux(s2["vcrc_at"] == nw, nb, s2["vcrc_at"] << 2)
        m.d.comb += [vc.valid.eq(adv & s2["valid"] & (vbytes != 0)), vc.first.eq(s2["sop"]),
                     vc.data.eq(s2["data"]), vc.nbytes.eq(vbytes)]
        vcrc_val = Mux(s2["vcrc_at"] == 0, vc.crc_q, vc.crc)
        first, second = crc16_wire(vcrc_val, cfg.crc_msb_first)     # SwitchConfig.crc_msb_first
        vwire = Cat(second, first)
        with m.If(adv):
            m.d.sync += o.valid.eq(s2["valid"])
            m.d.sync += [o.sop.eq(s2["sop"]), o.eop.eq(s2["eop"]), o.bytes.eq(s2["bytes"])]
            # the VCRC goes in the upper half of its slot (the lower half and later slots are 0)
            m.d.sync += o.data.eq(Cat(*reversed([
                Mux(s2["vcrc_at"] == j, Cat(Const(0, 16), vwire), s2["data"].word_select(nw - 1 - j, 32))
                for j in range(nw)])))
        m.d.comb += o.bad.eq(0)
        return m
