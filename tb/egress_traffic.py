"""Stimulus and checks for the egress rewrite, shared by the Amaranth-simulator and cocotb
tests: packets of every length mod W/8 (the VCRC lands in every position of a flit and
straddles two), some marked bad, some whose PktLen disagrees with their length (bad too);
random input gaps and output backpressure; about a third of the packets offered with `fecn`
(congestion marking), with and without a GRH, and raw packets that have no BTH to mark;
every output packet checked independently of the model (output VL, BTH.FECN set where it
was asked for and the packet has a BTH, valid VCRC, ICRC and all other bytes intact, bad
marks kept)."""
from __future__ import annotations

from contracts.switch import egress
from models.packet import LNH, LRH, Flit, from_flits, parse_data_packet, to_flits
from verif.ib.stimulus import good_packet

__all__ = ["EgressTraffic"]


class EgressTraffic:
    def __init__(self, cfg, rng, npk: int, *, sizes=(0, 1, 3), p_bad=0.1, pktlen_faults=True):
        self.cfg, self.rng = cfg, rng
        nb = self.nb = cfg.bytes_per_flit
        self.pkts = []
        for k in range(npk):
            lnh = LNH.IBA_GLOBAL if k % 5 == 1 else LNH.RAW if k % 11 == 7 else LNH.IBA_LOCAL
            p = good_packet(cfg, rng, lnh=lnh, payload_len=(k * 4) % (2 * nb) + nb * rng.choice(sizes))
            bad = rng.random() < p_bad
            if pktlen_faults and k % 9 == 4:    # PktLen disagrees with the length: a bad packet (EBP)
                lrh = LRH.unpack(p)
                lrh.pktlen = max(1, lrh.pktlen + rng.choice([-3, -1, 1, 2, 40]))
                p, bad = lrh.pack() + p[8:], True
            self.pkts.append((p, rng.randrange(16), bad))
        self.marks = [rng.random() < 0.35 for _ in self.pkts]
        self.queue = [(f, vl, mk) for (p, vl, bad), mk in zip(self.pkts, self.marks, strict=True)
                      for f in to_flits(p, cfg.data_width, bad=bad)]
        self.ins, self.outs, self.qual = egress(cfg).ports()
        self.got, self._cur, self._q = [], [], 0

    def stim(self):
        rng = self.rng
        while self._q < len(self.queue) or len(self.got) < len(self.pkts):
            inp = {k: 0 for k in self.ins}
            if self._q < len(self.queue) and rng.random() < 0.8:
                f, vl, mk = self.queue[self._q]
                inp.update({"i__valid": 1, "i__data": f.data, "i__sop": int(f.sop), "i__eop": int(f.eop),
                            "i__bytes": f.nbytes, "i__bad": int(f.bad), "i__vl": vl,
                            # fecn counts with the sop flit only: noise on the others
                            "fecn": int(mk) if f.sop else rng.getrandbits(1)})
            inp["o__ready"] = int(rng.random() < 0.8)
            yield inp

    def observe(self, i, o):
        if i["i__valid"] and o["i__ready"]:
            self._q += 1
        if o["o__valid"] and i["o__ready"]:
            eop = bool(o["o__eop"])
            self._cur.append((Flit(o["o__data"], bool(o["o__sop"]), eop, o["o__bytes"] if eop else self.nb),
                              o["o__bad"], o["o__vl"]))
            if eop:
                self.got.append(self._cur)
                self._cur = []

    def check(self):
        marked = 0
        for (p, vl, bad), mk, fl in zip(self.pkts, self.marks, self.got, strict=True):
            b = from_flits([f for f, _, _ in fl], self.cfg.data_width)
            assert len(b) == len(p) and fl[-1][1] == bad
            lnh = LRH.unpack(p).lnh
            if mk and lnh in (LNH.IBA_LOCAL, LNH.IBA_GLOBAL):  # BTH byte 4 bit 7 (IBA §9.2)
                at = 8 + (40 if lnh == LNH.IBA_GLOBAL else 0) + 4
                v = 4 * LRH.unpack(p).pktlen            # (a wrong PktLen may put the VCRC there)
                assert b[at] & 0x80 or at in (v, v + 1), f"packet {p.hex()}: FECN asked for, not set"
                p = p[:at] + bytes([p[at] | 0x80]) + p[at + 1:]
                marked += 1
            if 4 * LRH.unpack(p).pktlen + 2 != len(p):  # only the two bytes where PktLen puts the VCRC change
                v = 4 * LRH.unpack(p).pktlen
                assert [k for k in range(1, len(p)) if b[k] != p[k] and k not in (v, v + 1)] == []
                continue
            d = parse_data_packet(b, self.cfg.crc_msb_first)
            assert d.vcrc_ok and d.lrh.vl == vl and (d.icrc_ok or lnh not in (LNH.IBA_LOCAL, LNH.IBA_GLOBAL))
            assert b[1:-2] == p[1:-2] and (b[0] & 0x0F) == (p[0] & 0x0F)
            assert all(x[2] == vl for x in fl)
            assert LRH.unpack(b).pktlen == LRH.unpack(p).pktlen
        assert marked, "no packet was marked: the stimulus does not exercise FECN"
