"""Stimulus for the endpoint tests: one endpoint whose link transmit side is wired back to
its own receive side through the testbench (one cycle of wire), with PHY pacing on
transmit and an optional fault injector on the wire that drops whole data packets or flips
one bit of one flit of a data packet. The injector keeps its own books, and `check` holds
the endpoint's counters to them (independent of the models):

  * every packet the wire left alone arrives good:    rcv_good = sent - dropped - flipped
  * a flipped packet (a single-bit error: the VCRC always sees it, IBA §7.8.2) is refused
    by the link receiver or arrives marked bad, never as good or as a content error;
  * the checker counts every missing packet once:      seq_lost = dropped + flipped
"""
from __future__ import annotations

import random

from contracts.config import SwitchConfig
from contracts.streams import LINK_FLIT

__all__ = ["SelfLoop", "gen_inputs"]

_TX = ("valid", *LINK_FLIT)


def gen_inputs(cfg: SwitchConfig, *, slid=7, count=0, gap=0, len_mask=15, vl=None, prefix="") -> dict:
    p = prefix
    return {f"{p}auto_active": 1, f"{p}mgmt__req": 0, f"{p}mgmt__state": 0, f"{p}gen__en": 1,
            f"{p}gen__slid": slid, f"{p}gen__dlid_base": slid, f"{p}gen__ndest": 1, f"{p}gen__sl": 0,
            f"{p}gen__vl": cfg.data_vls - 1 if vl is None else vl, f"{p}gen__qp": 3, f"{p}gen__len_min": 1,
            f"{p}gen__len_mask": len_mask, f"{p}gen__count": count, f"{p}gen__gap": gap,
            f"{p}chk__src_base": slid, f"{p}chk__len_min": 1, f"{p}chk__len_mask": len_mask}


class SelfLoop:
    def __init__(self, cfg: SwitchConfig, rng: random.Random, *, cycles: int, count: int, gap: int = 0,
                 ready_p: float = 0.85, drop_p: float = 0.0, flip_p: float = 0.0, clean_tail: int = 3):
        self.cfg, self.rng, self.cycles, self.count = cfg, rng, cycles, count
        self.gap, self.ready_p, self.drop_p, self.flip_p, self.clean_tail = gap, ready_p, drop_p, flip_p, clean_tail
        self.base = gen_inputs(cfg, count=count, gap=gap)
        self.wire: dict | None = None      # the flit on the wire (sent last cycle)
        self.pkt_index = 0                 # data packets seen on the wire
        self.mode = None                   # None / "drop" / ("flip", flit index, bit) for the open packet
        self.flit_in_pkt = 0
        self.dropped = self.flipped = 0
        self.last: dict = {}

    def stim(self):
        for t in range(self.cycles):
            d = dict(self.base)
            d["now"] = t
            d["tx__ready"] = int(self.rng.random() < self.ready_p)
            w = self.wire or {}
            for k in _TX:
                d[f"rx__{k}"] = w.get(k, 0)
            d["rx__up"] = 1
            yield d

    def _fault(self, f: dict) -> dict | None:
        """The flit as it arrives (None: dropped on the wire)."""
        if f["link"]:
            return f
        if f["sop"]:
            self.mode, self.flit_in_pkt = None, 0
            faults_ok = self.pkt_index < self.count - self.clean_tail
            r = self.rng.random()
            if faults_ok and r < self.drop_p:
                self.mode = "drop"
                self.dropped += 1
            elif faults_ok and r < self.drop_p + self.flip_p:
                # flip one bit of one of the packet's flits: the first flit (where the LRH is)
                # half of the time, else a later one if the packet reaches it
                self.mode = ("flip", 0 if self.rng.random() < 0.5 else self.rng.randrange(1, 4),
                             self.rng.randrange(self.cfg.data_width))
            self.pkt_index += 1
        mode, k = self.mode, self.flit_in_pkt
        self.flit_in_pkt += 1
        if mode == "drop":
            return None
        if isinstance(mode, tuple) and mode[1] == k:
            # a bit of the flit's valid bytes (the lanes past `bytes` of an eop flit carry nothing)
            W = self.cfg.data_width
            valid_bits = 8 * (f["bytes"] if f["eop"] else W // 8)
            bit = W - 1 - mode[2] % valid_bits
            self.flipped += 1
            self.mode = None
            return dict(f, data=f["data"] ^ (1 << bit))
        if isinstance(mode, tuple) and f["eop"]:
            self.mode = None               # the packet ended before the chosen flit
        return f

    def observe(self, inp: dict, act: dict):
        self.last = act
        if act["tx__valid"] and inp["tx__ready"]:
            self.wire = self._fault({k: act[f"tx__{k}"] for k in _TX})
        else:
            self.wire = None

    def check(self):
        a = self.last
        c = lambda n: a[f"counters__{n}"]  # noqa: E731
        sent = a["sent_pkts"]
        assert a["gen_done"] == 1, f"the generator sent {sent} of {self.count} packets"
        assert self.pkt_index == sent, f"{self.pkt_index} data packets on the wire, generator says {sent}"
        refused = sent - self.dropped - c("rcv_pkts")
        assert c("rcv_good") == sent - self.dropped - self.flipped, \
            f"rcv_good {c('rcv_good')}: sent {sent}, dropped on the wire {self.dropped}, flipped {self.flipped}"
        assert c("rcv_errors") == 0, f"{c('rcv_errors')} packets arrived with a good VCRC but wrong content"
        assert c("rcv_bad") + refused == self.flipped, \
            f"flipped {self.flipped}: {c('rcv_bad')} arrived marked bad, {refused} refused by the receiver"
        assert c("seq_lost") == self.dropped + self.flipped, \
            f"seq_lost {c('seq_lost')}, {self.dropped} dropped + {self.flipped} flipped"
        assert c("rcv_pkts") == c("rcv_good") + c("rcv_bad") + c("rcv_errors")
        if c("rcv_good"):
            assert c("lat_min") <= c("lat_max") and c("lat_sum") >= c("lat_min") * c("rcv_good")
