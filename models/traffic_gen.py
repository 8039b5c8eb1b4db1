"""Golden model of the hardware traffic generator (docs/endpoint.md), cycle by cycle.

Written from the packet definition, not from the RTL's flit assembly: each packet is built
with models.packet (LRH, BTH RC SEND Only, payload = generation time then the pattern
words, ICRC, VCRC) and cut into flits with models.packet.to_flits. The generator's output
is the sequence "flits of packet 0, `gap` empty cycles, flits of packet 1, ..." seen through
three pipeline stages that all stall while the output holds a flit that is not taken.
"""
from __future__ import annotations

from collections import deque

from contracts.config import SwitchConfig
from contracts.endpoint import GEN_CONFIG
from contracts.streams import FLIT
from models.packet import BTH, LNH, LRH, build_data_packet, to_flits

__all__ = ["TrafficGenModel", "gen_packet", "payload_words", "pattern_word",
           "GEN_CONFIG", "PIPELINE_STAGES"]

PIPELINE_STAGES = 3
RC_SEND_ONLY = 0x04          # IBA §9.2
_O = ["valid", *FLIT]
_SAT = 0xFFFFFFFF


def payload_words(cfg: SwitchConfig, psn: int, len_min: int, len_mask: int) -> int:
    """Payload length in 32-bit words of the packet with sequence number `psn`: a function
    of the PSN so that the receiver can check it; at least 1 (the time word), at most MTU/4."""
    p = len_min + (((psn ^ (psn >> 4)) & 0x7FF) & len_mask)
    return max(1, min(p, cfg.mtu // 4))


def pattern_word(slid: int, psn: int, k: int) -> int:
    """Payload word k >= 1: source LID, PSN and word index, so a misrouted, reordered or
    shifted payload shows."""
    return ((slid & 0xFF) << 24) | ((psn & 0xFF) << 16) | (k & 0xFFFF)


def gen_packet(cfg: SwitchConfig, *, slid: int, dlid: int, sl: int, vl: int, qp: int, psn: int,
               ts: int, len_min: int, len_mask: int) -> bytes:
    """Wire bytes of one generated packet."""
    p = payload_words(cfg, psn, len_min, len_mask)
    payload = (ts & _SAT).to_bytes(4, "big") + b"".join(
        pattern_word(slid, psn, k).to_bytes(4, "big") for k in range(1, p))
    lrh = LRH(vl=vl, sl=sl, lnh=LNH.IBA_LOCAL, dlid=dlid, slid=slid)
    bth = BTH(opcode=RC_SEND_ONLY, pkey=0xFFFF, destqp=qp, psn=psn & 0xFFFFFF)
    return build_data_packet(lrh, payload, bth, msb_first=cfg.crc_msb_first)


class TrafficGenModel:
    def __init__(self, cfg: SwitchConfig, max_dests: int = 4, prefix: str = ""):
        self.cfg, self.max_dests, self.p = cfg, max_dests, prefix
        self.stages: deque = deque([None] * PIPELINE_STAGES)   # [stage 1, stage 2, output]
        self.psn = [0] * max_dests
        self.dest = 0
        self.flits: deque = deque()          # rest of the packet being generated
        self.gap_left = 0
        self.sent = 0
        self.packets: list[bytes] = []       # every packet begun, in order (for scoreboards)

    def _cfg(self, inp, k):
        return inp[f"{self.p}{k}"]

    def peek(self, inp: dict) -> dict:
        """This cycle's outputs (registered, but `done` compares with the `count` input)."""
        p = self.p
        head = self.stages[-1]
        out = {f"{p}o__{k}": 0 for k in _O}
        if head is not None:
            out.update({f"{p}o__valid": 1, f"{p}o__data": head.data, f"{p}o__sop": int(head.sop),
                        f"{p}o__eop": int(head.eop), f"{p}o__bytes": head.nbytes})
        out[f"{p}sent_pkts"] = self.sent
        out[f"{p}done"] = int(inp[f"{p}count"] != 0 and self.sent == inp[f"{p}count"])
        return out

    def step(self, inp: dict) -> dict:
        p, c = self.p, lambda k: self._cfg(inp, k)
        out = self.peek(inp)
        head = self.stages[-1]
        done = bool(out[f"{p}done"])
        if head is None or inp[f"{p}o__ready"]:
            elem = None
            if not self.flits:
                if self.gap_left:
                    self.gap_left -= 1
                elif c("en") and not done and c("ndest"):
                    pkt = gen_packet(self.cfg, slid=c("slid"), dlid=(c("dlid_base") + self.dest) & 0xFFFF,
                                     sl=c("sl"), vl=c("vl"), qp=c("qp"), psn=self.psn[self.dest], ts=c("now"),
                                     len_min=c("len_min"), len_mask=c("len_mask"))
                    self.packets.append(pkt)
                    self.flits = deque(to_flits(pkt, self.cfg.data_width))
            if self.flits:
                elem = self.flits.popleft()
                if elem.eop:
                    self.gap_left = c("gap")
                    self.psn[self.dest] = (self.psn[self.dest] + 1) & 0xFFFFFF
                    self.dest = 0 if self.dest + 1 >= c("ndest") else self.dest + 1
                    self.sent = min(self.sent + 1, _SAT)
            self.stages.pop()
            self.stages.appendleft(elem)
        return out
