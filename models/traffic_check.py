"""Golden model of the hardware traffic checker (docs/endpoint.md), cycle by cycle.

Written from the packet definition: the flits of each packet are gathered, and at its tail
the packet is parsed with models.packet (ICRC, headers) and compared with what the
generator's definition (models.traffic_gen) says a packet with that SLID and PSN must hold.
Counters show a packet's verdict from the third cycle after its eop flit was on the input.
"""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.counters import CHECK_COUNTERS
from contracts.streams import FLIT
from models.packet import LNH, Flit, PacketError, from_flits, parse_data_packet
from models.traffic_gen import RC_SEND_ONLY, pattern_word, payload_words

__all__ = ["TrafficCheckModel", "VERDICT_DELAY"]

VERDICT_DELAY = 3
_I = ["valid", *FLIT]
_SAT = 0xFFFFFFFF


class TrafficCheckModel:
    def __init__(self, cfg: SwitchConfig, max_srcs: int = 4, prefix: str = "", check_icrc: bool = True):
        self.cfg, self.max_srcs, self.p, self.check_icrc = cfg, max_srcs, prefix, check_icrc
        self.c = {n: 0 for n in CHECK_COUNTERS}
        self.c["lat_min"] = _SAT
        self.expected = [0] * max_srcs
        self.flits: list[Flit] = []
        self.pending: list[tuple[int, dict]] = []   # (cycle due, the packet's facts)
        self.cycle = 0
        self.log: list[dict] = []                   # every verdict, for tests and reports

    @staticmethod
    def _judge(c: dict, expected: list, max_srcs: int, facts: dict) -> bool:
        """Apply one packet's verdict to counters `c` and the expected PSNs; True if good."""
        def inc(name, amount=1):
            c[name] = min(c[name] + amount, _SAT)
        inc("rcv_pkts")
        if facts["bad"]:
            inc("rcv_bad")
            return False
        src = (facts["slid"] - facts["src_base"]) & 0xFFFF
        known = src < max_srcs
        dup = False
        if known:
            delta = (facts["psn"] - expected[src]) & 0xFFFFFF
            dup = delta >= 1 << 23
            if delta and not dup:
                inc("seq_gap")
                inc("seq_lost", delta)
            if dup:
                inc("seq_dup")
            else:
                expected[src] = (facts["psn"] + 1) & 0xFFFFFF
        else:
            inc("unknown_src")
        for name in ("icrc_err", "format_err", "pattern_err"):
            if facts[name]:
                inc(name)
        good = known and not dup and not (facts["icrc_err"] or facts["format_err"] or facts["pattern_err"])
        if good:
            inc("rcv_good")
            lat = facts["lat"]
            c["lat_sum"] = (c["lat_sum"] + lat) & ((1 << 48) - 1)
            c["lat_min"] = min(c["lat_min"], lat)
            c["lat_max"] = max(c["lat_max"], lat)
        else:
            inc("rcv_errors")
        return good

    def _due(self) -> bool:
        return bool(self.pending) and self.pending[0][0] <= self.cycle

    def peek(self, inp: dict) -> dict:
        """This cycle's outputs without advancing (they depend on the state only)."""
        c = dict(self.c)
        if self._due():
            exp = list(self.expected)
            for due, facts in self.pending:
                if due <= self.cycle:
                    self._judge(c, exp, self.max_srcs, facts)
        return {f"{self.p}counters__{n}": v for n, v in c.items()}

    def _facts(self, inp: dict, pkt: bytes, bad: bool) -> dict:
        p = self.p
        f = {"bad": bad, "slid": 0, "psn": 0, "lat": 0, "icrc_err": False, "format_err": False,
             "pattern_err": False, "src_base": inp[f"{p}src_base"]}
        if bad:
            return f
        try:
            d = parse_data_packet(pkt, self.cfg.crc_msb_first)
        except PacketError:
            f.update(icrc_err=self.check_icrc, format_err=True)
            return f
        f["slid"], f["psn"] = d.lrh.slid, d.bth.psn if d.bth else 0
        want_p = payload_words(self.cfg, f["psn"], inp[f"{p}len_min"], inp[f"{p}len_mask"])
        f["icrc_err"] = self.check_icrc and not d.icrc_ok
        f["format_err"] = (d.lrh.lnh != LNH.IBA_LOCAL or d.bth is None or d.bth.opcode != RC_SEND_ONLY
                           or d.lrh.pktlen != want_p + 6)
        # payload words as the wire carries them, PadCnt or not: between the BTH and the ICRC
        raw = pkt[20:4 * d.lrh.pktlen - 4]
        words = [int.from_bytes(raw[k:k + 4], "big") for k in range(0, len(raw) - 3, 4)]
        f["pattern_err"] = any(w != pattern_word(f["slid"], f["psn"], k) for k, w in enumerate(words) if k >= 1)
        ts = words[0] if words else 0
        f["lat"] = (inp[f"{p}now"] - ts) & _SAT
        return f

    def step(self, inp: dict) -> dict:
        p = self.p
        while self._due():
            facts = self.pending.pop(0)[1]
            facts["good"] = self._judge(self.c, self.expected, self.max_srcs, facts)
            self.log.append(facts)
        out = {f"{p}counters__{n}": v for n, v in self.c.items()}
        if inp[f"{p}i__valid"]:
            fl = Flit(inp[f"{p}i__data"], bool(inp[f"{p}i__sop"]), bool(inp[f"{p}i__eop"]),
                      inp[f"{p}i__bytes"], bad=bool(inp[f"{p}i__bad"]))
            if fl.sop:
                self.flits = []
            self.flits.append(fl)
            if fl.eop:
                pkt = from_flits(self.flits, self.cfg.data_width)
                self.pending.append((self.cycle + VERDICT_DELAY, self._facts(inp, pkt, fl.bad)))
                self.flits = []
        self.cycle += 1
        return out
